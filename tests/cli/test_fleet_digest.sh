#!/usr/bin/env bash
# `wattage report --source` and `kpi --source` read a window's counters digested (the raw samples
# around the window's edges, one reading per step between them, the raw samples of the steps
# where a reset or a gap lies: store/promsrc_digest.c), not every sample. Against
# VictoriaMetrics and Prometheus on loopback holding crafted GPU energy counters (10-s readings
# over an hour, imported with their stamps: VictoriaMetrics' import API, Prometheus' blocks
# written by `promtool tsdb create-blocks-from openmetrics` before it starts), each GPU's energy and coverage in the report equal those of the
# exact-window math over every raw sample within the pad (computed here in Python, as
# store/segment.c does it) within 1e-9: a steady counter; a reset mid-window; a reset after which
# the counter passes its earlier value within one step (the digest's readings alone would hide
# it); a gap of 10 minutes with a reset across it and one without; a series that begins and ends
# inside the window; readings sparse around the window's start. The fleet's GPU energy from kpi
# is their sum. The GPU power chart has one point per chart column, not one per reading. Under
# a low -search.maxSamplesPerQuery that refuses a listing of the nodes over the window's samples
# and a batch of the three nodes, the nodes come from the engine's index and the batch is split:
# the same KPIs; one node over the limit is an error naming it and the query, exit 1. The same
# with Prometheus' --query.max-samples (200, then 80). Through a logging proxy: the nodes come
# from GET /api/v1/label/node/values, and where it answers 404 or 405, from the query.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/prometheus_lib.sh"
PY=/usr/bin/python3
VM=${VICTORIA_METRICS:-victoria-metrics}
if ! command -v "$VM" >/dev/null; then
    skip "the digested fleet window" "$VM is not installed (scripts/deps.sh --test)"
    finish
fi
VPORT=$(free_port)
bg "$VM" -storageDataPath="$TMP/vm" -httpListenAddr="127.0.0.1:$VPORT" -retentionPeriod=1y \
    -search.disableCache -loggerLevel=ERROR 2>>"$TMP/vm.log"
check "VictoriaMetrics starts" wait_for 30 curl -sf "http://127.0.0.1:$VPORT/health" -o /dev/null
B=$(($(date +%s) - 400))
A=$((B - 3600))
# The series, their samples in Prometheus' text format with ms stamps, and the truth.
$PY - "$A" "$B" "$TMP/import.txt" "$TMP/truth.json" <<'PY'
import json, sys
A, B, out, truth_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
PAD = 30

def steady(t0, t1, v0, w, step=10):
    return [(t, v0 + w * (t - t0)) for t in range(t0, t1 + 1, step)]

series = {}
# 0: steady 300 W
series[0] = steady(A - 200, B + 200, 5e6, 300)
# 1: a reset mid-window (a driver reload): back to 0, then 300 W again
s = steady(A - 200, A + 1500, 5e6, 300)
series[1] = s + steady(A + 1510, B + 200, 0, 300)
# 2: low values: after the reset the counter passes its earlier value within one step
s = steady(A - 200, A + 2000, 100, 1)
series[2] = s + steady(A + 2010, B + 200, 0, 400)
# 3: a 10-minute gap with a reset across it
series[3] = steady(A - 200, A + 1000, 5e6, 300) + steady(A + 1600, B + 200, 1000, 300)
# 4: a 10-minute gap without a reset: the increase across it counts
series[4] = steady(A - 200, A + 1000, 5e6, 300) + steady(A + 1600, B + 200, 5e6 + 300 * 1600, 300)
# 5: begins and ends inside the window
series[5] = steady(A + 503, B - 707, 7e5, 250)
# 6: sparse around the window's start (none within 40 s of it), then every 10 s
series[6] = [(A - 45, 1e6), (A + 50, 1e6 + 300 * 95)] + steady(A + 60, B + 200, 1e6 + 300 * 105, 300)

def window(pts):
    """store/segment.c over the samples within the pad: energy (J) and coverage."""
    pts = [p for p in pts if A - PAD <= p[0] <= B + PAD]
    e = cov = 0.0
    for (t0, v0), (t1, v1) in zip(pts, pts[1:]):
        lo, hi = max(t0, A), min(t1, B)
        if hi <= lo:
            continue
        if v1 < v0:
            continue  # a reset: no energy, not covered
        e += (v1 - v0) * (hi - lo) / (t1 - t0)
        cov += hi - lo
    return e, min(1.0, cov / (B - A))

