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

Measuring a block, with or without the daemon::

    with wc.measure("finetune") as m:
        train()
    print(m.result.energy_j, "J on", m.result.source)   # "daemon" or "nvml"

``measure`` starts a job of the daemon for the block and reads its energy from the daemon's
store when it ends (GPU energy counters, integrated power where a GPU has none). When no daemon
answers (a notebook, a laptop, a one-off script), it reads the GPUs' energy counters itself,
in this process, through NVML (ctypes: ``nvmlDeviceGetTotalEnergyConsumption`` at the start and
at the end of the block). Either way ``m.result`` is the same ``Result``, whose ``source`` says
which path measured it. The NVML library is ``WATTAGE_NVML_LIBRARY`` when set (as for the
daemon), else ``libnvidia-ml.so.1``.

The same from any language, with curl::

    curl -X POST -H 'Content-Type: application/json' -H "Authorization: Bearer $WATTAGE_TOKEN" \\
         --cacert "$WATTAGE_CACERT" --cert "$WATTAGE_CERT" --key "$WATTAGE_KEY" \\
         -d '{"kind": "epoch", "index": 1, "tokens_total": 1048576}' \\
         "$WATTAGE_URL/api/v1/jobs/$WATTAGE_JOB/marks"
"""

import atexit
import ctypes
import json
import os
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["mark", "phase", "enabled", "configure", "measure", "Result"]

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


# ---- measuring a block: through the daemon, else through NVML in this process ----


class Result:
    """The energy of a measured block, whichever path measured it.

    source        "daemon" (a job of the daemon, from its store) or "nvml" (this process read
                  the GPUs' energy counters), or None when neither could measure (error says why)
    name          the block's name; job_id: the daemon's job id (None on the nvml path)
    start_s, end_s, duration_s   unix seconds and seconds
    energy_j      GPU energy over the block in joules (None when nothing could be counted);
                  energy_kwh the same in kWh
    gpus          one dict per GPU: {"gpu": index, "uuid", "energy_j", "method"}; method is
                  "counter" (the GPU's energy counter) or "integrated" (power integrated by the
                  daemon, for a GPU without a counter); energy_j None for a GPU that could not
                  be counted (no counter, on the nvml path; its counter reset by a driver reload)
    coverage      0..1: the part of the block (daemon) or of the GPUs (nvml) that was counted
    provisional   True when the daemon had not stored the whole block yet when asked
    error         why something is missing, or None
    """

    __slots__ = ("source", "name", "job_id", "start_s", "end_s", "duration_s", "energy_j",
                 "gpus", "coverage", "provisional", "error")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))
        if self.gpus is None:
            self.gpus = []
        if self.provisional is None:
            self.provisional = False

    @property
    def energy_kwh(self):
        return None if self.energy_j is None else self.energy_j / 3.6e6

    def as_dict(self):
        d = {k: getattr(self, k) for k in self.__slots__}
        d["energy_kwh"] = self.energy_kwh
        return d

    def __repr__(self):
        return "Result(%s)" % ", ".join("%s=%r" % kv for kv in self.as_dict().items())


def _env_list(name):
    """The non-empty elements of a comma-separated environment variable."""
    return [g.strip() for g in (os.environ.get(name) or "").split(",") if g.strip()]


def _visible_gpus():
    """The GPUs the environment makes visible, as `wattage exec` reads them: CUDA_VISIBLE_DEVICES
    for NVIDIA's ("nvidia:N", a GPU-... UUID as it is; MIG instances are not GPUs: ignored), and
    for AMD's ROCR_VISIBLE_DEVICES (indices "amd:N", UUIDs GPU-<unique id> as wattage's
    AMD-<unique id>) and HIP_VISIBLE_DEVICES, indices into what ROCR_VISIBLE_DEVICES leaves (every
    AMD GPU without it). None when none of them names a GPU."""
    out = []
    for g in _env_list("CUDA_VISIBLE_DEVICES"):
        if g.isdigit():
            out.append("nvidia:" + g)
        elif not g.startswith("MIG-"):
            out.append(g)
    rocr = []
    for g in _env_list("ROCR_VISIBLE_DEVICES"):
        if g.isdigit():
            rocr.append("amd:" + g)
        elif g.startswith("GPU-") and len(g) > 4:
            rocr.append("AMD-" + g[4:])
    hip = _env_list("HIP_VISIBLE_DEVICES")
    if hip:
        for g in hip:
            if not g.isdigit():
                continue
            if _env_list("ROCR_VISIBLE_DEVICES"):
                if int(g) < len(rocr):
                    out.append(rocr[int(g)])
            else:
                out.append("amd:" + g)
    else:
        out.extend(rocr)
    return out or None


def _selected_gpus(gpus):
    """The GPUs asked for: gpus (a list, or a comma-separated string of indices, vendor indices
    "nvidia:N" / "amd:N" or UUIDs), else those the environment makes visible (_visible_gpus),
    else None (all of them)."""
    if gpus is None:
        return _visible_gpus()
    if isinstance(gpus, (str, bytes)):
        gpus = gpus.decode() if isinstance(gpus, bytes) else gpus
        gpus = [g.strip() for g in gpus.split(",") if g.strip()]
    return [str(g) for g in gpus]


def _nvml_wanted(gpus):
    """Of the GPUs asked for, those NVML can measure in this process, as its indices or UUIDs:
    "nvidia:N" is N, an AMD GPU ("amd:N", "AMD-...") is not NVML's."""
    out = []
    for g in gpus:
        if g.startswith("nvidia:"):
            out.append(g[len("nvidia:"):])
        elif not (g.startswith("amd:") or g.startswith("AMD-")):
            out.append(g)
    return out


