#!/usr/bin/env bash
# Inference servers read from their own /metrics (inference.targets), on the real daemon with the
# fake NVML's GPUs: test peers serve vLLM (asked for OpenMetrics, as wattage asks), SGLang, TGI,
# Triton and llama.cpp expositions with counters that advance with a simulated load, exactly; the
# daemon tells each engine by its names, keeps the token, request and latency series on /metrics
# and in the store, and each stored token count lies between the peer's truth at the reading's
# time and one tick later. Faults (a server that hangs, answers a web page, 10 MB, a malformed or
# cut body) leave their target down, each said in the log, while the GPUs keep their ticks;
# a restarted server's counters are stored as they drop.
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2
PY=/usr/bin/python3
PEER=tests/peers/inference_server.py
T0=$($PY -c 'import time; print(round(time.time() - 60, 3))')

# check-config names the place of a bad target
bad() { # bad NAME EXPECT YAML
    printf '%s\n' "$3" >"$TMP/bad.yaml"
    local out
    out=$("$BIN" check-config "$TMP/bad.yaml" 2>&1)
    check "check-config: $1 ($out)" bash -c '[[ $1 == *"$2"* ]]' _ "$out" "$2"
}
bad "an engine it does not know" 'bad.yaml:4: inference.targets[0].engine' 'inference:
  targets:
    - name: a
      engine: ollama
      url: http://127.0.0.1:1/metrics'
bad "a tag that would hide a label" 'bad.yaml:5: inference.targets[0].tags.model' 'inference:
  targets:
    - name: a
      tags:
        model: x
      url: http://127.0.0.1:1/metrics'
bad "a GPU that is not an index" 'inference.targets[0].gpus[1]' 'inference:
  targets:
    - name: a
      gpus: [0, x]
      url: http://127.0.0.1:1/metrics'

declare -A engine=([vllm]=vllm [sglang]=sglang [tgi]=tgi [triton]=triton [llamacpp]=llamacpp
    [hang]=vllm [html]=vllm [huge]=vllm [malformed]=vllm [cut]=vllm)
declare -A ctl=([hang]=hang [html]=html [huge]="huge 10485760" [malformed]=malformed [cut]=truncated)
{
    printf 'inference:\n  targets:\n'
    for t in vllm sglang tgi triton llamacpp hang html huge malformed cut; do
        echo "${ctl[$t]:-ok}" >"$TMP/$t.ctl"
        bg $PY "$PEER" --engine "${engine[$t]}" --port-file "$TMP/$t.port" --control "$TMP/$t.ctl" \
            --t0 "$T0" --pid-file "$TMP/$t.pid"
        wait_for 10 test -s "$TMP/$t.port" || { not_ok "peer $t started"; finish; }
        # (the 10 MB body: a timeout long enough that a loaded machine hits the size limit first)
        printf '    - name: %s\n      url: http://127.0.0.1:%s/metrics\n      timeout: %s\n' \
            "$t" "$(cat "$TMP/$t.port")" "$([[ $t == huge ]] && echo 10s || echo 1s)"
        case $t in
        vllm) printf '      gpus: [0, 1]\n      tags:\n        precision: fp8\n' ;;
        triton) printf '      engine: triton\n' ;;
        tgi) printf '      model: bigcode/starcoder\n' ;;
        esac
    done
} >"$TMP/w.yaml"
check "check-config accepts the targets" "$BIN" check-config "$TMP/w.yaml"

port=$(free_port)
bg "$BIN" run -c "$TMP/w.yaml" --interval 0.5 --log-level debug --db "$TMP/w.db" \
    --listen "127.0.0.1:$port" >"$TMP/run.log" 2>&1
pid=$!
metrics() { curl -s "http://127.0.0.1:$port/metrics"; }
up_all() {
    local m
    m=$(metrics)
    for t in vllm sglang tgi triton llamacpp; do
        grep -q "^wattage_inference_up{target=\"$t\"} 1$" <<<"$m" || return 1
    done
}
check "every server is read (wattage_inference_up 1)" wait_for 20 up_all
sleep 3
metrics >"$TMP/m1"
for t in vllm sglang tgi triton llamacpp; do
    check "$t: told by its names (wattage_inference_info engine=\"$t\")" \
        grep -q "^wattage_inference_info{target=\"$t\",engine=\"$t\"" "$TMP/m1"
