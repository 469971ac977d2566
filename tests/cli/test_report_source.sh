#!/usr/bin/env bash
# `wattage report --source prometheus://…`: the report of a window from a real Prometheus that
# scrapes a test daemon (fake NVML, 2 GPUs, GPU 0 idle throughout) every second, against the
# report of the same window from the daemon's own store: the same GPUs, each GPU's energy within
# 3 % and its idle burn within 5 %; the jobs, which the engine does not give the report, said
# missing; HTML that draws the GPU charts. Bad input: an engine that does not answer (exit 1,
# named), a window the engine has nothing for (the report says so, exit 0), --source with --db
# (exit 2); no working store is left behind.
. tests/cli/lib.sh
. tests/cli/prometheus_lib.sh
PY=/usr/bin/python3
if ! command -v "$PROMETHEUS" >/dev/null; then
    skip "report --source against Prometheus" "prometheus is not installed (scripts/deps.sh --test)"
    finish
fi
mkdir -p "$TMP/sys" "$TMP/proc" "$TMP/tmpdir"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc TMPDIR=$TMP/tmpdir
export FAKE_NVML_T0=$(date +%s.%N) FAKE_NVML_GPUS=2 FAKE_NVML_UTIL=0:0:100000:0
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/c.yaml"
WPORT=$(free_port)
PPORT=$(free_port)
DB=$TMP/w.db
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/c.yaml" --db "$DB" --interval 0.5 \
    --listen "127.0.0.1:$WPORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 15 curl -sf "http://127.0.0.1:$WPORT/healthz" -o /dev/null
# The scrape names the node, as remote write does.
start_prometheus "$PPORT" "$WPORT" '        labels: {node: gpu-node-1}'
check "Prometheus scrapes the daemon" wait_target_up 30
W0=$(($(date +%s) + 2))
sleep 22
W1=$(($(date +%s) - 2))
SRC=prometheus://127.0.0.1:$PPORT
# The engine has the window's end (a scrape or two behind).
check "Prometheus holds the window's end" wait_for 10 $PY -c "
import json, sys, urllib.request, urllib.parse
q = urllib.parse.urlencode({'query': 'wattage_gpu_energy_joules_total[5s]', 'time': sys.argv[2]})
d = json.load(urllib.request.urlopen(sys.argv[1] + '/api/v1/query?' + q))
assert len(d['data']['result']) == 2" "$PROM_URL" "$((W1 + 2))"

"$BIN" report --db "$DB" -c "$TMP/c.yaml" --from "$W0" --to "$W1" --format json >"$TMP/local.json" 2>"$TMP/local.err"
check "the local report (exit 0)" test $? -eq 0
"$BIN" report --source "$SRC" -c "$TMP/c.yaml" --from "$W0" --to "$W1" --format json \
    >"$TMP/src.json" 2>"$TMP/src.err"
check "report --source $SRC (exit 0)" test $? -eq 0
msg=$($PY - "$TMP/local.json" "$TMP/src.json" "$SRC" <<'PY' 2>&1
import json, sys
a, b, src = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
ga = {g["uuid"]: g for g in a["gpus"]}
gb = {g["uuid"]: g for g in b["gpus"]}
assert sorted(ga) == sorted(gb) == ["GPU-fake-0000-0", "GPU-fake-0000-1"], (sorted(ga), sorted(gb))
assert all(g["node"] == "gpu-node-1" for g in b["gpus"]), b["gpus"]
worst = 0
for u in ga:
    x, y = ga[u], gb[u]
    assert x["energy_joules"] > 0 and y["coverage"] > 0.95, (u, x, y)
    d = abs(x["energy_joules"] - y["energy_joules"]) / x["energy_joules"]
    worst = max(worst, d)
    # A scrape stamps the value of the last poll (up to one 0.5-s interval older) with its own
    # time, which shifts the window's edges by as much in a 20-s window.
    assert d <= 0.03, (u, "energy", x["energy_joules"], y["energy_joules"])
    assert y["power_readings"] > 0, (u, y)
idle_a, idle_b = ga["GPU-fake-0000-0"]["idle_joules"], gb["GPU-fake-0000-0"]["idle_joules"]
assert idle_a > 0 and abs(idle_a - idle_b) <= 0.05 * idle_a, ("idle burn", idle_a, idle_b)
assert ga["GPU-fake-0000-1"]["idle_joules"] == gb["GPU-fake-0000-1"]["idle_joules"] == 0, "GPU 1 works"
assert b.get("source") == src, b.get("source")
assert any(m.startswith("jobs: not read from " + src) for m in b["missing"]), b["missing"]
assert not any("another node" in m for m in b["missing"]), b["missing"]
kinds = [f["kind"] for f in b["findings"]]
assert "idle_burn" in kinds, kinds
print(f"ok (worst energy difference {100 * worst:.2f} %)")
PY
)
check "the same GPUs, energy within 3 %, idle burn within 5 %, jobs said missing: $msg" \
    bash -c '[[ $0 == ok* ]]' "$msg"
check "the missing jobs are said on stderr too" grep -q "missing: jobs: not read from $SRC" "$TMP/src.err"
"$BIN" report --source "$SRC" -c "$TMP/c.yaml" --from "$W0" --to "$W1" -o "$TMP/src.html" 2>/dev/null
msg=$($PY - "$TMP/src.html" <<'PY' 2>&1
import re, sys
d = open(sys.argv[1]).read()
for name in ("util_power", "power_stack", "temperature"):
    m = re.search(r"<figure data-chart=.%s.(.*?)</figure>" % name, d, re.S)
    assert m, (name, "no such chart")
    assert "data-missing" not in m.group(0), (name, "drew nothing")
    assert re.search(r"<(circle|rect|path)\b", m.group(1)), (name, "no points")
print("ok")
PY
)
check "the HTML report from the engine draws the GPU charts ($msg)" test "$msg" = ok

# Bad input.
"$BIN" report --source "prometheus://127.0.0.1:$(free_port)" -c "$TMP/c.yaml" --from "$W0" \
    --to "$W1" --format json >/dev/null 2>"$TMP/down.err"
rc=$?
check "an engine that does not answer: exit 1, named ($(head -c 160 "$TMP/down.err"))" bash -c \
    '[[ $0 == 1 ]] && grep -q "wattage report: --source prometheus://127.0.0.1:" "$1"' "$rc" "$TMP/down.err"
"$BIN" report --source "$SRC" -c "$TMP/c.yaml" --from -3d --to -2d --format json >"$TMP/old.json" 2>"$TMP/old.err"
rc=$?
check "a window the engine has nothing for: exit 0, and the report says so" bash -c \
    '[[ $0 == 0 ]] && grep -q "holds no wattage series with a node label" "$2" && python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert not d[\"gpus\"] and any(\"no GPU power series\" in m for m in d[\"missing\"]), d" "$1"' "$rc" "$TMP/old.json" "$TMP/old.err"
"$BIN" report --source "$SRC" --db "$DB" --from "$W0" --to "$W1" >/dev/null 2>"$TMP/both.err"
check "--source with --db: exit 2" bash -c '[[ $0 == 2 ]] && grep -q "name one place" "$1"' $? "$TMP/both.err"
"$BIN" report --source "nosuch://x" --from "$W0" --to "$W1" >/dev/null 2>"$TMP/bad.err"
check "a source that is not one: exit 2, named" bash -c '[[ $0 == 2 ]] && grep -q "nosuch://x" "$1"' $? "$TMP/bad.err"
check "no working store is left behind" test -z "$(ls -A "$TMP/tmpdir")"
finish
