"""Readings into a real VictoriaMetrics, for the CLI tests that read an engine with --source.

    import vm_import
    for s in vm_import.store_series(BIN, DB):   # every series of a store, through `wattage query`
        lines.append(vm_import.line(s["metric"], dict(s["labels"], node=s["node"]), s["ts"], s["values"]))
    n = vm_import.post(URL, lines)               # /api/v1/import, then until /api/v1/export has them

post() asks /api/v1/export with `end` set: without it VictoriaMetrics leaves out the samples of
the current second, and a test that wrote them would wait for them in vain.
"""
import json
import sqlite3
import subprocess
import time
import urllib.parse
import urllib.request


def store_series(binary, db):
    """Every series of the store db as {"metric", "labels", "node", "ts" (ms), "values"}."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    metrics = sorted({m for (m,) in con.execute("SELECT DISTINCT metric FROM series")})
    con.close()
    for m in metrics:
        r = subprocess.run([binary, "query", "--db", db, "--from", "0", "--to", "now", "--json",
                            "--unix", m], capture_output=True, text=True, check=True)
        for s in json.loads(r.stdout)["series"]:
            ts = [int(a.split(".")[0]) * 1000 + int(a.split(".")[1][:3]) for a, _ in s["points"]]
            yield {"metric": s["metric"], "labels": s["labels"], "node": s.get("node") or "",
                   "ts": ts, "values": [v for _, v in s["points"]]}


def line(metric, labels, ts, values):
    """One line of /api/v1/import: a series (labels without __name__) and its samples."""
    return json.dumps({"metric": dict(labels, __name__=metric), "values": list(values),
                       "timestamps": list(ts)})


def post(url, lines, timeout=120, tries=120):
    """Imports lines into the VictoriaMetrics at url and waits until it exports every sample of
    theirs (it answers the import before the samples can be searched). Returns the samples."""
    n, last = 0, 0
    for l in lines:
        ts = json.loads(l)["timestamps"]
        n += len(ts)
        last = max([last] + ts)
    assert n > 0, "nothing to import"
    urllib.request.urlopen(url + "/api/v1/import", data="\n".join(lines).encode(),
                           timeout=timeout).read()
    q = urllib.parse.urlencode({"match[]": '{__name__=~"wattage_.+"}', "start": "0",
                                "end": str(last // 1000 + 1)}).encode()
    got = 0
    for _ in range(tries):
        urllib.request.urlopen(url + "/internal/force_flush", timeout=30).read()
        got = sum(len(json.loads(l)["timestamps"]) for l in
                  urllib.request.urlopen(url + "/api/v1/export", data=q,
                                         timeout=timeout).read().splitlines() if l.strip())
        if got == n:
            break
        time.sleep(0.5)
    assert got == n, f"VictoriaMetrics exports {got} of {n} samples"
    return n


def openmetrics(binary, db, path, node=True):
    """Every series of the store db as OpenMetrics text with timestamps, for Prometheus'
    `promtool tsdb create-blocks-from openmetrics` (a real Prometheus takes no old samples
    otherwise). Each series keeps its node label. Returns the samples written."""
    esc = lambda v: str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    n = 0
    by = {}
    for s in store_series(binary, db):  # a metric's series together, as OpenMetrics asks
        by.setdefault(s["metric"], []).append(s)
    with open(path, "w") as out:
        for m in sorted(by):
            for s in by[m]:
                lab = dict(s["labels"], node=s["node"]) if node else dict(s["labels"])
                ls = ",".join('%s="%s"' % (k, esc(v)) for k, v in sorted(lab.items()))
                for t, v in zip(s["ts"], s["values"]):
                    out.write("%s{%s} %r %d.%03d\n" % (m, ls, v, t // 1000, t % 1000))
                    n += 1
        out.write("# EOF\n")
    return n
