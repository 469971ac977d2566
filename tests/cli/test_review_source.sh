#!/usr/bin/env bash
# `wattage review --source victoriametrics://…`: the five weeks of tests/unit/test_review.c's
# planted store (two nodes; node-a's J/token +10% after its driver change on the reviewed week's
# Wednesday), written there for last week, are imported into a real VictoriaMetrics as every
# node's series (their node label, as remote write sends them); the review of the engine gives
# the same KPIs, change and finding as the review of the store itself, and --fail-on-finding
# exits 3 on it. A daemon that remote-writes into VictoriaMetrics: the engine's review of this
# week is that of the daemon's store. Bad input: an engine that does not answer (exit 1, its URL named), a week the
# engine holds no wattage series for (exit 1, named), --source with --db (exit 2); no working
# store is left behind. The same weeks backfilled into a real Prometheus (promtool): the same
# review from prometheus://; the daemon also remote-writes into a real Prometheus (its receiver):
# the same review of its week from there.
. tests/cli/lib.sh
. tests/cli/remote_write_lib.sh
PY=/usr/bin/python3
VM=${VICTORIA_METRICS:-victoria-metrics}
PROMETHEUS=${PROMETHEUS:-prometheus}
GEN=${WATTAGE_BUILD:-build}/tests/unit/test_review
if ! command -v "$VM" >/dev/null; then
    skip "review --source against VictoriaMetrics" "victoria-metrics is not installed (scripts/deps.sh --test)"
    finish