done
check "vllm: its GPUs and tags on the info series" grep -q \
    '^wattage_inference_info{target="vllm",engine="vllm",model="meta-llama/Llama-3.1-8B-Instruct",gpus="0,1",precision="fp8"} 1$' \
    "$TMP/m1"
check "tgi: the configured model where the server names none" grep -q \
    '^wattage_inference_tokens_total{target="tgi",model="bigcode/starcoder",kind="generated"} ' "$TMP/m1"
check "the token family is a counter" grep -q '^# TYPE wattage_inference_tokens_total counter$' "$TMP/m1"
for k in e2e ttft itl; do
    check "vllm: the $k histogram's +Inf bucket" grep -q \
        "^wattage_inference_latency_seconds_bucket{target=\"vllm\",model=\"meta-llama/Llama-3.1-8B-Instruct\",kind=\"$k\",le=\"+Inf\"} " \
        "$TMP/m1"
done
check "sglang: requests and the prompt tokens served from cache" bash -c \
    'grep -q "^wattage_inference_requests_total{target=\"sglang\"" "$1" &&
     grep -q "^wattage_inference_tokens_total{target=\"sglang\",model=\"meta-llama/Llama-3.1-8B-Instruct\",kind=\"prompt_cached\"}" "$1"' \
    _ "$TMP/m1"
for t in hang html huge malformed cut; do
    check "$t: down (wattage_inference_up 0)" grep -q "^wattage_inference_up{target=\"$t\"} 0$" "$TMP/m1"
done
check "the hang ends at its timeout, said" grep -q 'serving:hang: poll failed: .*imed out' "$TMP/run.log"
check "the web page is said" grep -q 'serving:html: poll failed: .*a web page (text/html' "$TMP/run.log"
wait_for 20 grep -q 'serving:huge: poll failed: .*larger than' "$TMP/run.log"
check "the 10 MB body is refused, said" grep -q 'serving:huge: poll failed: .*larger than' "$TMP/run.log"
check "the malformed body is named by its line" grep -q 'serving:malformed: poll failed: .*line [0-9]' "$TMP/run.log"
check "the cut body is refused" grep -q 'serving:cut: poll failed: ' "$TMP/run.log"
check "nothing of a bad body reaches /metrics" bash -c \
    '! grep -q "^wattage_inference_tokens_total{target=\"\(hang\|html\|huge\|malformed\|cut\)\"" "$1"' _ "$TMP/m1"

# the vLLM server restarts: its counters start again from 0, and are stored as they drop
now=$($PY -c 'import time; print(round(time.time(), 3))')
echo "reset $now" >"$TMP/vllm.ctl"
sleep 3
# a second model comes (the load's clock back at T0: the counters only rise), then goes while
# the e2e and ttft histograms take other bucket bounds (an upgrade)
second=$($PY -c 'import time; print(round(time.time(), 3))')
echo "model2 Qwen/Qwen2.5-7B" >"$TMP/vllm.ctl"
# each change waited for in the log (a loaded machine may scrape late), then a few scrapes more
wait_for 20 grep -q "inference: vllm: model Qwen/Qwen2.5-7B came" "$TMP/run.log"
sleep 2
third=$($PY -c 'import time; print(round(time.time(), 3))')
echo "buckets" >"$TMP/vllm.ctl"
wait_for 20 grep -q "latency bucket bounds changed" "$TMP/run.log"
changed=$($PY -c 'import time; print(round(time.time(), 3))')
sleep 2
kill -TERM "$pid"
wait "$pid"
check_ticks "the GPUs kept their ticks beside the failing and changing servers" "$TMP/run.log" 12
once() { # once NAME TEXT: TEXT is in the log on exactly one line
    check "$1, said once" bash -c '[[ $(grep -cF -- "$2" "$1") == 1 ]]' _ "$TMP/run.log" "$2"
}
L=meta-llama/Llama-3.1-8B-Instruct
once "the restart" "inference: vllm: model $L: counters dropped ("
once "a model that comes" "inference: vllm: model Qwen/Qwen2.5-7B came"
once "a model that goes" "inference: vllm: model Qwen/Qwen2.5-7B went"
once "bucket bounds that change" "inference: vllm: model $L: the ttft, e2e latency bucket bounds changed"
check "nothing said of the steady servers" bash -c \
    '! grep -E "inference: (sglang|tgi|triton|llamacpp): model .*(came|went|dropped|changed)" "$1"' \
    _ "$TMP/run.log"

