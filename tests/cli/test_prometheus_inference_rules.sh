#!/usr/bin/env bash
# The shipped inference recording rules (deploy/prometheus/wattage-inference-rules.yml): promtool
# checks them and runs their unit tests (wattage-inference-rules.test.yml: a target's GPU energy
# from its counter wattage_inference_energy_joules_total (two models, a daemon restart), else,
# from an older daemon, from its processes joined on node, instance and pid, generated tokens, J/token, tokens/kWh and
# p99 e2e latency, for three nodes, a process that exits, a target that generates nothing, one
# configured with its GPUs). The tests must notice a changed join, a changed token or latency
# kind, a lost guard against +Inf. Then live: a real Prometheus evaluates the rules on a real
# daemon's series (fake NVML, two vLLM peers: one found from its port, one with gpus:), and each
# record equals the same PromQL written by hand on the raw series.
source "$(dirname "$0")/lib.sh"
PROMTOOL=${PROMTOOL:-promtool}
DIR=deploy/prometheus
RULES=wattage-inference-rules.yml
TESTS=wattage-inference-rules.test.yml
if ! command -v "$PROMTOOL" >/dev/null; then
    skip "the Prometheus inference rules" "promtool is not installed (scripts/deps.sh --test)"
    finish
fi
out=$("$PROMTOOL" check rules "$DIR/$RULES" 2>&1)
check "promtool check rules: valid ($out)" grep -q "SUCCESS: 5 rules found" <<<"$out"
out=$("$PROMTOOL" test rules "$DIR/$TESTS" 2>&1)
check "promtool test rules: every case passes" grep -q "SUCCESS" <<<"$out" ||
    printf '%s\n' "$out" | sed 's/^/# /'
names=$(grep -oE 'record: [a-z_:0-9]+' "$DIR/$RULES" | cut -d' ' -f2 | paste -sd' ')
check "the rules are the five documented ($names)" test "$names" = \
    "wattage:inference_energy_joules:rate5m wattage:inference_generated_tokens:rate5m wattage:inference_joules_per_generated_token:ratio_rate5m wattage:inference_generated_tokens_per_kwh:ratio_rate5m wattage:inference_e2e_latency_seconds:p99_5m"
# every series the rules read is one wattage exports (src/core/reading.c's names)
read_names=$(grep -v '^ *#' "$DIR/$RULES" | grep -oE '\bwattage_[a-z_]+' | sort -u)
absent=$(for n in $read_names; do grep -q "\"${n%_bucket}" src/core/reading.c || echo "$n"; done)
check "every series the rules read is a wattage metric ($(paste -sd' ' <<<"$read_names"))" \
    bash -c '[[ -n $1 && -z $2 ]] || { echo "# not in src/core/reading.c: $2"; false; }' _ "$read_names" "$absent"

# the unit tests hold the rules to their figures: each mutant fails them
mutant() { # SED_EXPR
    rm -rf "$TMP/m"
    mkdir -p "$TMP/m"
    sed "$1" "$DIR/$RULES" >"$TMP/m/$RULES"
    cmp -s "$DIR/$RULES" "$TMP/m/$RULES" && { echo "# the mutant $1 changes nothing"; return 1; }
    cp "$DIR/$TESTS" "$TMP/m/"
    ! "$PROMTOOL" test rules "$TMP/m/$TESTS" >"$TMP/m/out" 2>&1
}
check "a join without node (pids repeat across nodes) fails the tests" \
    mutant 's/on (node, instance, pid)/on (instance, pid)/'
check "a join on gpu-less labels (uuid) fails the tests" \
    mutant 's/on (node, instance, pid)/on (node, instance, uuid)/'
check "a join without pid fails the tests" \
    mutant 's/on (node, instance, pid) group_left (target)/on (node, instance) group_left (target)/'
check "a process that exits dropped at once (no max_over_time) fails the tests" \
    mutant 's/max_over_time(wattage_inference_process_info\[5m\])/wattage_inference_process_info/'
check "a target with gpus: given its first GPU only fails the tests" mutant '/,){1}(/d'
check "a target with gpus: and two models given its GPUs twice fails the tests" \
    mutant 's/max by (node, instance, job, gpu, target)/sum by (node, instance, job, gpu, target)/'
