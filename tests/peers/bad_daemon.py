#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A daemon that misbehaves, for the tests of `wattage exec`: the command must run whatever the
daemon does.

  bad_daemon.py --port P hang     accepts connections and never answers (a hung daemon, or a
                                  TLS handshake that never completes)
  bad_daemon.py --port P 500      answers every request with HTTP 500 and a JSON error

It prints "ready" on stdout once it listens, and serves until killed.
"""
import argparse
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def hang(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    print("ready", flush=True)
    held = []
    while True:
        c, _ = s.accept()
        held.append(c)  # kept open, never read nor written


def http500(port):
    class H(BaseHTTPRequestHandler):
        def answer(self):
            n = int(self.headers.get("Content-Length") or 0)
            if n:
                self.rfile.read(n)
            body = b'{"error": "internal error"}'
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = answer

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", port), H)
    srv.daemon_threads = True
    print("ready", flush=True)
    srv.serve_forever()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("mode", choices=["hang", "500"])
    a = ap.parse_args()
    if a.mode == "hang":
        hang(a.port)
    else:
        http500(a.port)


if __name__ == "__main__":
    sys.exit(main())
