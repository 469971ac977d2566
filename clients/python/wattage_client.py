# SPDX-License-Identifier: MIT
"""Marks for the wattage daemon's jobs API, from training or serving code. Standard library only.

Run the program under ``wattage exec -- python train.py`` (or start a job yourself and set
``WATTAGE_JOB``); then, in the code::

    import wattage_client as wc

    for epoch in range(3):
        train_one_epoch()
        wc.mark("epoch", index=epoch, tokens_total=tokens_seen, samples=n, accuracy=acc)

    with wc.phase("eval", index=epoch) as p:      # a phase that begins and ends here
        p.counters["accuracy"] = evaluate()

A mark closes the phase that began at the previous mark of the same kind (or the job's start);
its energy is computed by the daemon from its stored series over exactly that window.

Counters: ``tokens``, ``samples`` and ``requests`` are the phase's own counts (a delta: what
was processed since the previous mark of the same kind). ``tokens_total``, ``samples_total``
and ``requests_total`` are running totals since the job's start (a cumulative count such as
``tokens_seen``); the daemon takes the phase's count as the difference. Give one form or the
other for a counter in a mark. A delta that rises at every mark like a running total is stored
as given, and the daemon's warning is printed once. Other counters (``accuracy``,
``latency_p99_s``, any lower_snake_case name) are values at the mark.

Environment: ``WATTAGE_JOB`` (the job id or name; without it every call does nothing),
``WATTAGE_URL`` (default ``http://127.0.0.1:9747``), ``WATTAGE_TOKEN`` (bearer token, when the
daemon requires one), and for https ``WATTAGE_CACERT`` (the CA that signed the daemon's
certificate), ``WATTAGE_CERT`` and ``WATTAGE_KEY`` (a client certificate and its key, when the
daemon requires one: mutual TLS). ``wattage exec`` sets all of them that it uses itself.
``configure()`` sets the same from code.

Nothing here ever raises into the caller: when the daemon cannot be reached or refuses a mark,
the call returns False and one warning is printed on stderr (once per process); after a failure
to connect, marks are skipped for 30 s so a down daemon costs the training loop nothing.

The same from any language, with curl::

    curl -X POST -H 'Content-Type: application/json' -H "Authorization: Bearer $WATTAGE_TOKEN" \\
         --cacert "$WATTAGE_CACERT" --cert "$WATTAGE_CERT" --key "$WATTAGE_KEY" \\
         -d '{"kind": "epoch", "index": 1, "tokens_total": 1048576}' \\
         "$WATTAGE_URL/api/v1/jobs/$WATTAGE_JOB/marks"
"""

import json
import os
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["mark", "phase", "enabled", "configure"]

DEFAULT_URL = "http://127.0.0.1:9747"
_TIMEOUT_S = 2.0
_BACKOFF_S = 30.0

_lock = threading.Lock()
_warned = False
_warned_counters = False
_down_until = 0.0
_settings = {}  # set by configure(); each wins over its environment variable
_ssl = {"key": None, "context": None}

_ENV = {
    "job": "WATTAGE_JOB",
    "url": "WATTAGE_URL",
    "token": "WATTAGE_TOKEN",
    "cacert": "WATTAGE_CACERT",
    "cert": "WATTAGE_CERT",
    "key": "WATTAGE_KEY",
}


def configure(job=None, url=None, token=None, cacert=None, cert=None, key=None):
    """Sets where marks go, over the environment variables of the same meaning (see above).

    Arguments left None keep their environment variable. cert and key go together (a client
    certificate for a daemon with mutual TLS); cacert is the CA that signed the daemon's
    certificate. Never raises.
    """
    global _down_until
    for name, value in (("job", job), ("url", url), ("token", token), ("cacert", cacert),
                        ("cert", cert), ("key", key)):
        if value is not None:
            _settings[name] = str(value)
    _down_until = 0.0


def _get(name):
    v = _settings.get(name)
    return v if v else os.environ.get(_ENV[name]) or None


def _context(url):
    """The TLS context for an https URL (cached per set of files), else None."""
    if not url.lower().startswith("https:"):
        return None
    files = (_get("cacert"), _get("cert"), _get("key"))
    with _lock:
        if _ssl["key"] != files or _ssl["context"] is None:
            ctx = ssl.create_default_context(cafile=files[0])
            if files[1]:
                ctx.load_cert_chain(files[1], files[2])
            _ssl["key"], _ssl["context"] = files, ctx
        return _ssl["context"]


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
    """True when a job is set (WATTAGE_JOB or configure(job=...)) and marks are sent."""
    return bool(_get("job"))


def mark(kind="epoch", index=None, **counters):
    """Adds a mark of `kind` (epoch, step, eval, any lower_snake_case word) to the current job.

    index: optional integer >= 0. counters: numbers >= 0 such as tokens, samples, requests
    (the phase's own counts), tokens_total, samples_total, requests_total (running totals since
    the job's start), accuracy, latency_p50_s, latency_p99_s (any lower_snake_case name);
    begin=True only opens the next phase of this kind. Returns True when the daemon stored it,
    else False.
    """
    global _down_until
    try:
        job = _get("job")
        if not job:
            return False
        if time.monotonic() < _down_until:
            return False
        url = _get("url") or DEFAULT_URL
        token = _get("token")
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
        with urllib.request.urlopen(req, timeout=_TIMEOUT_S, context=_context(url)) as rep:
            ok = 200 <= rep.status < 300
            _counter_warnings(rep.read())
            return ok
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


def _counter_warnings(raw):
    """Prints the daemon's first warning about the counters of a mark, once per process."""
    global _warned_counters
    try:
        w = json.loads(raw.decode("utf-8", "replace")).get("warnings") or []
        if w and not _warned_counters:
            _warned_counters = True
            sys.stderr.write("wattage_client: the daemon warns: %s\n" % w[0])
            sys.stderr.flush()
    except Exception:
        pass


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