stored "$TMP/w.db" 'wattage_inference_tokens_total{target="vllm",model="meta-llama/Llama-3.1-8B-Instruct",kind="generated"}' \
    >"$TMP/gen.csv"
msg=$($PY - "$TMP/gen.csv" "$PEER" "$T0" "$now" "$second" <<'PY' 2>&1
import json, subprocess, sys
rows = [l.split(",") for l in open(sys.argv[1]) if l.strip()]
pts = [(float(r[0]), float(r[-1])) for r in rows]
assert len(pts) >= 8, pts
peer, t0, reset, second = sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
def truth(origin, t):
    out = subprocess.check_output([sys.executable, peer, "--engine", "vllm", "--t0", repr(origin),
                                   "--truth", repr(origin), repr(t)])
    return next(iter(json.loads(out).values()))["gen"]
before = [p for p in pts if p[0] < reset - 0.01]
after = [p for p in pts if reset + 1.0 < p[0] < second - 0.01]
# a reading is stamped at its tick and scraped just after: the truth at the stamp <= the value
# <= the truth half a second (a tick) later
for t, v in before[-3:]:
    lo, hi = truth(t0, t), truth(t0, t + 0.5)
    assert lo <= v <= hi, (t, v, lo, hi)
for t, v in after[-2:]:
    lo, hi = truth(reset, t), truth(reset, t + 0.5)
    assert lo <= v <= hi, ("after the reset", t, v, lo, hi)
assert after and after[-1][1] < before[-1][1], "the counter did not drop at the restart"
assert all(b[1] <= a[1] for b, a in zip(before, before[1:])), "not monotonic before the restart"
print(f"{len(pts)} readings, {before[-1][1]:.0f} tokens before the restart, {after[-1][1]:.0f} after")
PY
)
check "the stored generated tokens follow the server's counter, to the token ($msg)" \
    bash -c '[[ $1 == *readings* ]]' _ "$msg"
# `wattage inference` over a window that holds the bucket change and the second model's stay
# and going. The tokens: each series' increase() (the counters run on from T0). The e2e p99:
# every bound's increase over the window, the old bounds' and the new ones', added up by le
# and taken by PromQL's histogram_quantile (sorted, the cumulative counts made monotonic, as
# bucketQuantile does): what histogram_quantile(0.99, sum by (le) (increase(...))) gives
# without increase()'s extrapolation to the window's edges, worked out here from the stored
# samples.
fromD=$($PY -c "print(f'{$second + 0.6:.3f}')")
toD=$($PY -c "print(f'{max($third + 2.5, $changed + 1.0):.3f}')")
"$BIN" inference --db "$TMP/w.db" --from "$fromD" --to "$toD" --json >"$TMP/d.json" 2>"$TMP/d.err"
check "inference over the changes exits 0 ($(cat "$TMP/d.err"))" test $? -eq 0
stored "$TMP/w.db" "wattage_inference_latency_seconds_bucket{target=\"vllm\",model=\"$L\",kind=\"e2e\"}" \
    "$fromD" >"$TMP/e2e.csv"
for m in "$L" Qwen/Qwen2.5-7B; do
    stored "$TMP/w.db" "wattage_inference_tokens_total{target=\"vllm\",model=\"$m\",kind=\"generated\"}" \
        "$fromD"
