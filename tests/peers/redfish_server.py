#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A static Redfish service for tests: serves a DMTF mockup tree, where /redfish/v1/X is the
file X/index.json under --root, over HTTP or HTTPS, with switchable faults.

  redfish_server.py --root DIR --port-file F [--control F] [--log F]
                    [--basic USER:PASS | --session USER:PASS] [--cert F --key F]

--control names a file read at every request; its first line picks the behaviour:
  ok                 serve the mockup (also when the file is absent or empty)
  500 [PREFIX]       answer every request (under PREFIX) with HTTP 500
  garbage [PREFIX]   answer 200 with a body that is not JSON (under PREFIX)
  hang               accept, read the request, never answer (until the client gives up)
  slow SECONDS       wait that long, then serve
  big BYTES          answer 200 with a JSON body of that many bytes
  relayout OLD NEW   the service was re-laid out: every path starting OLD is now NEW (bodies are
                     rewritten to match) and OLD paths answer 404
  clock SECONDS      serve the mockup with a Date header that many seconds off this host's clock
  offset WATTS       with --follow: the wall's offset is WATTS instead of --follow's OFFSET
--log gets one line per request: "METHOD PATH STATUS".
--follow LIMITS:GPUS:BASE:OFFSET:SLOPE makes every "PowerConsumedWatts" the service quotes
  follow the fake NVML's GPUs, as a wall follows its chips: OFFSET + SLOPE * sum over the GPUs
  of min(BASE, limit), each limit the last "GPU WATTS" line for it in the fake's LIMITS file
  (its driver state; 700 W without one), BASE the GPUs' uncapped power.
--basic requires HTTP basic auth; --session requires an X-Auth-Token from
POST /redfish/v1/SessionService/Sessions (UserName/Password). The service root needs neither,
as the Redfish specification says.
"""
import argparse
import base64
import json
import os
import re
import secrets
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
TOKENS = set()
LOCK = threading.Lock()


def control():
    try:
        with open(ARGS.control) as f:
            return f.readline().split()
    except (OSError, TypeError):
        return []


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # Headers and body go out in two writes: without this, Nagle and the client's delayed
        # ACK add 40 ms to every response.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):
        pass

    def date_time_string(self, timestamp=None):
        """The Date header of every answer: this host's time, or off by "clock SECONDS"."""
        c = control()
        off = float(c[1]) if len(c) > 1 and c[0] == "clock" else 0.0
        return super().date_time_string(time.time() + off if timestamp is None else timestamp)

    def note(self, status):
        if ARGS.log:
            with LOCK, open(ARGS.log, "a") as f:
                f.write(f"{self.command} {self.path} {status}\n")

    def send(self, status, body, ctype="application/json", headers=None):
        data = body if isinstance(body, bytes) else body.encode()
        self.note(status)  # before the answer: a client that got it finds the line written
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def authorized(self, path):
        if path.rstrip("/") == "/redfish/v1":
            return True
        if ARGS.basic:
            want = "Basic " + base64.b64encode(ARGS.basic.encode()).decode()
            return self.headers.get("Authorization") == want
        if ARGS.session:
            return self.headers.get("X-Auth-Token") in TOKENS
        return True

    def fault(self):
        c = control()
        if not c or c[0] == "ok":
            return c
        if c[0] in ("500", "garbage") and len(c) > 1 and not self.path.startswith(c[1]):
            return []  # the fault is for paths under c[1] only
        if c[0] == "500":
            self.send(500, '{"error": "internal"}')
            return None
        if c[0] == "garbage":
            self.send(200, "<html>this is not JSON {{{", "text/html")
            return None
        if c[0] == "hang":
            self.note("hang")
            time.sleep(3600)
            return None
        if c[0] == "slow":
            time.sleep(float(c[1]))
            return []
        if c[0] == "big":
            n = int(c[1])
            self.send(200, '{"pad": "' + "x" * max(0, n - 12) + '"}')
            return None
        return c

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        if self.fault() is None:
            return
        if self.path.rstrip("/") == "/redfish/v1/SessionService/Sessions" and ARGS.session:
            try:
                req = json.loads(body)
            except ValueError:
                return self.send(400, '{"error": "bad json"}')
            user, _, pw = ARGS.session.partition(":")
            if req.get("UserName") != user or req.get("Password") != pw:
                return self.send(401, '{"error": "bad credentials"}')
            tok = secrets.token_hex(16)
            TOKENS.add(tok)
            return self.send(201, '{"Id": "1"}', headers={
                "X-Auth-Token": tok, "Location": "/redfish/v1/SessionService/Sessions/" + tok})
        self.send(405, '{"error": "method not allowed"}')

    def do_DELETE(self):
        prefix = "/redfish/v1/SessionService/Sessions/"
        if self.path.startswith(prefix) and self.path[len(prefix):] in TOKENS:
            TOKENS.discard(self.path[len(prefix):])
            return self.send(204, b"")
        self.send(404, '{"error": "not found"}')

    def do_GET(self):
        c = self.fault()
        if c is None:
            return
        path = self.path.split("?")[0]
        if not self.authorized(path):
            return self.send(401, '{"error": "unauthorized"}',
                             headers={"WWW-Authenticate": 'Basic realm="redfish"'})
        old = new = None
        if c and c[0] == "relayout":
            old, new = c[1], c[2]
            if path.startswith(old) and not path.startswith(new):
                return self.send(404, '{"error": "not found"}')
            if path.startswith(new):
                path = old + path[len(new):]
        rel = path[len("/redfish/v1"):].strip("/") if path.startswith("/redfish/v1") else None
        if rel is None or ".." in rel.split("/"):
            return self.send(404, '{"error": "not found"}')
        f = os.path.join(ARGS.root, rel, "index.json")
        try:
            with open(f, "rb") as fh:
                data = fh.read()
        except OSError:
            return self.send(404, '{"error": "not found"}')
        if old:
            data = data.replace(old.encode(), new.encode())
        if ARGS.follow:
            data = follow(data)
        self.send(200, data)


def follow(data):
    """The body with every PowerConsumedWatts set to what the fake's GPUs draw at the wall."""
    path, gpus, base, offset, slope = ARGS.follow.split(":")
    limits = {}
    try:
        with open(path) as fh:
            for line in fh:
                f = line.split()
                if len(f) == 2:
                    limits[int(f[0])] = float(f[1])
    except OSError:
        pass
    chips = sum(min(float(base), limits.get(i, 700.0)) for i in range(int(gpus)))
    c = control()
    if len(c) > 1 and c[0] == "offset":
        offset = c[1]
    wall = float(offset) + float(slope) * chips
    return re.sub(rb'"PowerConsumedWatts"\s*:\s*[-0-9.eE+]+',
                  b'"PowerConsumedWatts": %.3f' % wall, data)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that gives up (timeout, oversized body) resets the connection: not news.
        if not isinstance(sys.exc_info()[1], (ConnectionError, ssl.SSLError)):
            super().handle_error(request, client_address)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--control")
    p.add_argument("--log")
    p.add_argument("--basic")
    p.add_argument("--session")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--follow")
    ARGS = p.parse_args()
    srv = Server(("127.0.0.1", 0), Handler)
    if ARGS.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ARGS.cert, ARGS.key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{srv.server_address[1]}\n")
    os.rename(tmp, ARGS.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