check "a target with gpus: given only its GPUs' processes (no idle) fails the tests" \
    mutant 's/sum by (node, instance, gpu) (rate(wattage_process_gpu_energy_joules_total\[5m\]))/sum by (node, instance, gpu) (rate(wattage_process_gpu_energy_joules_total{pid!=""}[5m]))/'
check "prompt tokens counted as generated fails the tests" \
    mutant 's/kind="generated"/kind=~"generated|prompt"/'
check "computed prompt tokens instead of generated fails the tests" \
    mutant 's/kind="generated"/kind="prompt_computed"/'
check "ttft instead of e2e fails the tests" mutant 's/kind="e2e"/kind="ttft"/'
check "p95 instead of p99 fails the tests" mutant 's/histogram_quantile(0.99,/histogram_quantile(0.95,/'
check "the quantile summed over models fails the tests" \
    mutant 's/by (node, instance, job, target, model, le)/by (node, instance, job, target, le)/'
check "a target with no tokens given +Inf J/token fails the tests" \
    mutant 's/(wattage:inference_generated_tokens:rate5m > 0)/wattage:inference_generated_tokens:rate5m/'
check "a target that used no energy given +Inf tokens/kWh fails the tests" \
    mutant 's/(wattage:inference_energy_joules:rate5m > 0)/wattage:inference_energy_joules:rate5m/'
check "a kWh of 3.6e3 J fails the tests" mutant 's/\* 3.6e6/* 3.6e3/'
check "the energy counter not used (the join for every target) fails the tests" \
    mutant 's/rate(wattage_inference_energy_joules_total\[5m\])/rate(wattage_inference_energy_joules_total{model="none"}[5m])/'
check "the counter's restart not taken as a reset (delta) fails the tests" \
    mutant 's/rate(wattage_inference_energy_joules_total\[5m\])/delta(wattage_inference_energy_joules_total[5m]) \/ 300/'
check "the counter of one model of a target only fails the tests" \
    mutant 's/rate(wattage_inference_energy_joules_total\[5m\])/max by (node, instance, job, target) (rate(wattage_inference_energy_joules_total[5m]))/'

# --- live: the rules on the series a real daemon exports, in a real Prometheus (rules evaluated
# every second). Fake NVML GPUs at 300, 120 and 5 W; the vLLM peer "served" found from its port
# (the fake lists its pid on GPU 0), the peer "pinned" configured with gpus [1, 2]. Each record,
# at the time it was evaluated, equals the same PromQL written out by hand on the raw series
# (the served peer's pid, GPUs 1 and 2), and J/token is the ratio of the records.
source "$(dirname "$0")/prometheus_lib.sh"
if ! command -v "$PROMETHEUS" >/dev/null || [[ ! -x $BIN ]]; then
    skip "the rules on a live daemon" "prometheus or $BIN is missing"
    finish
fi
PEER=tests/peers/inference_server.py
mkdir -p "$TMP/empty"
T0=$(python3 -c 'import time; print(round(time.time() - 60, 3))')
bg python3 "$PEER" --engine vllm --port-file "$TMP/served.port" --pid-file "$TMP/served.pid" --t0 "$T0"
bg python3 "$PEER" --engine vllm --port-file "$TMP/pinned.port" --t0 "$T0"
wait_for 10 test -s "$TMP/served.port" -a -s "$TMP/served.pid" -a -s "$TMP/pinned.port" ||
    { not_ok "the vLLM peers started"; finish; }
echo "0 $(cat "$TMP/served.pid") compute sm=60" >"$TMP/procs"
printf 'inference:\n  targets:\n    - name: served\n      url: http://127.0.0.1:%s/metrics\n    - name: pinned\n      url: http://127.0.0.1:%s/metrics\n      gpus: [1, 2]\n' \
    "$(cat "$TMP/served.port")" "$(cat "$TMP/pinned.port")" >"$TMP/w.yaml"
