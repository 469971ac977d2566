# Helpers for the remote write tests. Source after lib.sh.
#   rw_config FILE NODE [ENDPOINT_YAML...]   writes a config: topology.node NODE, a 0.5-s store
#                                  flush, and the remote_write entries given (YAML list items)
#   rw_metric PORT NAME ENDPOINT   prints a wattage_remote_write_* value of the daemon on PORT
#                                  ("" when absent)
#   rw_wait_caught_up PORT ENDPOINT SECONDS   until pending is 0 and something was sent
#   rw_check_store DB NODE ENDPOINT FORMAT FILE MAX_UNSENT [--no-duplicates]
#                                  compares every reading of the store's own series with what an
#                                  engine returned (FILE: a Prometheus query result of raw
#                                  samples, FORMAT prom; or VictoriaMetrics' /api/v1/export lines,
#                                  FORMAT vm): everything up to the endpoint's cursor arrived
#                                  with its exact time (ms) and value, labels sorted out as sent
#                                  (node, exported_node), nothing else arrived; at most
#                                  MAX_UNSENT readings of a series lie after its cursor.
#   rw_check_vm VM_URL DB NODE ENDPOINT FILE MAX_UNSENT [--no-duplicates]
#                                  rw_check_store against VictoriaMetrics' /api/v1/export of
#                                  {node=NODE} (into FILE), taken as vm_export does, before the
#                                  store is read: what a stop sent is there at once
#   vm_export VM_URL MATCH         prints VictoriaMetrics' raw export of the series MATCH, after
#                                  /internal/force_flush, with an explicit end a minute ahead.
#                                  Without `end` VictoriaMetrics (1.79) rounds the request's time
#                                  down to the whole second and leaves out every sample stamped
#                                  in the current second: what a daemon sent just before it
#                                  stopped (a 0.5-s flush) seemed missing from an export made at
#                                  once, and there half a second later.
rw_config() {
    local file=$1 node=$2
    shift 2
    {
        printf 'topology:\n  node: %s\nstore:\n  flush_interval: 0.5s\nremote_write:\n' "$node"
        for e in "$@"; do printf '%s\n' "$e"; done
    } >"$file"
}

rw_metric() {
    curl -s "http://127.0.0.1:$1/metrics" |
        awk -v n="$2{endpoint=\"$3\"}" '$1 == n { print $2 }'
}

rw_caught_up() {
    local p s
    p=$(rw_metric "$1" wattage_remote_write_samples_pending "$2")
    s=$(rw_metric "$1" wattage_remote_write_samples_sent_total "$2")
    [[ $p == 0 && -n $s && $s != 0 ]]
}

rw_wait_caught_up() { wait_for "$3" rw_caught_up "$1" "$2"; }

vm_export() {
    curl -s "$1/internal/force_flush" -o /dev/null &&
        curl -s "$1/api/v1/export" --data-urlencode "match[]=$2" \
            --data-urlencode "end=$(($(date +%s) + 60))"
}

rw_check_store() { RW_CHECK_FETCH= _rw_check "$@"; }

rw_check_vm() {
    local url=$1
    shift
    RW_CHECK_FETCH=$url _rw_check "$1" "$2" "$3" vm "${@:4}"
}