truth = {}
with open(out, "w") as f:
    for g, pts in series.items():
        # three nodes, one named with a regex's metacharacters (the batches name nodes in one),
        # their GPU indexes alike (the report finds a GPU's series by node, index and uuid)
        node = "n1" if g < 3 else "n.2" if g < 5 else "rack(3)+x"
        lb = f'node="{node}",gpu="{g % 3}",uuid="GPU-d-{g}",model="M"'
        for t, v in pts:
            f.write(f"wattage_gpu_energy_joules_total{{{lb}}} {v:.3f} {t * 1000}\n")
        for t in range(A - 200, B + 201):
            f.write(f"wattage_gpu_power_watts{{{lb}}} {300 + (t % 7)} {t * 1000}\n")
        e, c = window(pts)
        truth[f"GPU-d-{g}"] = {"energy": e, "coverage": c}
json.dump(truth, open(truth_path, "w"))
PY
curl -sf "http://127.0.0.1:$VPORT/api/v1/import/prometheus" --data-binary "@$TMP/import.txt" ||
    not_ok "the import into VictoriaMetrics"
curl -sf "http://127.0.0.1:$VPORT/internal/force_flush" -o /dev/null
check "VictoriaMetrics holds the 7 GPUs' counters" wait_for 30 $PY -c "
import json, sys, urllib.request, urllib.parse
q = urllib.parse.urlencode({'query': 'count(count_over_time(wattage_gpu_energy_joules_total[2h]))', 'time': '$B'})
d = json.load(urllib.request.urlopen('http://127.0.0.1:$VPORT/api/v1/query?' + q))
assert d['data']['result'] and d['data']['result'][0]['value'][1] == '7'"
mkdir -p "$TMP/tmpdir"
export TMPDIR=$TMP/tmpdir
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/c.yaml"
# The digest's figures from the engine at $1 (named $2 in the checks) against the truth.
digest_checks() {
    local SRC=$1 E=$2 msg rc
    "$BIN" report --source "$SRC" -c "$TMP/c.yaml" --from "$A" --to "$B" --format json \
        >"$TMP/r-$E.json" 2>"$TMP/r-$E.err"
    check "$E: report --source over an hour (exit 0)" test $? -eq 0
    msg=$($PY - "$TMP/r-$E.json" "$TMP/truth.json" <<'PY' 2>&1
import json, sys
r, truth = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
got = {g["uuid"]: g for g in r["gpus"]}
assert sorted(got) == sorted(truth), (sorted(got), sorted(truth))
bad = []
for u, t in sorted(truth.items()):
    e, c = got[u]["energy_joules"], got[u]["coverage"]
    if abs(e - t["energy"]) > 1e-9 * max(1.0, t["energy"]) or abs(c - t["coverage"]) > 1e-9:
        bad.append(f"{u}: {e} J coverage {c}, want {t['energy']} J coverage {t['coverage']}")
assert not bad, bad
# the cases differ: resets and gaps do leave their marks
assert truth["GPU-d-1"]["coverage"] < 1 and truth["GPU-d-3"]["coverage"] < 1
assert truth["GPU-d-4"]["coverage"] == 1 and truth["GPU-d-5"]["coverage"] < 0.75
print(f"ok, {len(truth)} GPUs exact")
PY
    )
    check "$E: each GPU's energy and coverage are the raw samples' exactly: $msg" bash -c '[[ $0 == ok* ]]' "$msg"
    msg=$($PY - "$TMP/r-$E.json" <<'PY' 2>&1
import json, sys
r = json.load(open(sys.argv[1]))
n = [g["power_readings"] for g in r["gpus"]]
# 3,600 raw readings of the window each; one per 4.5-s column: at most 800
assert all(700 <= x <= 800 for x in n), n
print(f"ok ({max(n)} points per GPU)")
PY
    )
    check "$E: the power chart has a point per column, not per reading: $msg" bash -c '[[ $0 == ok* ]]' "$msg"
    "$BIN" kpi --source "$SRC" --from "$A" --to "$B" --json >"$TMP/k-$E.json" 2>"$TMP/k-$E.err"
    check "$E: kpi --source over the hour (exit 0)" test $? -eq 0
    msg=$($PY - "$TMP/k-$E.json" "$TMP/truth.json" <<'PY' 2>&1
import json, sys
k, truth = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
want = sum(t["energy"] for t in truth.values())
got = k["energy"]["gpu"]["joules"]
assert abs(got - want) <= 1e-9 * want, (got, want)
print(f"ok {got:.1f} J")
PY
    )
    check "$E: kpi --source: the fleet's GPU energy is the sum of the exact figures: $msg" \
        bash -c '[[ $0 == ok* ]]' "$msg"
    # One node per batch of queries: the same report and KPIs as one batch of the three nodes.
    WATTAGE_SOURCE_BATCH_NODES=1 "$BIN" report --source "$SRC" -c "$TMP/c.yaml" --from "$A" \
        --to "$B" --format json >"$TMP/r1-$E.json" 2>"$TMP/r1-$E.err"
    check "$E: report --source, one node per batch (exit 0)" test $? -eq 0
    check "$E: report --source, one node per batch: the same report" cmp "$TMP/r-$E.json" "$TMP/r1-$E.json"
    WATTAGE_SOURCE_BATCH_NODES=2 "$BIN" kpi --source "$SRC" --from "$A" --to "$B" --json \
        >"$TMP/k2-$E.json" 2>"$TMP/k2-$E.err"
    check "$E: kpi --source, two nodes per batch: the same KPIs" cmp "$TMP/k-$E.json" "$TMP/k2-$E.json"
    WATTAGE_SOURCE_BATCH_NODES=0 "$BIN" kpi --source "$SRC" --from "$A" --to "$B" --json \
        >"$TMP/k0-$E.json" 2>"$TMP/k0-$E.err"
    rc=$?
    check "$E: WATTAGE_SOURCE_BATCH_NODES=0: exit 2, named" bash -c \
        '[[ $0 == 2 ]] && grep -q "WATTAGE_SOURCE_BATCH_NODES" "$1"' "$rc" "$TMP/k0-$E.err"
}
digest_checks "victoriametrics://127.0.0.1:$VPORT" VictoriaMetrics
# Through a proxy before VictoriaMetrics that logs what it is asked: the nodes come from the
# engine's index (GET /api/v1/label/node/values), no query lists them over the window's samples;
# where the proxy answers 404 or 405 to that, the query over the samples does, the same KPIs.
XPORT=$(free_port)
$PY - "$XPORT" "http://127.0.0.1:$VPORT" "$TMP/proxy.log" 2>"$TMP/proxy.err" <<'PY' &
import http.server, sys, urllib.error, urllib.parse, urllib.request
port, engine, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    def answer(self, raw):
        mode, path = self.path.split("/api/", 1)
        with open(log, "a") as f:
            q = urllib.parse.parse_qs(raw.decode() if raw else path.partition("?")[2])
            print(mode.strip("/"), self.command, path.partition("?")[0], q.get("query", [""])[0],
                  q.get("match[]", [""])[0], file=f)
        if "/label/" in path and mode in ("/e404", "/e405"):
            code, body = int(mode[2:]), b"not here"
        else:
            try:
                with urllib.request.urlopen(engine + "/api/" + path, raw) as r:
                    code, body = 200, r.read()
            except urllib.error.HTTPError as e:
                code, body = e.code, e.read()
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.answer(None)
    def do_POST(self):
        self.answer(self.rfile.read(int(self.headers["Content-Length"])))
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
T_PIDS="$T_PIDS $!"
wait_for 10 curl -sf "http://127.0.0.1:$XPORT/pass/api/v1/query?query=1" -o /dev/null
for mode in pass e404 e405; do
    "$BIN" kpi --source "http://127.0.0.1:$XPORT/$mode" --from "$A" --to "$B" --json \
        >"$TMP/kx-$mode.json" 2>"$TMP/kx-$mode.err"
    check "through a proxy ($mode): kpi --source, the same KPIs ($(head -c 200 "$TMP/kx-$mode.err"))" \
        cmp "$TMP/k-VictoriaMetrics.json" "$TMP/kx-$mode.json"