class _Nvml:
    """The few NVML calls the in-process path makes, through ctypes. One session for the
    process (initialising costs ~20 ms per GPU and wakes GPUs without persistence mode), shut
    down at exit."""

    SUCCESS, NOT_SUPPORTED = 0, 3

    def __init__(self):
        path = os.environ.get("WATTAGE_NVML_LIBRARY") or "libnvidia-ml.so.1"
        self.path = path
        self.lib = ctypes.CDLL(path)
        self._init = self._sym("nvmlInit_v2", "nvmlInit")
        self._count = self._sym("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount")
        self._by_index = self._sym("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex")
        self._uuid = self._sym("nvmlDeviceGetUUID")
        self._energy = self._sym("nvmlDeviceGetTotalEnergyConsumption", required=False)
        self._shutdown = self._sym("nvmlShutdown")
        self._errstr = self._sym("nvmlErrorString", required=False)
        if self._errstr:
            self._errstr.restype = ctypes.c_char_p
        self._check(self._init(), "nvmlInit")
        atexit.register(self._shutdown)
        n = ctypes.c_uint(0)
        self._check(self._count(ctypes.byref(n)), "nvmlDeviceGetCount")
        self.devices = []  # (index as str, uuid, handle)
        for i in range(n.value):
            h = ctypes.c_void_p()
            if self._by_index(ctypes.c_uint(i), ctypes.byref(h)) != self.SUCCESS:
                continue
            buf = ctypes.create_string_buffer(96)
            uuid = ""
            if self._uuid(h, buf, ctypes.c_uint(len(buf))) == self.SUCCESS:
                uuid = buf.value.decode("ascii", "replace")
            self.devices.append((str(i), uuid, h))

    def _sym(self, *names, required=True):
        for n in names:
            f = getattr(self.lib, n, None)
            if f is not None:
                f.restype = ctypes.c_int
                return f
        if required:
            raise OSError("%s does not export %s: not a usable NVML library" % (self.path, names[0]))
        return None

    def error(self, r):
        if self._errstr:
            try:
                return "%s (%d)" % (self._errstr(r).decode(), r)
            except Exception:
                pass
        return "error %d" % r

    def _check(self, r, what):
        if r != self.SUCCESS:
            raise OSError("%s failed in %s: %s" % (what, self.path, self.error(r)))

    def energy_mj(self, handle):
        """The GPU's energy counter (mJ since the driver loaded), or an int error code < 0."""
        if self._energy is None:
            return -self.NOT_SUPPORTED
        v = ctypes.c_ulonglong(0)
        r = self._energy(handle, ctypes.byref(v))
        return v.value if r == self.SUCCESS else -r