fi
mkdir -p "$TMP/tmpdir" "$TMP/store"
export TMPDIR=$TMP/tmpdir
# Last week, as the daemon would review it: the engine keeps it whatever the year.
read -r MON WEEK < <($PY -c '
import datetime as d, time
t = d.datetime.fromtimestamp(time.time(), d.timezone.utc).date()
m = t - d.timedelta(days=t.weekday() + 7)
y, w, _ = m.isocalendar()
print(int(d.datetime(m.year, m.month, m.day, tzinfo=d.timezone.utc).timestamp()), "%04d-W%02d" % (y, w))')
WATTAGE_REVIEW_DIR=$TMP/store WATTAGE_REVIEW_WEEK=$MON "$GEN" write_stores >"$TMP/gen.log" 2>&1
check "the stores are written" grep -q '^1 passed' "$TMP/gen.log"
DB=$TMP/store/planted.db
echo "{}" >"$TMP/empty.yaml"

VPORT=$(free_port)
VM_URL=http://127.0.0.1:$VPORT
"$VM" -storageDataPath="$TMP/vm" -httpListenAddr="127.0.0.1:$VPORT" -retentionPeriod=1y \
    -loggerLevel=ERROR >>"$TMP/vm.log" 2>&1 &
T_PIDS="$T_PIDS $!"
if ! wait_for 30 curl -sf "$VM_URL/health" -o /dev/null; then
    not_ok "VictoriaMetrics starts" "$(tail -5 "$TMP/vm.log")"
    finish
fi
# Every reading of the store, read through `wattage query`, into VictoriaMetrics' import API with
# its node label (tests/cli/vm_import.py: until VictoriaMetrics exports them all).
msg=$($PY - "$BIN" "$DB" "$VM_URL" <<'PY' 2>&1
import sys
sys.path.insert(0, "tests/cli")
import vm_import
binary, db, url = sys.argv[1:4]
lines = []
for s in vm_import.store_series(binary, db):
    assert s["node"], ("a series of the store's own node", s["metric"])
    lines.append(vm_import.line(s["metric"], dict(s["labels"], node=s["node"]), s["ts"], s["values"]))
n = vm_import.post(url, lines, timeout=60)
print(f"ok {len(lines)} series, {n} samples")
PY
)
check "the store's readings are in VictoriaMetrics ($msg)" bash -c '[[ $0 == ok* ]]' "$msg"

SRC=victoriametrics://127.0.0.1:$VPORT
R=("$BIN" review -c "$TMP/empty.yaml" --week "$WEEK")
"${R[@]}" --db "$DB" --json >"$TMP/local.json" 2>"$TMP/local.err"
check "the review of the store (exit 0)" test $? -eq 0
"${R[@]}" --source "$SRC" --json --fail-on-finding >"$TMP/src.json" 2>"$TMP/src.err"
rc=$?
check "review --source $SRC --fail-on-finding exits 3 on the finding (exit $rc: $(head -c 300 "$TMP/src.err"))" test $rc -eq 3
msg=$($PY - "$TMP/local.json" "$TMP/src.json" "$WEEK" <<'PY' 2>&1
import json, math, sys
a, b, week = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
assert a["week"] == b["week"] == week and a["from"] == b["from"], (a["week"], b["week"])
assert b["has_data"] is True and b["weeks_before"] == a["weeks_before"] == 4, b
# VictoriaMetrics keeps 12 significant digits of a value
near = lambda x, y: (x is None and y is None) or (
    x is not None and y is not None and abs(x - y) <= 1e-9 * max(abs(x), abs(y), 1e-12))
ka = {k["name"]: k for k in a["kpis"]}
kb = {k["name"]: k for k in b["kpis"]}
assert sorted(ka) == sorted(kb), (sorted(ka), sorted(kb))
for name in ka:
    x, y = ka[name], kb[name]
    assert x["verdict"] == y["verdict"] and x["available"] == y["available"], (name, x, y)
    assert near(x["value"], y["value"]), (name, x["value"], y["value"])
    assert x["band"]["days"] == y["band"]["days"], (name, x["band"], y["band"])
    assert all(near(p, q) for p, q in zip(x["weeks_before"], y["weeks_before"])), name
assert ka["joules_per_generated_token"]["available"] is True, ka["joules_per_generated_token"]
def same(x, y):  # equal, numbers near
    if isinstance(x, dict):
        return isinstance(y, dict) and sorted(x) == sorted(y) and all(same(x[k], y[k]) for k in x)
    if isinstance(x, list):
        return isinstance(y, list) and len(x) == len(y) and all(map(same, x, y))
    if isinstance(x, float) or isinstance(y, float):
        return near(x, y)
    return x == y
assert same(a["changes"], b["changes"]) and len(b["changes"]) == 1, (a["changes"], b["changes"])
[c] = b["changes"]
assert c["kind"] == "driver" and c["nodes"] == ["node-a"], c
fa = [(f["kpi"], f["change"], f["text"]) for f in a["findings"]]
fb = [(f["kpi"], f["change"], f["text"]) for f in b["findings"]]
assert fa == fb and len(fb) == 1, (fa, fb)
assert "since driver 570.86.15 -> 580.65.06 on node-a" in fb[0][2], fb
print("ok " + fb[0][2])
PY
)
check "the same KPIs, change and finding as the store's review: $msg" bash -c '[[ $0 == ok* ]]' "$msg"
"${R[@]}" --db "$DB" >"$TMP/local.txt" 2>/dev/null
"${R[@]}" --source "$SRC" >"$TMP/src.txt" 2>/dev/null
check "the same text as the store's review" cmp -s "$TMP/local.txt" "$TMP/src.txt"

# The same weeks in a real Prometheus: backfilled with promtool (Prometheus takes no old samples
# through remote write), then served with a retention that keeps them: the same review.
if ! command -v "$PROMETHEUS" >/dev/null || ! command -v promtool >/dev/null; then
    skip "review --source against Prometheus" "prometheus is not installed (scripts/deps.sh --test)"
else
    msg=$($PY -c 'import sys; sys.path.insert(0, "tests/cli"); import vm_import
print("ok %d samples" % vm_import.openmetrics(*sys.argv[1:4]))' "$BIN" "$DB" "$TMP/om.txt" 2>&1)
    check "the store's readings as OpenMetrics ($msg)" bash -c '[[ $0 == ok* ]]' "$msg"
    promtool tsdb create-blocks-from openmetrics --max-block-duration=1000h "$TMP/om.txt" \
        "$TMP/prom-data" >"$TMP/promtool.log" 2>&1
    check "promtool backfills them ($(tail -c 200 "$TMP/promtool.log"))" test $? -eq 0
    printf 'global:\n  scrape_interval: 1h\n' >"$TMP/prom.yml"
    PPORT=$(free_port)
    bg "$PROMETHEUS" --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/prom-data" \
        --storage.tsdb.retention.time=10y --web.listen-address="127.0.0.1:$PPORT" \
        --log.level=warn 2>>"$TMP/prom.log"
    check "Prometheus starts on them" wait_for 60 curl -sf "http://127.0.0.1:$PPORT/-/ready" -o /dev/null
    "${R[@]}" --source "prometheus://127.0.0.1:$PPORT" --json >"$TMP/prom.json" 2>"$TMP/prom.err"
    check "review --source prometheus:// (exit 0: $(head -c 200 "$TMP/prom.err"))" test $? -eq 0
    msg=$($PY - "$TMP/local.json" "$TMP/prom.json" <<'PY' 2>&1
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert b["has_data"] is True and a["weeks_before"] == b["weeks_before"], b
ka = {k["name"]: k for k in a["kpis"]}
kb = {k["name"]: k for k in b["kpis"]}
assert sorted(ka) == sorted(kb)
for n in ka:
    x, y = ka[n], kb[n]
    assert (x["verdict"], x["available"], x["band"]["days"]) == (y["verdict"], y["available"], y["band"]["days"]), (n, x, y)
    assert x["value"] == y["value"] or abs(x["value"] - y["value"]) <= 1e-9 * abs(x["value"]), (n, x["value"], y["value"])
assert a["changes"] == b["changes"] and len(b["changes"]) == 1, b["changes"]
fb = [f["text"] for f in b["findings"]]
assert [f["text"] for f in a["findings"]] == fb and len(fb) == 1, fb
print("ok " + fb[0])
PY
)
    check "Prometheus' review is the store's (KPIs, change, finding): $msg" bash -c '[[ $0 == ok* ]]' "$msg"
    "${R[@]}" --source "prometheus://127.0.0.1:$PPORT" >"$TMP/prom.txt" 2>/dev/null
    check "the same text as the store's review, from Prometheus" cmp -s "$TMP/local.txt" "$TMP/prom.txt"
fi

# A daemon (fake NVML, two GPUs) remote-writes into another VictoriaMetrics; once it has stopped
# and everything it stored arrived, the review of this week from the engine is the review of the
# daemon's own store.
VPORT2=$(free_port)
VM2=http://127.0.0.1:$VPORT2
"$VM" -storageDataPath="$TMP/vm2" -httpListenAddr="127.0.0.1:$VPORT2" -retentionPeriod=1y \
    -loggerLevel=ERROR >>"$TMP/vm2.log" 2>&1 &
T_PIDS="$T_PIDS $!"
check "the second VictoriaMetrics starts" wait_for 30 curl -sf "$VM2/health" -o /dev/null
mkdir -p "$TMP/empty"
# and into a real Prometheus (its remote-write receiver), where one is installed
PROM_EP=
if command -v "$PROMETHEUS" >/dev/null; then
    PPORT2=$(free_port)
    mkdir -p "$TMP/prom2"
    printf 'global:\n  scrape_interval: 1h\n' >"$TMP/prom2/prometheus.yml"
    bg "$PROMETHEUS" --config.file="$TMP/prom2/prometheus.yml" --storage.tsdb.path="$TMP/prom2/data" \
        --web.listen-address="127.0.0.1:$PPORT2" --web.enable-remote-write-receiver \
        --log.level=warn 2>>"$TMP/prom2.log"
    check "a Prometheus with its remote-write receiver starts" \
        wait_for 60 curl -sf "http://127.0.0.1:$PPORT2/-/ready" -o /dev/null
    PROM_EP="  - url: http://127.0.0.1:$PPORT2/api/v1/write
    name: prom
    deadline: 1s
    timeout: 2s
    max_backoff: 2s"
fi
rw_config "$TMP/w.yaml" node-v "  - url: $VM2/api/v1/write
    name: vm
    deadline: 1s
    timeout: 2s
    max_backoff: 2s" ${PROM_EP:+"$PROM_EP"}
WPORT=$(free_port)
WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty WATTAGE_NVML_LIBRARY=$FAKE_NVML \
    FAKE_NVML_GPUS=2 FAKE_NVML_UTIL=0:0:100000:0 bg "$BIN" run -c "$TMP/w.yaml" \
    --listen "127.0.0.1:$WPORT" --db "$TMP/w.db" --interval 0.5 2>"$TMP/run.log"
wpid=$!
check "the daemon remote-writes into VictoriaMetrics" rw_wait_caught_up "$WPORT" vm 30
sleep 3
[[ -n $PROM_EP ]] && check "and into Prometheus" rw_wait_caught_up "$WPORT" prom 30
kill "$wpid"
wait "$wpid" 2>/dev/null
check "everything the daemon stored arrived" rw_check_vm "$VM2" "$TMP/w.db" node-v vm \
    "$TMP/w.export" 0
NOW_WEEK=$($PY -c 'import datetime as d; y, w, _ = d.datetime.now(d.timezone.utc).isocalendar(); print("%04d-W%02d" % (y, w))')
W=("$BIN" review -c "$TMP/w.yaml" --week "$NOW_WEEK" --json)
"${W[@]}" --db "$TMP/w.db" >"$TMP/wl.json" 2>"$TMP/wl.err"
check "the review of the daemon's store (exit 0)" test $? -eq 0
"${W[@]}" --source "victoriametrics://127.0.0.1:$VPORT2" >"$TMP/ws.json" 2>"$TMP/ws.err"
check "the review of its engine (exit 0: $(head -c 200 "$TMP/ws.err"))" test $? -eq 0
SAME_WEEK=$(cat <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["has_data"] is True and b["has_data"] is True, (a["has_data"], b["has_data"])
ka = {k["name"]: k for k in a["kpis"]}
kb = {k["name"]: k for k in b["kpis"]}
for name in ka:
    x, y = ka[name], kb[name]
    assert x["verdict"] == y["verdict"] and x["available"] == y["available"], (name, x, y)
    if x["value"] is not None or y["value"] is not None:
        assert abs(x["value"] - y["value"]) <= 1e-9 * abs(x["value"]), (name, x["value"], y["value"])
u = kb["gpu_utilization"]["value"]
assert u is not None and 0 < u < 1, kb["gpu_utilization"]
assert a["changes"] == b["changes"] and a["findings"] == b["findings"], (b["changes"], b["findings"])
print(f"ok (GPU utilisation {u:.4f} from both)")
PY
)
msg=$($PY -c "$SAME_WEEK" "$TMP/wl.json" "$TMP/ws.json" 2>&1)
check "the engine's review of the daemon's week is the store's: $msg" bash -c '[[ $0 == ok* ]]' "$msg"
if [[ -n $PROM_EP ]]; then
    "${W[@]}" --source "prometheus://127.0.0.1:$PPORT2" >"$TMP/wp.json" 2>"$TMP/wp.err"
    check "the review of Prometheus (exit 0: $(head -c 200 "$TMP/wp.err"))" test $? -eq 0
    msg=$($PY -c "$SAME_WEEK" "$TMP/wl.json" "$TMP/wp.json" 2>&1)
    check "Prometheus' review of the daemon's week is the store's: $msg" bash -c '[[ $0 == ok* ]]' "$msg"
fi

# Bad input.
DOWN=victoriametrics://127.0.0.1:$(free_port)
"${R[@]}" --source "$DOWN" >/dev/null 2>"$TMP/down.err"
rc=$?
check "an engine that does not answer: exit 1, named ($(head -c 200 "$TMP/down.err"))" bash -c \
    '[[ $0 == 1 ]] && grep -qF "wattage review: --source $2: " "$1"' "$rc" "$TMP/down.err" "$DOWN"
"$BIN" review -c "$TMP/empty.yaml" --week 2020-W10 --source "$SRC" >/dev/null 2>"$TMP/none.err"
rc=$?
check "a week the engine has no wattage series for: exit 1, named ($(head -c 200 "$TMP/none.err"))" \
    bash -c '[[ $0 == 1 ]] && grep -qF "wattage review: --source $2 holds no wattage series" "$1"' \
    "$rc" "$TMP/none.err" "$SRC"
"${R[@]}" --source "$SRC" --db "$DB" >/dev/null 2>"$TMP/both.err"
check "--source with --db: exit 2" bash -c '[[ $0 == 2 ]] && grep -q "name one place" "$1"' $? "$TMP/both.err"
"${R[@]}" --source "nosuch://x" >/dev/null 2>"$TMP/bad.err"
check "a source that is not one: exit 2, named" bash -c '[[ $0 == 2 ]] && grep -q "nosuch://x" "$1"' $? "$TMP/bad.err"
check "no working store is left behind" test -z "$(ls -A "$TMP/tmpdir")"
finish