done
check "the nodes from the engine's index: a GET of the node label's values over the names" \
    grep -q '^pass GET v1/label/node/values  {__name__=~"wattage_gpu_energy_joules_total|' "$TMP/proxy.log"
check "no query lists the nodes over the window's samples" bash -c \
    '! grep -q "^pass .*group by (node)" "$0"' "$TMP/proxy.log"
check "a proxy without the label values (404, 405): the query lists them" bash -c \
    'grep -q "^e404 POST v1/query group by (node)" "$0" && grep -q "^e405 POST v1/query group by (node)" "$0"' \
    "$TMP/proxy.log"

# code_of PORT QUERY: the engine's answer (HTTP code) to QUERY at the window's end; LIST, the
# nodes' list over the window's samples, and BATCH, a query of the three nodes' counters.
code_of() {
    curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/api/v1/query" \
        --data-urlencode "query=$2" --data-urlencode "time=$((B + 30))"
}
LIST='group by (node) (last_over_time({__name__=~"wattage_gpu_energy_joules_total|wattage_gpu_power_watts"}[3661s]))'
BATCH='resets(wattage_gpu_energy_joules_total{node=~"n\\.2|n1|rack\\(3\\)\\+x"}[3600s])'
# Prometheus: the same samples as blocks written before it starts (exact stamps), then the same
# checks.
if ! command -v "$PROMETHEUS" >/dev/null || ! command -v promtool >/dev/null; then
    skip "the digested fleet window from Prometheus" "$PROMETHEUS or promtool is not installed"
