# SPDX-License-Identifier: MIT
"""Marks for the wattage daemon's jobs API, from training or serving code. Standard library only.

Run the program under ``wattage exec -- python train.py`` (or start a job yourself and set
``WATTAGE_JOB``); then, in the code::

    import wattage_client as wc

    for epoch in range(3):
        train_one_epoch()
        wc.mark("epoch", index=epoch, tokens=tokens_seen, samples=n, accuracy=acc)

    with wc.phase("eval", index=epoch) as p:      # a phase that begins and ends here
        p.counters["accuracy"] = evaluate()

A mark closes the phase that began at the previous mark of the same kind (or the job's start);
its energy is computed by the daemon from its stored series over exactly that window.

Environment: ``WATTAGE_JOB`` (the job id or name; without it every call does nothing),
``WATTAGE_URL`` (default ``http://127.0.0.1:9747``), ``WATTAGE_TOKEN`` (bearer token, when the
daemon requires one). ``wattage exec`` sets all three.

Nothing here ever raises into the caller: when the daemon cannot be reached or refuses a mark,
the call returns False and one warning is printed on stderr (once per process); after a failure
to connect, marks are skipped for 30 s so a down daemon costs the training loop nothing.

The same from any language, with curl::

    curl -X POST -H 'Content-Type: application/json' -H "Authorization: Bearer $WATTAGE_TOKEN" \\
         -d '{"kind": "epoch", "index": 1, "tokens": 1048576}' \\
         "$WATTAGE_URL/api/v1/jobs/$WATTAGE_JOB/marks"
"""

import json
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["mark", "phase", "enabled"]

DEFAULT_URL = "http://127.0.0.1:9747"
_TIMEOUT_S = 2.0
_BACKOFF_S = 30.0

_lock = threading.Lock()
_warned = False
_down_until = 0.0


def _warn_once(msg):
    global _warned
    try:
        with _lock:
            if _warned:
                return
            _warned = True
        sys.stderr.write("wattage_client: %s (further problems are not reported)\n" % msg)
        sys.stderr.flush()
    except Exception:  # a closed stderr must not stop training either
        pass


def enabled():
    """True when a job is set (WATTAGE_JOB) and marks are sent."""
    return bool(os.environ.get("WATTAGE_JOB"))


def mark(kind="epoch", index=None, **counters):
    """Adds a mark of `kind` (epoch, step, eval, any lower_snake_case word) to the current job.

    index: optional integer >= 0. counters: numbers >= 0 such as tokens, samples, requests,
    accuracy, latency_p50_s, latency_p99_s (any lower_snake_case name); begin=True only opens
    the next phase of this kind. Returns True when the daemon stored it, else False.
    """
    global _down_until
    try:
        job = os.environ.get("WATTAGE_JOB")
        if not job:
            return False
        if time.monotonic() < _down_until:
            return False
        url = os.environ.get("WATTAGE_URL") or DEFAULT_URL
        token = os.environ.get("WATTAGE_TOKEN")
        body = {"kind": kind}
        if index is not None:
            body["index"] = index
        body.update(counters)
        data = json.dumps(body, allow_nan=False).encode()
        path = "/api/v1/jobs/%s/marks" % urllib.parse.quote(str(job), safe="")
        req = urllib.request.Request(url.rstrip("/") + path, data=data, method="POST")
        req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", "Bearer " + token)
        with urllib.request.urlopen(req, timeout=_TIMEOUT_S) as rep:
            return 200 <= rep.status < 300
    except urllib.error.HTTPError as e:
        try:
            why = json.loads(e.read().decode("utf-8", "replace")).get("error", "")
        except Exception:
            why = ""
        _warn_once("the daemon refused a %s mark: HTTP %d %s" % (kind, e.code, why))
        return False
    except (urllib.error.URLError, OSError) as e:
        _down_until = time.monotonic() + _BACKOFF_S
        _warn_once("the wattage daemon is not reachable (%s); marks are skipped" % (e,))
        return False
    except Exception as e:  # bad counters (NaN, objects), anything else: never raise
        _warn_once("a %s mark was not sent: %s" % (kind, e))
        return False


class phase:
    """A phase that begins on entering and ends on leaving the block::

        with phase("eval", index=3) as p:
            p.counters["accuracy"] = evaluate()

    Counters given here or set in p.counters go with the closing mark. Exceptions in the block
    propagate as usual (the phase is still closed).
    """

    def __init__(self, kind="epoch", index=None, **counters):
        self.kind = kind
        self.index = index
        self.counters = dict(counters)

    def __enter__(self):
        mark(self.kind, self.index, begin=True)
        return self

    def __exit__(self, exc_type, exc, tb):
        mark(self.kind, self.index, **self.counters)
        return False