_rw_check() {
    /usr/bin/python3 - "$@" <<'PY'
import json, os, re, sqlite3, sys, time, urllib.parse, urllib.request
sys.path.insert(0, "tests/cli")
from stored import readings as stored_readings
db, node, endpoint, fmt, path, max_unsent = sys.argv[1:7]
nodup = "--no-duplicates" in sys.argv[7:]
fetch = os.environ.get("RW_CHECK_FETCH", "")
max_unsent = int(max_unsent)
pair = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
def unescape(v):
    return re.sub(r'\\(.)', lambda m: "\n" if m.group(1) == "n" else m.group(1), v)
# an explicit end: the default would leave out the current second (vm_export)
def export():
    urllib.request.urlopen(fetch + "/internal/force_flush", timeout=30).read()
    q = urllib.parse.urlencode({"match[]": '{node="%s"}' % node,
                                "end": str(int(time.time()) + 60)}).encode()
    with urllib.request.urlopen(fetch + "/api/v1/export", data=q, timeout=60) as r:
        body = r.read()
    with open(path, "wb") as f:
        f.write(body)
# exported first, at once: what a stop sent must be there already (the store, final once the
# daemon stopped, is read after: that takes over 30 s on a loaded machine)
if fetch:
    export()
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
since = con.execute("SELECT since_ns FROM remote_write_endpoints WHERE name=?",
                    (endpoint,)).fetchone()
assert since, f"no endpoint {endpoint} in the store"
since = since[0]
cursors = dict(con.execute("SELECT series, t FROM remote_write_cursors WHERE endpoint=?",
                           (endpoint,)))
store = {}
unsent_max = 0
readings = stored_readings(db, since)
for sid, metric, labels in con.execute("SELECT id, metric, labels FROM series WHERE node=''"):
    lab = {"__name__": metric, "node": node}
    for k, v in pair.findall(labels):
        v = unescape(v)
        if v:
            lab["exported_node" if k == "node" else k] = v
    rows = readings[sid]
    cur = cursors.get(sid, since)
    sent = [(t // 1000000, v) for t, v in rows if t <= cur]
    rest = [(t // 1000000, v) for t, v in rows if t > cur]
    unsent_max = max(unsent_max, len(rest))
    store[frozenset(lab.items())] = (sent, rest, metric)
# VictoriaMetrics keeps values as decimals (mantissa and exponent) rounded to 12 significant
# digits: off by up to half a unit in the 12th digit, 5e-12 of a value whose first digit is 1
tol = 1e-11 if fmt == "vm" else 0
def same(a, b):
    return len(a) == len(b) and all(
        x[0] == y[0] and abs(x[1] - y[1]) <= tol * max(abs(x[1]), abs(y[1])) for x, y in zip(a, b))
def compare():
    got = {}
    if fmt == "prom":
        d = json.load(open(path))
        assert d["status"] == "success", d
        for s in d["data"]["result"]:
            got[frozenset(s["metric"].items())] = [(round(float(t) * 1000), float(v))
                                                   for t, v in s["values"]]
    else:
        for line in open(path):
            if line.strip():
                s = json.loads(line)
                k = frozenset(s["metric"].items())
                got.setdefault(k, []).extend(zip(s["timestamps"], s["values"]))
        for k in got:
            got[k].sort()
    problems = []
    n = 0
    for k, (sent, rest, metric) in store.items():
        g = got.pop(k, [])
        if nodup and len({t for t, _ in g}) != len(g):
            problems.append(f"{metric} {dict(k)}: duplicated timestamps")
        # what arrived: everything acknowledged, maybe some of what followed (in flight at a stop)
        if not same(g[:len(sent)], sent) or not same(g[len(sent):], rest[:len(g) - len(sent)]):
            near = lambda x, pool: any(same([x], [y]) for y in pool)
            miss = [x for x in sent if not near(x, g)][:3]
            extra = [x for x in g if not near(x, sent) and not near(x, rest)][:3]
            problems.append(f"{metric} {dict(k)}: {len(g)} arrived, {len(sent)} acknowledged; "
                            f"missing {miss} extra {extra}")
        n += len(sent)
    for k in got:
        problems.append(f"a series the store does not have: {dict(k)}")
    return problems, n
problems, n = compare()
if unsent_max > max_unsent:
    problems.append(f"{unsent_max} readings of a series were never acknowledged (at most "
                    f"{max_unsent} allowed)")
if not n:
    problems.append("nothing was sent")
if problems:
    # how many problems, then the first ten: which series they hit
    sys.exit(f"{len(problems)} problems:\n" + "\n".join(problems[:10]))
print(f"# {len(store)} series, {n} samples arrived exactly as stored; at most {unsent_max} "
      f"unacknowledged per series", file=sys.stderr)
PY
}