else
    $PY - "$TMP/import.txt" "$TMP/import.om" <<'PY'
import sys
# OpenMetrics: stamps in seconds, each family's samples together, # EOF at the end
fam = {}
for line in open(sys.argv[1]):
    sel, v, t = line.rsplit(" ", 2)
    fam.setdefault(sel.split("{")[0], []).append(f"{sel} {v} {int(t) / 1000:.3f}\n")
with open(sys.argv[2], "w") as f:
    for lines in fam.values():
        f.writelines(lines)
    f.write("# EOF\n")
PY
    mkdir -p "$TMP/prom/data"
    promtool tsdb create-blocks-from openmetrics "$TMP/import.om" "$TMP/prom/data" \
        >"$TMP/promtool.log" 2>&1
    check "promtool writes the samples as blocks" test $? -eq 0
    PPORT=$(free_port)
    printf 'global:\n  scrape_interval: 1h\n' >"$TMP/prom/prometheus.yml"
    bg "$PROMETHEUS" --config.file="$TMP/prom/prometheus.yml" \
        --storage.tsdb.path="$TMP/prom/data" --web.listen-address="127.0.0.1:$PPORT" \
        --log.level=warn 2>>"$TMP/prom.log"
    check "Prometheus starts" wait_for 30 curl -sf "http://127.0.0.1:$PPORT/-/ready" -o /dev/null
    check "Prometheus holds the 7 GPUs' counters" wait_for 30 $PY -c "
import json, sys, urllib.request, urllib.parse
q = urllib.parse.urlencode({'query': 'count(count_over_time(wattage_gpu_energy_joules_total[2h]))', 'time': '$B'})
d = json.load(urllib.request.urlopen('http://127.0.0.1:$PPORT/api/v1/query?' + q))
assert d['data']['result'] and d['data']['result'][0]['value'][1] == '7'"
    digest_checks "prometheus://127.0.0.1:$PPORT" Prometheus
    # Under --query.max-samples (every sample a query loads): 200 refuses the nodes' list and a
    # query of the three nodes' counters, not one node's: the same KPIs; 80 refuses one node's.
    for lim in 200 80; do
        mkdir -p "$TMP/prom-$lim/data"
        promtool tsdb create-blocks-from openmetrics "$TMP/import.om" "$TMP/prom-$lim/data" \
            >>"$TMP/promtool.log" 2>&1
        QPORT=$(free_port)
        bg "$PROMETHEUS" --config.file="$TMP/prom/prometheus.yml" \
            --storage.tsdb.path="$TMP/prom-$lim/data" --web.listen-address="127.0.0.1:$QPORT" \
            --query.max-samples="$lim" --log.level=warn 2>>"$TMP/prom.log"
        wait_for 30 curl -sf "http://127.0.0.1:$QPORT/-/ready" -o /dev/null
        "$BIN" kpi --source "prometheus://127.0.0.1:$QPORT" --from "$A" --to "$B" --json \
            >"$TMP/kq-$lim.json" 2>"$TMP/kq-$lim.err"
        rc=$?
        if [[ $lim == 200 ]]; then
            check "Prometheus, --query.max-samples=200: refuses the nodes' list and the batch" \
                test "$(code_of "$QPORT" "$LIST") $(code_of "$QPORT" "$BATCH")" = "422 422"
            check "Prometheus under the limit: kpi --source, the same KPIs ($(head -c 200 "$TMP/kq-$lim.err"))" \
                cmp "$TMP/k-Prometheus.json" "$TMP/kq-$lim.json"
        else
            check "Prometheus, one node over the limit: exit 1, no figure, the node and the query named" \
                bash -c '[[ $0 == 1 && ! -s $1 ]] && grep -q "node n1 alone is over.*prometheus://127.0.0.1:$3: query .*{node=~\"n1\"}.*HTTP 422: .*too many samples" "$2"' \
                "$rc" "$TMP/kq-$lim.json" "$TMP/kq-$lim.err" "$QPORT"
        fi
    done