sed 's/interval: 15s/interval: 1s/' "$DIR/$RULES" >"$TMP/rules.yml"
WPORT=$(free_port)
WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=3 \
    FAKE_NVML_POWER=300,120,5 FAKE_NVML_PROCS_FILE=$TMP/procs \
    bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.5 --listen "127.0.0.1:$WPORT" \
    2>"$TMP/wattage.log"
start_prometheus "$(free_port)" "$WPORT" "rule_files:
  - $TMP/rules.yml"
wait_target_up 30 || { not_ok "Prometheus scrapes the daemon" "$(target_health)" "$(tail -5 "$TMP/wattage.log")"; finish; }
has() { prom_query "$1" | grep -q '"value"'; }
check "the served peer's processes are found and the records appear" wait_for 40 bash -c \
    "$(declare -f has prom_query); PROM_URL=$PROM_URL; sleep 1
     has 'wattage:inference_joules_per_generated_token:ratio_rate5m{target=\"served\"}' &&
     has 'wattage:inference_joules_per_generated_token:ratio_rate5m{target=\"pinned\"}'" ||
    { echo "# $(grep -i inference "$TMP/wattage.log" | tail -3)"; finish; }
sleep 4
out=$(python3 - "$PROM_URL" "$(cat "$TMP/served.pid")" <<'PY' 2>&1
import json, sys, time, urllib.parse, urllib.request
url, pid = sys.argv[1], sys.argv[2]
def q(e, t):
    r = json.load(urllib.request.urlopen(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": e, "time": t}), timeout=10))
    assert r["status"] == "success", (e, r)
    return {json.dumps({k: v for k, v in s["metric"].items() if k != "__name__"}, sort_keys=True): float(s["value"][1]) for s in r["data"]["result"]}
now = time.time() - 3
ts = q('timestamp(wattage:inference_joules_per_generated_token:ratio_rate5m{target="served"})', now)
(t,) = ts.values()
def one(e):
    v = q(e, t)
    assert len(v) == 1, (e, v)
    return next(iter(v.values()))
checks = {
  "served energy": ('wattage:inference_energy_joules:rate5m{target="served"}',
                    'sum(rate(wattage_inference_energy_joules_total{target="served"}[5m]))'),
  "pinned energy": ('wattage:inference_energy_joules:rate5m{target="pinned"}',
                    'sum(rate(wattage_inference_energy_joules_total{target="pinned"}[5m]))'),
  "served tokens": ('wattage:inference_generated_tokens:rate5m{target="served"}',
                    'sum(rate(wattage_inference_tokens_total{target="served",kind="generated"}[5m]))'),
  "served J/token": ('wattage:inference_joules_per_generated_token:ratio_rate5m{target="served"}',
                     'wattage:inference_energy_joules:rate5m{target="served"} / on() wattage:inference_generated_tokens:rate5m{target="served"}'),
  "pinned J/token": ('wattage:inference_joules_per_generated_token:ratio_rate5m{target="pinned"}',
                     'wattage:inference_energy_joules:rate5m{target="pinned"} / on() wattage:inference_generated_tokens:rate5m{target="pinned"}'),
  "served p99": ('wattage:inference_e2e_latency_seconds:p99_5m{target="served"}',
                 'histogram_quantile(0.99, sum by (le) (rate(wattage_inference_latency_seconds_bucket{target="served",kind="e2e"}[5m])))'),
}
said = []
for name, (rec, hand) in checks.items():
    a, b = one(rec), one(hand)
    assert a > 0 and abs(a - b) <= 1e-9 * abs(b), (name, a, b)
    said.append(f"{name} {a:.4g}")
# the served peer's pid is on GPU 0 alone, as the fake lists it, and so are its GPUs
assert set(json.loads(k)["gpu"] for k in q(f'wattage_process_gpu_energy_joules_total{{pid="{pid}"}}', t)) == {"0"}
assert set(json.loads(k)["gpus"] for k in q('wattage_inference_info{target="served"}', t)) == {"0"}
labels = q('wattage:inference_energy_joules:rate5m', t)
assert sorted(json.loads(k)["target"] for k in labels) == ["pinned", "served"], labels
print(", ".join(said))
PY
)
check "each record equals its PromQL on the raw series ($out)" bash -c '[[ $1 == *"served p99"* ]]' _ "$out"
finish
