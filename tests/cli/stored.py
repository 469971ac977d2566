"""The readings a store holds, read the way a user reads them: through `wattage query`, so a test
holds whatever the store's layout (a row per reading, or packed ticks). Import it from the tests'
Python snippets (the tests run from the repository root):

    sys.path.insert(0, "tests/cli"); import stored
    stored.readings(DB, SINCE_NS) -> {series id: [(t_ns, value), ...] in time order}

for the store's own series (node ""), readings after SINCE_NS only. Series ids are those of the
store's `series` table, which both layouts keep, so they match the remote write and stream
cursors. `stored.labels(TEXT)` parses that table's labels column into (key, value) pairs.
"""
import json
import os
import re
import sqlite3
import subprocess

_PAIR = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _unescape(v):
    return re.sub(r'\\(.)', lambda m: "\n" if m.group(1) == "n" else m.group(1), v)


def labels(text):
    return [(k, _unescape(v)) for k, v in _PAIR.findall(text)]


def _ns(text):  # "S.NNNNNNNNN" as --unix prints it, floor seconds: exact
    sec, _, frac = text.partition(".")
    return int(sec) * 1000000000 + int(frac)


def readings(db, since_ns=None, binary=None):
    binary = binary or os.environ.get("WATTAGE_BIN", "build/wattage")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    ids = {}
    for sid, metric, text in con.execute("SELECT id, metric, labels FROM series WHERE node=''"):
        ids[(metric, tuple(labels(text)))] = sid
    con.close()
    out = {sid: [] for sid in ids.values()}
    for metric in sorted({m for m, _ in ids}):
        r = subprocess.run([binary, "query", "--db", db, "--from", "0", "--to", "now", "--json",
                            "--unix", metric], capture_output=True, text=True)
        if r.returncode != 0:
            if "no stored series matches" in r.stderr:
                continue
            raise RuntimeError(f"wattage query {metric}: {r.stderr.strip()}")
        for s in json.loads(r.stdout)["series"]:
            if s.get("node"):
                continue
            key = (s["metric"], tuple(s["labels"].items()))
            if key not in ids:
                raise RuntimeError(f"wattage query returned a series the table lacks: {key}")
            pts = out[ids[key]]
            pts.extend((t, v) for t, v in ((_ns(a), b) for a, b in s["points"])
                       if since_ns is None or t > since_ns)
            pts.sort()
    return out