fi
# An engine with a low limit on samples per query (-search.maxSamplesPerQuery): the nodes come
# from its index (no sample read) and a batch it refuses (422) is split down to one node, so the
# KPIs are those above; a limit that one node's queries exceed is an error naming the node and the
# query, no figure.
# start_limited PORTVAR LIMIT: a VictoriaMetrics holding the samples, over its limit at LIMIT.
start_limited() {
    local port
    port=$(free_port)
    bg "$VM" -storageDataPath="$TMP/vm-$2" -httpListenAddr="127.0.0.1:$port" -retentionPeriod=1y \
        -search.disableCache -search.maxSamplesPerQuery="$2" -loggerLevel=ERROR 2>>"$TMP/vm.log"
    wait_for 30 curl -sf "http://127.0.0.1:$port/health" -o /dev/null
    curl -sf "http://127.0.0.1:$port/api/v1/import/prometheus" --data-binary "@$TMP/import.txt"
    curl -sf "http://127.0.0.1:$port/internal/force_flush" -o /dev/null
    wait_for 30 $PY -c "
import json, urllib.request, urllib.parse
q = urllib.parse.urlencode({'query': 'count(last_over_time(wattage_gpu_energy_joules_total{gpu=\\\"0\\\"}[2h]))', 'time': '$B'})
d = json.load(urllib.request.urlopen('http://127.0.0.1:$port/api/v1/query?' + q))
assert d['data']['result']"
    printf -v "$1" %s "$port"
}
start_limited LPORT 2000
code_of "$LPORT" "$LIST" >"$TMP/c-list"
check "the limit refuses the nodes' list over the window's samples (HTTP $(cat "$TMP/c-list"))" \
    grep -qx 422 "$TMP/c-list"
code_of "$LPORT" "$BATCH" >"$TMP/c-batch"
check "the limit refuses a query of the three nodes' counters (HTTP $(cat "$TMP/c-batch"))" \
    grep -qx 422 "$TMP/c-batch"
"$BIN" kpi --source "victoriametrics://127.0.0.1:$LPORT" --from "$A" --to "$B" --json \
    >"$TMP/kl.json" 2>"$TMP/kl.err"
check "under the limit, kpi --source: exit 0 ($(head -c 300 "$TMP/kl.err"))" test $? -eq 0
check "under the limit, kpi --source: the same KPIs as without it" \
    cmp "$TMP/k-VictoriaMetrics.json" "$TMP/kl.json"
start_limited L2PORT 300
"$BIN" kpi --source "victoriametrics://127.0.0.1:$L2PORT" --from "$A" --to "$B" --json \
    >"$TMP/kl2.json" 2>"$TMP/kl2.err"
rc=$?
check "one node over the limit: exit 1, no figure, the node, the query and the engine's reason named ($(head -c 300 "$TMP/kl2.err"))" bash -c \
    '[[ $0 == 1 && ! -s $1 ]] && grep -q "node n\.2 alone is over.*victoriametrics://127.0.0.1:$3: query .*wattage_gpu_energy_joules_total{node=~.*maxSamplesPerQuery" "$2"' \
    "$rc" "$TMP/kl2.json" "$TMP/kl2.err" "$L2PORT"
check "no working store is left behind" test -z "$(ls -A "$TMP/tmpdir")"
finish
