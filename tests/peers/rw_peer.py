#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A remote write receiver that misbehaves on purpose, for the fault tests. Every POST is
recorded (path, status, the request headers, body length) before it is answered.

  POST /ok        204 when the Authorization header is "Bearer " + --token (or no --token); 401
                  otherwise. With --upstream URL (a real receiver) an accepted request is passed
                  on to it, body and remote write headers unchanged, and answered with its answer
                  (an authenticating proxy in front of it)
  POST /bad       400 with the body "out of order sample" (as Prometheus answers one)
  POST /hang      never answers (the connection stays open until the client gives up)
  POST /busy/N    503 for the first N requests of this path, then 204
  GET  /log       every request so far: [{"path", "status", "headers", "length"}]

Usage: rw_peer.py --port P [--token T] [--upstream URL]
"""
import argparse
import json
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
LOG = []
COUNTS = {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, status, length):
        with LOCK:
            LOG.append({"path": self.path, "status": status, "headers": dict(self.headers),
                        "length": length})

    def answer(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path != "/log":
            return self.answer(404)
        with LOCK:
            body = json.dumps(LOG).encode()
        self.answer(200, body)

    def forward(self, data):
        keep = ("Content-Encoding", "Content-Type", "X-Prometheus-Remote-Write-Version")
        req = urllib.request.Request(ARGS.upstream, data=data, method="POST",
                                     headers={k: self.headers[k] for k in keep if k in self.headers})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except OSError as e:
            return 502, str(e).encode()

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        data = self.rfile.read(length)
        with LOCK:
            COUNTS[self.path] = COUNTS.get(self.path, 0) + 1
            n = COUNTS[self.path]
        if self.path == "/hang":
            self.record(0, length)
            time.sleep(3600)
            return
        if self.path == "/bad":
            status, body = 400, b"out of order sample"
        elif self.path.startswith("/busy/"):
            status, body = (503, b"busy") if n <= int(self.path[6:]) else (204, b"")
        elif self.path == "/ok":
            good = not ARGS.token or self.headers.get("Authorization") == "Bearer " + ARGS.token
            status, body = (204, b"") if good else (401, b"bad token")
            if good and ARGS.upstream:
                status, body = self.forward(data)
        else:
            status, body = 404, b"no such path"
        self.record(status, length)
        self.answer(status, body)


ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--token", default="")
ap.add_argument("--upstream", default="")
ARGS = ap.parse_args()
srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
srv.daemon_threads = True
srv.serve_forever()