done >"$TMP/genD.csv"
msg=$($PY - "$TMP/d.json" "$TMP/e2e.csv" "$TMP/genD.csv" "$PEER" "$T0" "$fromD" "$toD" "$third" <<'PY' 2>&1
import collections, csv, json, math, re, subprocess, sys
d = json.load(open(sys.argv[1]))
peer, t0, a, b, third = sys.argv[4], sys.argv[5], float(sys.argv[6]), float(sys.argv[7]), float(sys.argv[8])
rows = {r["model"]: r for r in d["rows"] if r["target"] == "vllm"}
L, Q = "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B"
assert set(rows) == {L, Q}, list(rows)
def series(path):
    s = collections.defaultdict(list)
    for f in csv.reader(open(path)):
        if f and a <= float(f[0]) <= b:
            s[f[1]].append((float(f[0]), float(f[-1])))
    return s
def increase(v):
    return sum(y if y < x else y - x for (_, x), (_, y) in zip(v, v[1:]))
# the bounds: some stop at the change, others start there
bk = series(sys.argv[2])
le = {re.search(r'le="([^"]+)"', k).group(1): v for k, v in bk.items()}
before = {k for k, v in le.items() if v[-1][0] < third}
after = {k for k, v in le.items() if v[0][0] > third}
assert before and after, ("no bound stopped or started in the window", sorted(le))
inc = sorted(((math.inf if k == "+Inf" else float(k)), increase(v)) for k, v in le.items())
# promql/quantile.go bucketQuantile: +Inf last, the monotonic envelope, then the rank
assert inc[-1][0] == math.inf
c = [x[1] for x in inc]
for i in range(1, len(c)):
    c[i] = max(c[i], c[i - 1])
rank = 0.99 * c[-1]
i = next(k for k in range(len(c)) if c[k] >= rank)
if i == len(c) - 1:
    want = inc[-2][0]
else:
    lo, prev = (inc[i - 1][0], c[i - 1]) if i > 0 else (0.0, 0.0)
    want = lo + (inc[i][0] - lo) * (rank - prev) / (c[i] - prev)
got = rows[L]["e2e_latency_p99_seconds"]
assert math.isclose(got, want, rel_tol=1e-9), (got, want, inc)
assert rows[L]["latency_bounds_changed"] is True, rows[L]
# the tokens: increase() of each model's stored counter, within the peer's truth
gen = series(sys.argv[3])
def truth(model, x, y):
    out = subprocess.check_output([sys.executable, peer, "--engine", "vllm", "--t0", t0,
                                   "--model", model, "--truth", repr(x), repr(y)])
    return json.loads(out)[model]["gen"]
for m in (L, Q):
    v = next(v for k, v in gen.items() if f'model="{m}"' in k)
    assert math.isclose(rows[m]["generated_tokens"], increase(v), rel_tol=1e-12), (m, rows[m], increase(v))
    lo, hi = truth(m, v[0][0] + 0.5, v[-1][0]), truth(m, v[0][0], v[-1][0] + 0.5)
    assert lo <= rows[m]["generated_tokens"] <= hi, (m, lo, rows[m]["generated_tokens"], hi)
print(f"p99 e2e {got:.4f} s over {len(before)} old and {len(after)} new bounds of {len(inc)}; "
      f"{rows[L]['generated_tokens']:.0f} and {rows[Q]['generated_tokens']:.0f} tokens")
PY
)
check "a window across the bucket change and a model's coming and going: $msg" \
    bash -c '[[ $1 == "p99 e2e"* ]]' _ "$msg"
# A target without gpus: its serving processes are found from its port, through the real /proc
# (the peer listens on loopback; its parent, this shell, is not taken)
printf 'inference:\n  targets:\n    - name: found\n      url: http://127.0.0.1:%s/metrics\n' \
    "$(cat "$TMP/sglang.port")" >"$TMP/found.yaml"
port2=$(free_port)
WATTAGE_PROCFS_ROOT= bg "$BIN" run -c "$TMP/found.yaml" --interval 0.5 --db "$TMP/f.db" \
    --listen "127.0.0.1:$port2" >"$TMP/found.log" 2>&1
pid2=$!
peer=$(cat "$TMP/sglang.pid")
check "the serving process is found from the port (pid $peer)" wait_for 20 bash -c \
    "curl -s http://127.0.0.1:$port2/metrics | grep -qx 'wattage_inference_process_info{target=\"found\",pid=\"$peer\"} 1'"
check "and said once" bash -c '[[ $(grep -c "found: serving processes $2 (port" "$1") == 1 ]]' _ \
    "$TMP/found.log" "$peer"
kill -TERM "$pid2"
wait "$pid2"
n=$("$BIN" query --db "$TMP/w.db" --from 0 --to now --csv \
    'wattage_inference_latency_seconds_bucket{target="vllm",kind="e2e",le="+Inf"}' 2>/dev/null | tail -n +2 | wc -l)
check "the latency buckets are stored ($n readings of one)" test "$n" -ge 8
finish
