#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A carbon-intensity API for the fetch tests: real GB values (a CSV of the UK Carbon Intensity
API, given with --data) re-dated so that its first half-hour starts at the current half-hour.

  GET /uk                 the UK API's /intensity reply shape: {"data": [{from, to, intensity:
                          {forecast, actual, index}}]}; actual only for past periods
  GET /fail/N/uk          HTTP 500 for the first N requests of this path, then /uk
  GET /slow/SECONDS/uk    answers /uk after sleeping SECONDS
  GET /em                 Electricity Maps' /carbon-intensity/forecast shape; 401 unless the
                          auth-token header equals --token
  GET /moved/em           302 to /elsewhere (with a token, the daemon must not follow it)
  GET /moved/uk           302 to /uk (without a token, followed)
  GET /log                every reply so far: [{"path", "t", "status"}] (t: unix seconds)
  GET /counts             requests per path as they arrive (a slow one counts at once)

Usage: carbon_server.py --port P --data FILE.csv [--token T]
"""
import argparse
import csv
import datetime as dt
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
LOG = []
COUNTS = {}


def load(path):
    with open(path, newline="") as f:
        return [float(r["intensity.forecast"]) for r in csv.DictReader(f)]


def slot0():
    now = int(time.time())
    return now - now % 1800


def iso(t):
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")


def uk_reply(values):
    s0 = slot0()
    data = []
    for i, v in enumerate(values):
        t = s0 + (i - 2) * 1800  # two past periods with an actual
        data.append({"from": iso(t), "to": iso(t + 1800),
                     "intensity": {"forecast": v, "actual": v if t + 1800 <= time.time() else None,
                                   "index": "moderate"}})
    return {"data": data}


def em_reply(values):
    s0 = slot0()
    return {"zone": "DE", "forecast": [
        {"carbonIntensity": v + 100, "datetime": iso(s0 + i * 3600)}
        for i, v in enumerate(values[:24])], "updatedAt": iso(s0)}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body):
        data = json.dumps(body).encode()
        with LOCK:
            LOG.append({"path": self.path, "t": time.time(), "status": status})
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout): what the slow path is for

    def do_GET(self):
        srv = self.server
        parts = self.path.strip("/").split("/")
        with LOCK:
            COUNTS[self.path] = COUNTS.get(self.path, 0) + 1
            n = COUNTS[self.path]
        if parts in (["log"], ["counts"]):
            with LOCK:
                body = list(LOG) if parts == ["log"] else dict(COUNTS)
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if parts[0] == "moved" and len(parts) == 2:
            target = "/elsewhere" if parts[1] == "em" else "/" + parts[1]
            with LOCK:
                LOG.append({"path": self.path, "t": time.time(), "status": 302})
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if parts[0] == "fail" and len(parts) == 3 and n <= int(parts[1]):
            return self.reply(500, {"error": "internal"})
        if parts[0] == "slow" and len(parts) == 3:
            time.sleep(float(parts[1]))
        if parts[-1] == "uk":
            return self.reply(200, uk_reply(srv.values))
        if parts == ["em"]:
            if self.headers.get("auth-token") != srv.token:
                return self.reply(401, {"error": "bad token"})
            return self.reply(200, em_reply(srv.values))
        self.reply(404, {"error": "no such path"})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--token", default="")
    a = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    srv.values = load(a.data)
    srv.token = a.token
    srv.serve_forever()


if __name__ == "__main__":
    main()