_nvml_state = {"nvml": None, "error": None}


def _nvml():
    """The process's NVML session, opened at first use; raises OSError with why when there is
    none (the failure is remembered: a machine without NVIDIA is not asked again)."""
    with _lock:
        if _nvml_state["nvml"] is None and _nvml_state["error"] is None:
            try:
                _nvml_state["nvml"] = _Nvml()
            except (OSError, AttributeError) as e:
                _nvml_state["error"] = str(e)
        if _nvml_state["nvml"] is None:
            raise OSError(_nvml_state["error"])
        return _nvml_state["nvml"]


def _request(method, path, body=None, timeout=_TIMEOUT_S):
    """One request to the daemon; returns the decoded JSON reply. Raises urllib's errors."""
    url = _get("url") or DEFAULT_URL
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url.rstrip("/") + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    token = _get("token")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=timeout, context=_context(url)) as rep:
        return json.loads(rep.read().decode("utf-8"))


def _http_why(e):
    try:
        why = json.loads(e.read().decode("utf-8", "replace")).get("error", "")
    except Exception:
        why = ""
    return "HTTP %d %s" % (e.code, why)


_measured = [0]


class measure:
    """Measures the GPU energy of a ``with`` block::

        with measure("eval", gpus=[0, 1]) as m:
            evaluate()
        m.result.energy_j, m.result.source

    name: the job's name (default "python-<pid>-<n>"). gpus: indices, vendor indices ("nvidia:0",
    "amd:1") or UUIDs (a list or a comma-separated string); default the GPUs that
    CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES make visible (as
    `wattage exec` reads them), else every GPU. The in-process path measures NVIDIA's only. mode: "auto" (the
    daemon when one answers, else NVML in this process), "daemon" or "nvml" (that path only).
    wait_s: how long to wait at the end for the daemon to have stored the whole block (its
    store writes every store.flush_interval, 1 s by default); after it the figures are marked
    provisional.

    The daemon path gives what the daemon knows (every GPU's counter, integrated power where a
    GPU has none, the job in its store and reports). The nvml path reads each GPU's energy
    counter at the two ends of the block: a GPU without one (before Volta) is not counted, and
    since the counter updates every 20-100 ms a block much shorter than that is not measured
    well. Nothing raises into the block's code: m.result.error says what went wrong, and a
    warning is printed once per process. Exceptions of the block propagate as usual (the
    result is still filled).
    """

    def __init__(self, name=None, gpus=None, mode="auto", wait_s=5.0):
        if mode not in ("auto", "daemon", "nvml"):
            raise ValueError("mode: expected auto, daemon or nvml (got %r)" % (mode,))
        if name is None:
            _measured[0] += 1
            name = "python-%d-%d" % (os.getpid(), _measured[0])
        self.name = str(name)
        self.gpus = _selected_gpus(gpus)
        self.mode = mode
        self.wait_s = float(wait_s)
        self.result = None
        self._path = None
        self._job = None
        self._start = None
        self._why = []

    # -- entering: the daemon first (unless nvml), else NVML

    def __enter__(self):
        try:
            if self.mode in ("auto", "daemon") and self._start_daemon():
                self._path = "daemon"
            elif self.mode in ("auto", "nvml") and self._start_nvml():
                self._path = "nvml"
        except Exception as e:  # never raise into the caller's block
            self._why.append("unexpected: %s" % (e,))
        if self._path is None:
            _warn_once("energy is not measured: " + "; ".join(self._why))
        return self

    def _start_daemon(self):
        global _down_until
        if time.monotonic() < _down_until:
            self._why.append("the daemon was not reachable a moment ago")
            return False
        body = {"name": self.name}
        if self.gpus is not None:
            body["gpus"] = self.gpus
        try:
            self._job = _request("POST", "/api/v1/jobs", body)
            return True
        except urllib.error.HTTPError as e:
            self._why.append("the daemon refused the job: %s" % _http_why(e))
        except (urllib.error.URLError, OSError, ValueError) as e:
            _down_until = time.monotonic() + _BACKOFF_S
            self._why.append("no daemon at %s (%s)" % (_get("url") or DEFAULT_URL, e))
        return False

    def _start_nvml(self):
        try:
            nv = _nvml()
        except OSError as e:
            self._why.append("no NVML in this process: %s" % (e,))
            return False
        devs = nv.devices
        if self.gpus is not None:
            want = set(_nvml_wanted(self.gpus))
            devs = [d for d in devs if d[0] in want or d[1] in want]
            if not devs:
                self._why.append("none of the GPUs %s is on this machine" % ",".join(self.gpus))
                return False
        self._devs = devs
        before = time.time()
        self._e0 = [nv.energy_mj(d[2]) for d in devs]
        # the counters were read one after another (~3 ms each on an H200): stamp the middle
        self._start = (before + time.time()) / 2
        return True

    # -- leaving: the result, the same object whichever path

    def __exit__(self, exc_type, exc, tb):
        try:
            if self._path == "daemon":
                self.result = self._end_daemon()
            elif self._path == "nvml":
                self.result = self._end_nvml()
            else:
                now = time.time()
                self.result = Result(name=self.name, start_s=now, end_s=now, duration_s=0.0,
                                     coverage=0.0, error="; ".join(self._why))
        except Exception as e:  # never raise into the caller
            self.result = Result(name=self.name, source=self._path, coverage=0.0,
                                 error="unexpected: %s" % (e,))
        if self.result.error and self._path is not None:
            _warn_once("measure %s: %s" % (self.name, self.result.error))
        return False

    def _end_daemon(self):
        jid = self._job.get("id")
        path = "/api/v1/jobs/%s" % urllib.parse.quote(str(jid), safe="")
        err = None
        try:
            job = _request("POST", path + "/end", {})
        except urllib.error.HTTPError as e:
            job, err = self._job, "the daemon did not end the job: %s" % _http_why(e)
        except (urllib.error.URLError, OSError, ValueError) as e:
            job, err = self._job, "the daemon went away before the block ended (%s)" % (e,)
        deadline = time.monotonic() + self.wait_s
        while err is None and job.get("kpi", {}).get("coverage", 0) < 0.999:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(0.25, left))
            try:
                job = _request("GET", path, timeout=max(0.5, min(_TIMEOUT_S, left)))
            except Exception as e:
                err = "the job's figures could not be read (%s)" % (e,)
        kpi = job.get("kpi") or {}
        cov = kpi.get("coverage", 0.0)
        gpus = [{"gpu": g.get("gpu"), "uuid": g.get("uuid"), "energy_j": g.get("energy_joules"),
                 "method": g.get("method")} for g in job.get("gpu_energy") or []]
        end_s = job.get("end_s")
        return Result(source="daemon", name=self.name, job_id=jid, start_s=job.get("start_s"),
                      end_s=end_s, duration_s=kpi.get("duration_s"),
                      energy_j=kpi.get("energy_joules") if end_s is not None else None,
                      gpus=gpus, coverage=cov, provisional=cov < 0.999, error=err)

    def _end_nvml(self):
        nv = _nvml()
        t0 = time.time()
        e1 = [nv.energy_mj(d[2]) for d in self._devs]
        end = (t0 + time.time()) / 2
        gpus, total, counted, why = [], 0.0, 0, []
        for (idx, uuid, _), a, b in zip(self._devs, self._e0, e1):
            g = {"gpu": idx, "uuid": uuid, "energy_j": None, "method": "counter"}
            if a < 0 or b < 0:
                r = -(a if a < 0 else b)
                why.append("GPU %s: no energy counter (%s)" % (idx, nv.error(r)))
            elif b < a:
                # the counter restarts when the driver reloads: a decrease is a reset, and the
                # energy before it is unknown
                why.append("GPU %s: its energy counter reset (driver reload) during the block" % idx)
            else:
                g["energy_j"] = (b - a) / 1000.0  # mJ
                total += g["energy_j"]
                counted += 1
            gpus.append(g)
        n = len(self._devs)
        return Result(source="nvml", name=self.name, start_s=self._start, end_s=end,
                      duration_s=end - self._start, energy_j=total if counted else None,
                      gpus=gpus, coverage=counted / n if n else 0.0, provisional=False,
                      error="; ".join(why) or None)
