#!/usr/bin/env bash
# `wattage inference` on a store the real daemon wrote: the fake NVML's 2 GPUs and the vLLM test
# peer serving on them (gpus: [0, 1]), scraped every 0.5 s for about 20 s. Over a window before
# the server restarts, J/generated token is within 0.5 % of the truth (the fake's exact energy of
# GPUs 0 and 1 over the edges wattage reports, from_s and to_s, divided by the peer's generated
# tokens over the same edges), and the e2e p99 equals histogram_quantile(0.99, ...) computed here
# in Python on the peer's true bucket increases. Over a window that holds the restart, the tokens
# are counted as PromQL's increase() counts them. No series: exit 1; bad flags: exit 2.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/prometheus_lib.sh"

mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
PY=/usr/bin/python3
PEER=tests/peers/inference_server.py
EXACT=${WATTAGE_BUILD:-build}/tests/fakes/fake_nvml_energy
now=$($PY -c 'import time; print(round(time.time(), 3))')
T0=$($PY -c "print(round($now - 60, 3))")
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=3 FAKE_NVML_T0=$now FAKE_NVML_POWER=300,120,5

echo ok >"$TMP/vllm.ctl"
bg $PY "$PEER" --engine vllm --port-file "$TMP/vllm.port" --control "$TMP/vllm.ctl" --t0 "$T0" \
    --prefix-cache
# a quiet server on GPU 2: a request every 20 s, each done within 17 s, so it idles at times
bg $PY "$PEER" --engine vllm --port-file "$TMP/quiet.port" --t0 "$T0" --req-rate 0.05
wait_for 10 test -s "$TMP/vllm.port" || { not_ok "the vLLM peer started"; finish; }
wait_for 10 test -s "$TMP/quiet.port" || { not_ok "the quiet peer started"; finish; }
printf 'store:\n  flush_interval: 500ms\ninference:\n  targets:\n    - name: vllm\n      url: http://127.0.0.1:%s/metrics\n      gpus: [0, 1]\n      tags:\n        precision: fp8\n    - name: quiet\n      url: http://127.0.0.1:%s/metrics\n      gpus: [2]\n' \
    "$(cat "$TMP/vllm.port")" "$(cat "$TMP/quiet.port")" >"$TMP/w.yaml"
# the node's wall: a Modbus PDU outlet at a steady 2000 W (tests/peers/modbus_meter)
MODBUS_PEER=$(dirname "$BIN")/tests/peers/modbus_meter
printf 'input 0 float32 big 2000\n' >"$TMP/regs"
bg "$MODBUS_PEER" "$TMP/pdu.port" "$TMP/regs"
wait_for 10 test -s "$TMP/pdu.port" || { not_ok "the PDU peer started"; finish; }
cat >>"$TMP/w.yaml" <<Y
topology:
  node: node-i
  meters:
    - {target: pdu, point: outlet, role: pdu_outlet, node: node-i}
collectors:
  modbus:
    interval: 500ms
    targets:
      - name: pdu
        address: 127.0.0.1:$(cat "$TMP/pdu.port")
        registers:
          - {name: outlet, address: 0, function: input, type: float32, unit: W, metric: power}
Y

# usage errors need no store
"$BIN" inference --by gpu --db "$TMP/none.db" >/dev/null 2>"$TMP/e1"
rc=$?
check "--by gpu: exit 2, said ($(cat "$TMP/e1"))" bash -c \
    '[[ $1 == 2 ]] && grep -q -- "--by: expected model, target, tag or tag:KEY" "$2"' _ $rc "$TMP/e1"
"$BIN" inference --bogus >/dev/null 2>&1
check "an unknown flag: exit 2" test $? -eq 2
"$BIN" inference --from 10 --to 5 --db "$TMP/none.db" >/dev/null 2>&1
check "an empty window: exit 2" test $? -eq 2

port=$(free_port)
# a real Prometheus scrapes wattage's /metrics, started first: it waits for the daemon
have_prom=
if command -v "$PROMETHEUS" >/dev/null; then
    have_prom=1
    start_prometheus "$(free_port)" "$port"
fi
bg "$BIN" run -c "$TMP/w.yaml" --interval 0.5 --db "$TMP/w.db" --listen "127.0.0.1:$port" \
    >"$TMP/run.log" 2>&1
pid=$!
up() { curl -s "http://127.0.0.1:$port/metrics" | grep -q '^wattage_inference_up{target="vllm"} 1$'; }
check "the vLLM peer is read" wait_for 20 up
[[ -n $have_prom ]] && { wait_target_up 20 || not_ok "Prometheus scrapes wattage" "$(target_health)"; }
start=$($PY -c 'import time; print(round(time.time(), 3))')
sleep 13
reset=$($PY -c 'import time; print(round(time.time(), 3))')
echo "reset $reset" >"$TMP/vllm.ctl"
sleep 6
# a second model joins on the same GPUs (the load's clock back at T0: the counters only rise)
second=$($PY -c 'import time; print(round(time.time(), 3))')
echo "model2 Qwen/Qwen2.5-7B" >"$TMP/vllm.ctl"
sleep 6
kill -TERM "$pid"
wait "$pid"

# no series in the window: exit 1, said
"$BIN" inference --db "$TMP/w.db" --from 1000 --to 2000 >/dev/null 2>"$TMP/e2"
rc=$?
check "a window with no inference series: exit 1, said ($(cat "$TMP/e2"))" bash -c \
    '[[ $1 == 1 ]] && grep -q "no inference series" "$2"' _ $rc "$TMP/e2"

# window A: before the restart
fromA=$($PY -c "print(f'{$start + 0.3:.3f}')")
toA=$($PY -c "print(f'{$reset - 0.7:.3f}')")
"$BIN" inference --db "$TMP/w.db" --from "$fromA" --to "$toA" --json >"$TMP/a.json" 2>"$TMP/a.err"
check "inference --json exits 0 ($(cat "$TMP/a.err"))" test $? -eq 0
"$BIN" inference --db "$TMP/w.db" --from "$fromA" --to "$toA" >"$TMP/a.txt" 2>&1
check "the text output says kWh and that the prefill/decode split is estimated" bash -c \
    'grep -q "kWh" "$1" && grep -q "the split is estimated (the midpoint of" "$1" &&
     grep -q "prefill .* % ± .* of the energy (estimated" "$1"' _ "$TMP/a.txt"
msg=$($PY - "$TMP/a.json" "$PEER" "$T0" "$EXACT" <<'PY' 2>&1
import json, math, subprocess, sys
d = json.load(open(sys.argv[1]))
peer, t0, exact = sys.argv[2], sys.argv[3], sys.argv[4]
assert d["prefill_decode_split"] == "estimated" and "midpoint" in d["prefill_decode_split_method"], d
assert len(d["rows"]) == 2, d["rows"]
r = next(r for r in d["rows"] if r["target"] == "vllm")
assert r["target"] == "vllm" and r["model"] == "meta-llama/Llama-3.1-8B-Instruct", r
assert r["gpus"] == "0,1" and r["engine"] == "vllm" and r["energy_method"] == "counter", r
assert r["energy_split"] == "none" and r["energy_share"] == 1, r
assert r["gpus_shared"] is False and r["latency_bounds_changed"] is False, r
assert r["tags"] == {"precision": "fp8"}, r["tags"]
for k in ("generated_tokens_per_kwh", "joules_per_generated_token", "joules_per_prompt_token",
          "joules_per_request", "energy_joules", "energy_uncertainty_joules",
          "e2e_latency_p50_seconds", "ttft_latency_p95_seconds", "itl_latency_p99_seconds"):
    assert isinstance(r[k], (int, float)) and r[k] > 0, (k, r.get(k))
a, b = r["from_s"], r["to_s"]
assert d["from_s"] <= a < b <= d["to_s"], (a, b, d["from_s"], d["to_s"])

def truth(x, y):
    out = subprocess.check_output([sys.executable, peer, "--engine", "vllm", "--t0", t0,
                                   "--truth", repr(x), repr(y)])
    return next(iter(json.loads(out).values()))

def energy(x, y):
    return sum(float(subprocess.check_output([exact, g, repr(x), repr(y)])) for g in ("0", "1"))

def hq(q, les, counts):
    """PromQL's bucketQuantile (promql/quantile.go)."""
    b = sorted(((math.inf if le == "+Inf" else float(le)), c) for le, c in zip(les, counts))
    if b[-1][0] != math.inf or len(b) < 2 or b[-1][1] == 0:
        return math.nan
    rank = q * b[-1][1]
    i = next((k for k in range(len(b) - 1) if b[k][1] >= rank), len(b) - 1)
    if i == len(b) - 1:
        return b[-2][0]
    if i == 0 and b[0][0] <= 0:
        return b[0][0]
    start, end, count = 0.0, b[i][0], b[i][1]
    if i > 0:
        start, count, rank = b[i - 1][0], b[i][1] - b[i - 1][1], rank - b[i - 1][1]
    return start + (end - start) * (rank / count)

t = truth(a, b)
jpt_true = energy(a, b) / t["gen"]
err = r["joules_per_generated_token"] / jpt_true - 1
assert abs(err) < 0.005, ("J/token", r["joules_per_generated_token"], jpt_true, err)
# the bar holds the energy's sampling error; the tokens are counted exactly
# p99 of e2e: the peer's truth at the edges; a reading is stamped at its tick and scraped just
# after it, so a request that ends in between may move one edge by a scrape's latency
p99 = r["e2e_latency_p99_seconds"]
found = None
for da in (0, 0.01, 0.02, 0.05, 0.1):
    for db in (0, 0.01, 0.02, 0.05, 0.1):
        h = truth(a + da, b + db)["e2e"]
        if math.isclose(hq(0.99, h["le"], h["cumulative"]), p99, rel_tol=1e-9):
            found = (da, db)
            break
    if found:
        break
assert found is not None, ("p99", p99, hq(0.99, t["e2e"]["le"], t["e2e"]["cumulative"]))
print(f"J/token {r['joules_per_generated_token']:.5f} vs truth {jpt_true:.5f} ({100 * err:+.3f} %), "
      f"{r['generated_tokens']:.0f} tokens (truth {t['gen']}), e2e p99 {p99:.4f} s = PromQL's on the "
      f"truth (edges +{found[0]}/+{found[1]} s), window {b - a:.2f} s")
PY
)
check "window before the restart: $msg" bash -c '[[ $1 == "J/token "* ]]' _ "$msg"

# prompt tokens over window A: cached and computed as the peer's truth (vLLM's
# prompt_tokens_by_source), J and tokens/kWh per prompt token, and the estimated prefill/decode
# split worked out here from the stored histogram sums and tokens
for k in ttft e2e; do
    stored "$TMP/w.db" "wattage_inference_latency_seconds_sum{target=\"vllm\",kind=\"$k\"}" \
        "$fromA" >"$TMP/sum_$k.csv"
done
msg=$($PY - "$TMP/a.json" "$PEER" "$T0" "$TMP/sum_ttft.csv" "$TMP/sum_e2e.csv" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
peer, t0 = sys.argv[2], sys.argv[3]
r = next(r for r in d["rows"] if r["target"] == "vllm")
a, b = r["from_s"], r["to_s"]
out = subprocess.check_output([sys.executable, peer, "--engine", "vllm", "--t0", t0, "--truth",
                               repr(a), repr(b)])
t = next(iter(json.loads(out).values()))
assert t["cached"] > 0, t
assert r["prompt_tokens"] == t["prompt"] and r["prompt_cached_tokens"] == t["cached"], (r, t)
comp = t["prompt"] - t["cached"]
assert r["prompt_computed_tokens"] == comp, (r["prompt_computed_tokens"], comp)
e, u, gen = r["energy_joules"], r["energy_uncertainty_joules"], r["generated_tokens"]
close = lambda x, y: abs(x - y) <= 1e-9 * abs(y)
assert close(r["joules_per_computed_prompt_token"], e / comp), r
assert close(r["computed_prompt_tokens_per_kwh"], comp / (e / 3.6e6)), r
assert close(r["prompt_tokens_per_kwh"], t["prompt"] / (e / 3.6e6)), r
def inc(f):
    v = [float(l.split(",")[-1]) for l in open(f)
         if l.strip() and a - 1e-6 <= float(l.split(",")[0]) <= b + 1e-6]
    return sum(y if y < x else y - x for x, y in zip(v, v[1:]))
ft = min(1.0, inc(sys.argv[4]) / inc(sys.argv[5]))
fk = comp / (comp + gen)
assert close(r["prefill_energy_share_time"], ft), (r["prefill_energy_share_time"], ft)
assert close(r["prefill_energy_share_tokens"], fk), (r["prefill_energy_share_tokens"], fk)
f, half = (ft + fk) / 2, abs(fk - ft) / 2
assert close(r["prefill_energy_share_estimated"], f) and close(r["prefill_energy_share_bound"], half), r
assert close(r["prefill_energy_joules_estimated"] + r["decode_energy_joules_estimated"], e), r
assert close(r["prefill_joules_per_computed_prompt_token_estimated"], e * f / comp), r
assert close(r["prefill_joules_per_computed_prompt_token_bound"], (e * half + u * f) / comp), r
assert close(r["decode_joules_per_generated_token_estimated"], e * (1 - f) / gen), r
assert close(r["decode_joules_per_generated_token_bound"], (e * half + u * (1 - f)) / gen), r
print(f"{comp} of {t['prompt']} prompt tokens computed (truth), prefill {100 * f:.1f} % ± "
      f"{100 * half:.1f} (time {100 * ft:.1f} %, tokens {100 * fk:.1f} %)")
PY
)
check "prompt tokens and the estimated split: $msg" bash -c '[[ $1 == *"prompt tokens computed"* ]]' _ "$msg"

# the node's boundary over window A (-c names the PDU outlet as the node's wall): the GPUs'
# energy times wall / chips, the wall 2000 W and the chips the fake's exact energy of GPUs 0-2
"$BIN" inference -c "$TMP/w.yaml" --db "$TMP/w.db" --from "$fromA" --to "$toA" --json \
    >"$TMP/n.json" 2>"$TMP/n.err"
msg=$($PY - "$TMP/n.json" "$TMP/a.json" "$EXACT" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
r = next(r for r in d["rows"] if r["target"] == "vllm")
plain = next(r for r in json.load(open(sys.argv[2]))["rows"] if r["target"] == "vllm")
assert plain["node_boundary_energy_joules"] is None, plain  # no -c: no wall known
a, b = r["from_s"], r["to_s"]
ex = lambda g: float(subprocess.check_output([sys.argv[3], g, repr(a), repr(b)]))
chips = ex("0") + ex("1") + ex("2")
wall = 2000 * (b - a)
assert r["node_wall_from"] == "pdu_outlet", r
assert abs(r["node_wall_energy_joules"] / wall - 1) < 0.005, (r["node_wall_energy_joules"], wall)
assert abs(r["node_chips_energy_joules"] / chips - 1) < 0.005, (r["node_chips_energy_joules"], chips)
want = (ex("0") + ex("1")) * wall / chips
assert abs(r["node_boundary_energy_joules"] / want - 1) < 0.01, (r["node_boundary_energy_joules"], want)
jpt = r["node_boundary_energy_joules"] / r["generated_tokens"]
assert abs(r["node_joules_per_generated_token"] - jpt) < 1e-9 * jpt, r
# the other target over its own span (its scrapes, not vllm's): its GPU's part of the same wall
q = next(r for r in d["rows"] if r["target"] == "quiet")
qa, qb = q["from_s"], q["to_s"]
qx = lambda g: float(subprocess.check_output([sys.argv[3], g, repr(qa), repr(qb)]))
qwant = qx("2") * 2000 * (qb - qa) / (qx("0") + qx("1") + qx("2"))
assert abs(q["node_boundary_energy_joules"] / qwant - 1) < 0.01, (q["node_boundary_energy_joules"], qwant)
print(f"{r['node_boundary_energy_joules']:.1f} J at the node's boundary (truth {want:.1f} J) for "
      f"{r['energy_joules']:.1f} J of GPUs; {r['node_joules_per_generated_token']:.4f} J/token")
PY
)
check "node boundary: $msg" bash -c '[[ $1 == *"node'"'"'s boundary"* ]]' _ "$msg"

# gCO2e per 1k generated tokens over window A with the time-matched carbon: an intensity that
# changes every 3 s, imported with `wattage import carbon`; the truth is the fake's exact energy
# of GPUs 0 and 1 over each step's part of the window times its intensity and the assumed PUE
$PY - "$TMP/ci.csv" "$fromA" <<'PY'
import sys
a = int(float(sys.argv[2])) - 60
with open(sys.argv[1], "w") as f:
    f.write("timestamp,gco2_per_kwh\n")
    for i, t in enumerate(range(a, a + 300, 3)):
        f.write(f"{t},{(100, 400, 250)[i % 3]}\n")
PY
"$BIN" import carbon "$TMP/ci.csv" --zone TEST --db "$TMP/w.db" >/dev/null 2>&1
check "the carbon series is imported" test $? -eq 0
printf 'carbon:\n  zone: TEST\n  pue_assumed: 1.25\n' >"$TMP/carbon.yaml"
"$BIN" inference -c "$TMP/carbon.yaml" --db "$TMP/w.db" --from "$fromA" --to "$toA" --json \
    >"$TMP/g.json" 2>"$TMP/g.err"
msg=$($PY - "$TMP/g.json" "$TMP/ci.csv" "$EXACT" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
r = next(r for r in d["rows"] if r["target"] == "vllm")
a, b = r["from_s"], r["to_s"]
pts = [tuple(map(float, l.split(","))) for l in list(open(sys.argv[2]))[1:]]
g = 0.0
for (t, v), (t2, _) in zip(pts, pts[1:]):
    x, y = max(t, a), min(t2, b)
    if x < y:
        e = sum(float(subprocess.check_output([sys.argv[3], gpu, repr(x), repr(y)])) for gpu in "01")
        g += e / 3.6e6 * v * 1.25
assert r["carbon_pue"] == 1.25 and r["carbon_pue_source"] == "assumed", r
assert r["carbon_intensity_source"] == "measured", r
assert abs(r["gco2e"] / g - 1) < 0.005, (r["gco2e"], g)
per1k = 1000 * r["gco2e"] / r["generated_tokens"]
assert abs(r["gco2e_per_1k_generated_tokens"] - per1k) < 1e-9 * per1k, r
q = next(r for r in d["rows"] if r["target"] == "quiet")
assert q["gco2e"] > 0 and q["gco2e"] != r["gco2e"], q
print(f"{r['gco2e']:.4f} gCO2e (truth {g:.4f}), {r['gco2e_per_1k_generated_tokens']:.4f} g per 1k "
      f"generated tokens")
PY
)
check "carbon per 1k generated tokens: $msg" bash -c '[[ $1 == *"per 1k generated"* ]]' _ "$msg"

# window B: across the restart; the tokens as increase() counts them
fromB=$fromA
toB=$($PY -c "print(f'{$second - 0.2:.3f}')")
"$BIN" inference --db "$TMP/w.db" --from "$fromB" --to "$toB" --json >"$TMP/b.json" 2>"$TMP/b.err"
check "inference across the restart exits 0 ($(cat "$TMP/b.err"))" test $? -eq 0
stored "$TMP/w.db" 'wattage_inference_tokens_total{target="vllm",kind="generated"}' "$fromB" \
    >"$TMP/gen.csv"
msg=$($PY - "$TMP/b.json" "$TMP/gen.csv" "$PEER" "$T0" "$reset" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
peer, t0, reset = sys.argv[3], sys.argv[4], float(sys.argv[5])
r = next(r for r in d["rows"] if r["target"] == "vllm")
a, b = r["from_s"], r["to_s"]
pts = [(float(l.split(",")[0]), float(l.split(",")[-1])) for l in open(sys.argv[2]) if l.strip()]
pts = [p for p in pts if a - 1e-6 <= p[0] <= b + 1e-6]
v = [p[1] for p in pts]
assert any(y < x for x, y in zip(v, v[1:])), "no drop in the stored counter"
inc = sum(y if y < x else y - x for x, y in zip(v, v[1:]))
assert abs(r["generated_tokens"] - inc) < 1e-6, ("not increase()", r["generated_tokens"], inc)
def gen(origin, x, y):
    out = subprocess.check_output([sys.executable, peer, "--engine", "vllm", "--t0", repr(origin),
                                   "--truth", repr(x), repr(y)])
    return next(iter(json.loads(out).values()))["gen"]
# the tokens after the last scrape before the restart are lost, as increase() loses them
hi = gen(float(t0), a, reset) + gen(reset, reset, b + 0.5)
lo = gen(float(t0), a + 0.5, reset - 0.6) + gen(reset, reset, b)
assert lo <= r["generated_tokens"] <= hi, (lo, r["generated_tokens"], hi)
print(f"{r['generated_tokens']:.0f} tokens across the restart (increase() of the stored samples; "
      f"truth between {lo} and {hi}); last - first would say {v[-1] - v[0]:.0f}")
PY
)
check "window across the restart: $msg" bash -c '[[ $1 == *"across the restart"* ]]' _ "$msg"

# Prometheus: histogram_quantile(0.99, increase(...[8s])) before the restart equals wattage
# inference's p99 over the stored ticks whose buckets are the ones Prometheus scraped first and
# last in that range (its samples are wattage's ticks, read on its own clock)
if [[ -z $have_prom ]]; then
    skip "Prometheus's histogram_quantile equals wattage inference's p99" \
        "prometheus is not installed (scripts/deps.sh --test)"
else
    te=$($PY -c "print(f'{$reset - 0.3:.3f}')")
    sel='wattage_inference_latency_seconds_bucket{target="vllm",model="meta-llama/Llama-3.1-8B-Instruct",kind="e2e"}'
    prom_query "histogram_quantile(0.99, increase($sel[8s]))" "$te" >"$TMP/pq.json"
    prom_query "$sel[8s]" "$te" >"$TMP/pr.json"
    stored "$TMP/w.db" "$sel" "$fromA" >"$TMP/buckets.csv"
    edges=$($PY - "$TMP/pr.json" "$TMP/buckets.csv" <<'PY' 2>&1
import collections, csv, json, re, sys
res = json.load(open(sys.argv[1]))["data"]["result"]
prom = collections.defaultdict(dict)
for s in res:
    for ts, v in s["values"]:
        prom[float(ts)][s["metric"]["le"]] = float(v)
ts = sorted(prom)
assert len(ts) >= 2, f"{len(ts)} Prometheus samples in the range"
ticks = collections.defaultdict(dict)
for row in csv.reader(open(sys.argv[2])):
    if row:
        ticks[float(row[0])][re.search(r'le="([^"]+)"', row[1]).group(1)] = float(row[-1])
def tick_of(vec):
    m = [t for t in sorted(ticks) if ticks[t] == vec]
    assert m, ("no stored tick with the buckets Prometheus scraped", vec)
    return m[-1]
print(f"{tick_of(prom[ts[0]]) - 0.001:.3f} {tick_of(prom[ts[-1]]) + 0.001:.3f} {len(ts)}")
PY
)
    read -r pa pb pn <<<"$edges"
    [[ ${pn:-} =~ ^[0-9]+$ ]] || pa=0 pb=1
    "$BIN" inference --db "$TMP/w.db" --from "$pa" --to "$pb" --json >"$TMP/p.json" 2>&1
    [[ ${pn:-} =~ ^[0-9]+$ ]] || echo "$edges" >"$TMP/p.json"
    msg=$($PY - "$TMP/pq.json" "$TMP/p.json" <<'PY' 2>&1
import json, math, sys
res = json.load(open(sys.argv[1]))["data"]["result"]
assert len(res) == 1, res
prom = float(res[0]["value"][1])
r = next(r for r in json.load(open(sys.argv[2]))["rows"] if r["target"] == "vllm")
w = r["e2e_latency_p99_seconds"]
assert math.isclose(prom, w, rel_tol=1e-9), (prom, w)
print(f"p99 e2e {w:.6f} s, Prometheus {prom:.6f} s")
PY
)
    check "Prometheus's histogram_quantile equals wattage inference's p99 (${pn:-?} samples: $msg)" \
        bash -c '[[ $1 == "p99 e2e"* ]]' _ "$msg"
fi

# window C: two models share the target's GPUs by their generated tokens
fromC=$($PY -c "print(f'{$second + 0.6:.3f}')")
"$BIN" inference --db "$TMP/w.db" --from "$fromC" --to now --json >"$TMP/c.json" 2>"$TMP/c.err"
check "inference with two models exits 0 ($(cat "$TMP/c.err"))" test $? -eq 0
msg=$($PY - "$TMP/c.json" "$EXACT" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
rows = {r["model"]: r for r in d["rows"] if r["target"] == "vllm"}
assert set(rows) == {"meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B"}, list(rows)
r1, r2 = rows.values()
assert r1["energy_split"] == r2["energy_split"] == "generated_tokens", (r1, r2)
assert (r1["from_s"], r1["to_s"]) == (r2["from_s"], r2["to_s"]), (r1, r2)
a, b = r1["from_s"], r1["to_s"]
exact = sum(float(subprocess.check_output([sys.argv[2], g, repr(a), repr(b)])) for g in "01")
total = r1["energy_joules"] + r2["energy_joules"]
assert abs(total / exact - 1) < 0.005, (total, exact)
gen = r1["generated_tokens"] + r2["generated_tokens"]
for r in (r1, r2):
    assert abs(r["energy_share"] - r["generated_tokens"] / gen) < 1e-12, r
    assert abs(r["joules_per_generated_token"] - total / gen) < 1e-9 * total, r
print(f"shares {r1['energy_share']:.3f} + {r2['energy_share']:.3f} of {total:.1f} J "
      f"(exact {exact:.1f} J), one J/token {total / gen:.4f} for both")
PY
)
check "two models on one target: $msg" bash -c '[[ $1 == shares* ]]' _ "$msg"

"$BIN" inference --db "$TMP/w.db" --from "$fromA" --to "$toA" --by model --json >"$TMP/m.json"
check "--by model: one row per model, its targets added up" $PY -c '
import json, sys
d = json.load(open(sys.argv[1])); r = d["rows"]
assert d["by"] == "model" and len(r) == 1 and "target" not in r[0], d
a = json.load(open(sys.argv[2]))["rows"]
e, g = (sum(x[k] for x in a) for k in ("energy_joules", "generated_tokens"))
assert abs(r[0]["energy_joules"] - e) < 1e-6 and r[0]["generated_tokens"] == g, (r, a)
assert abs(r[0]["joules_per_generated_token"] - e / g) < 1e-9, r' \
    "$TMP/m.json" "$TMP/a.json"

# --by tag:precision and --by tag over the two models' window: sums of energy and tokens, the
# ratios computed again on the sums, the target's idle seconds once
"$BIN" inference --db "$TMP/w.db" --from "$fromC" --to now --by tag:precision --json >"$TMP/t1.json"
"$BIN" inference --db "$TMP/w.db" --from "$fromC" --to now --by tag --json >"$TMP/t2.json"
"$BIN" inference --db "$TMP/w.db" --from "$fromC" --to now --by tag:precision >"$TMP/t1.txt"
msg=$($PY - "$TMP/c.json" "$TMP/t1.json" "$TMP/t2.json" "$TMP/t1.txt" <<'PY' 2>&1
import json, sys
c = json.load(open(sys.argv[1]))["rows"]
t1, t2 = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
assert t1["by"] == "tag:precision" and t2["by"] == "tag", (t1["by"], t2["by"])
by1 = {r["tags"]["precision"]: r for r in t1["rows"]}
assert set(by1) == {"fp8", ""}, by1
by2 = {json.dumps(r["tags"], sort_keys=True): r for r in t2["rows"]}
assert set(by2) == {'{"precision": "fp8"}', "{}"}, list(by2)
for key, quiet in (("fp8", False), ("", True)):
    rows = [r for r in c if (r["target"] == "quiet") == quiet]
    g = by1[key]
    assert "target" not in g and "model" not in g, g
    e = sum(r["energy_joules"] for r in rows)
    gen = sum(r["generated_tokens"] for r in rows)
    req = sum(r["requests"] for r in rows)
    assert abs(g["energy_joules"] - e) < 1e-6 * e, (g["energy_joules"], e)
    assert g["generated_tokens"] == gen and g["requests"] == req, (g, gen, req)
    if gen:
        assert abs(g["joules_per_generated_token"] - e / gen) < 1e-9 * e / gen, g
        assert abs(g["generated_tokens_per_kwh"] - gen / (e / 3.6e6)) < 1e-6 * gen / (e / 3.6e6), g
    else:
        assert g["joules_per_generated_token"] is None, g
    assert g["idle_seconds"] == rows[0]["idle_seconds"], (g["idle_seconds"], rows[0])
    g2 = by2['{"precision": "fp8"}' if key else "{}"]
    assert g2["energy_joules"] == g["energy_joules"], (g2, g)
vl = [r for r in c if r["target"] == "vllm"]
assert len(vl) == 2, vl
txt = open(sys.argv[4]).read()
assert "precision=\"fp8\"" in txt or "precision=fp8" in txt, txt
print(f"fp8: {by1['fp8']['energy_joules']:.1f} J over {by1['fp8']['generated_tokens']:.0f} "
      f"tokens of {len(vl)} models, {by1['fp8']['joules_per_generated_token']:.4f} J/token")
PY
)
check "--by tag: $msg" bash -c '[[ $1 == fp8:* ]]' _ "$msg"

# A/B: two targets over window A, and one window against a model in another window; the noise
# of each difference as report --compare takes it, from each window's 6 equal pieces
"$BIN" inference --db "$TMP/w.db" --from "$fromA" --to "$toA" --compare target=vllm target=quiet \
    --json >"$TMP/ab.json" 2>"$TMP/ab.err"
check "--compare two targets exits 0 ($(cat "$TMP/ab.err"))" test $? -eq 0
read -r p0 p1 < <($PY -c "
from decimal import Decimal as D
a, b = int(D('$fromA') * 10**9), int(D('$toA') * 10**9)
print(f'{D(a + (b - a) * 1 // 6) / 10**9}', f'{D(a + (b - a) * 2 // 6) / 10**9}')")
"$BIN" inference --db "$TMP/w.db" --from "$p0" --to "$p1" --json >"$TMP/piece.json"
"$BIN" inference --db "$TMP/w.db" --compare "$fromA..$toA" "model=Qwen/Qwen2.5-7B@$fromC..now" \
    --json >"$TMP/ab2.json" 2>"$TMP/ab2.err"
check "--compare two windows exits 0 ($(cat "$TMP/ab2.err"))" test $? -eq 0
msg=$($PY - "$TMP/ab.json" "$TMP/a.json" "$TMP/piece.json" "$TMP/ab2.json" "$TMP/c.json" <<'PY' 2>&1
import json, math, statistics, sys
ab, a, piece, ab2, c = (json.load(open(f)) for f in sys.argv[1:6])
rows = {r["target"]: r for r in a["rows"]}
f = {x["key"]: x for x in ab["figures"]}
assert ab["a"]["select"] == "target=vllm" and ab["pieces"] == 6, ab["a"]
for side, t in (("a", "vllm"), ("b", "quiet")):
    assert ab[side]["energy_joules"] == rows[t]["energy_joules"], (ab[side], rows[t])
tpk = f["generated_tokens_per_kwh"]
assert tpk["a"] == rows["vllm"]["generated_tokens_per_kwh"], tpk
assert tpk["b"] == rows["quiet"]["generated_tokens_per_kwh"], tpk
# (to the last bits of a double: the JSON prints each figure to 15 digits when that reads back)
assert abs(tpk["difference"] - (tpk["b"] - tpk["a"])) <= 1e-12 * max(abs(tpk["a"]), abs(tpk["b"])), tpk
def se(p):
    p = [x for x in p if x is not None]
    return statistics.stdev(p) / math.sqrt(len(p))
noise = 2 * math.sqrt(se(tpk["pieces_a"]) ** 2 + se(tpk["pieces_b"]) ** 2)
assert abs(tpk["noise"] - noise) < 1e-9 * noise, (tpk["noise"], noise)
assert tpk["exceeds_noise"] is True, tpk
# the second piece of A is `wattage inference` over that piece
pv = next(r for r in piece["rows"] if r["target"] == "vllm")
assert abs(f["joules_per_generated_token"]["pieces_a"][1] - pv["joules_per_generated_token"]) < 1e-9, (
    f["joules_per_generated_token"]["pieces_a"], pv["joules_per_generated_token"])
# windows: A is every row of window A added up, B the second model alone in window C
g = {x["key"]: x for x in ab2["figures"]}["joules_per_generated_token"]
e = sum(r["energy_joules"] for r in a["rows"]); n = sum(r["generated_tokens"] for r in a["rows"])
assert abs(g["a"] - e / n) < 1e-9 * e / n, (g["a"], e / n)
q = next(r for r in c["rows"] if r["model"] == "Qwen/Qwen2.5-7B")
assert abs(g["b"] - q["joules_per_generated_token"]) < 1e-9, (g["b"], q)
print(f"tokens/kWh {tpk['a']:.0f} vs {tpk['b']:.0f}, noise {tpk['noise']:.0f}: exceeds; "
      f"J/token {g['a']:.4f} (A) vs {g['b']:.4f} (Qwen, C), noise {g['noise']}")
PY
)
check "--compare: $msg" bash -c '[[ $1 == "tokens/kWh"* ]]' _ "$msg"
"$BIN" inference --db "$TMP/w.db" --compare model=x >/dev/null 2>"$TMP/e3"
check "--compare with one operand: exit 2" test $? -eq 2
"$BIN" inference --db "$TMP/w.db" --compare nothing target=vllm >/dev/null 2>"$TMP/e4"
check "--compare 'nothing': exit 2, said ($(cat "$TMP/e4"))" grep -q "'nothing': expected" "$TMP/e4"
"$BIN" inference --db "$TMP/w.db" --compare precision=bf16 precision=fp8 >/dev/null 2>"$TMP/e5"
rc=$?
check "--compare a side with no rows: exit 1, said ($(cat "$TMP/e5"))" bash -c \
    '[[ $1 == 1 ]] && grep -q "no inference series match .precision=bf16." "$2"' _ $rc "$TMP/e5"

# `wattage status`: one line per target over the last 5 minutes, the figures of
# `wattage inference --by target` over the same stretch (nothing was stored since)
printf 'store:\n  path: %s\n' "$TMP/w.db" >"$TMP/status.yaml"
"$BIN" status -c "$TMP/status.yaml" >"$TMP/status.txt" 2>&1
"$BIN" inference --db "$TMP/w.db" --from -5m --by target --json >"$TMP/st.json"
msg=$($PY - "$TMP/status.txt" "$TMP/st.json" <<'PY' 2>&1
import json, re, sys
txt = open(sys.argv[1]).read()
rows = {r["target"]: r for r in json.load(open(sys.argv[2]))["rows"]}
assert "serving, last 300 s" in txt, txt
for t in ("vllm", "quiet"):
    m = re.search(rf"^{t} \(vllm, GPUs ([0-9,]+)\): (\S+) J ± \S+ per generated token, (\S+) "
                  rf"tokens/kWh, e2e p99 (\S+) s", txt, re.M)
    assert m, (t, txt)
    r = rows[t]
    assert m.group(1) == r["gpus"], (m.group(1), r["gpus"])
    assert m.group(2) == f"{r['joules_per_generated_token']:.4f}", (m.group(2), r)
    assert m.group(3) == f"{r['generated_tokens_per_kwh']:.0f}", (m.group(3), r)
print(f"vllm {rows['vllm']['joules_per_generated_token']:.4f} J/token in both")
PY
)
check "status says each target: $msg" bash -c '[[ $1 == vllm*"in both" ]]' _ "$msg"

# the report's Serving section over window A: the rows of `wattage inference` in its JSON, a
# table in its HTML and Markdown
"$BIN" report --db "$TMP/w.db" --from "$fromA" --to "$toA" --format json -o "$TMP/r.json" 2>"$TMP/r.err"
check "report -F json exits 0" test $? -eq 0
"$BIN" report --db "$TMP/w.db" --from "$fromA" --to "$toA" -o "$TMP/r.html" 2>/dev/null
"$BIN" report --db "$TMP/w.db" --from "$fromA" --to "$toA" --format md -o "$TMP/r.md" 2>/dev/null
msg=$($PY - "$TMP/r.json" "$TMP/a.json" "$TMP/r.html" "$TMP/r.md" <<'PY' 2>&1
import json, sys
rep = json.load(open(sys.argv[1]))
a = {r["target"]: r for r in json.load(open(sys.argv[2]))["rows"]}
s = {r["target"]: r for r in rep["serving"]}
assert set(s) == set(a), (list(s), list(a))
for t in a:
    for k in ("energy_joules", "generated_tokens", "joules_per_generated_token",
              "e2e_latency_p99_seconds", "idle_energy_joules"):
        assert s[t][k] == a[t][k], (t, k, s[t][k], a[t][k])
html, md = open(sys.argv[3]).read(), open(sys.argv[4]).read()
assert "<h2>Serving</h2><table id='serving'>" in html and "<td>vllm</td>" in html, "html"
jpt = f"{a['vllm']['joules_per_generated_token']:.4f}"
assert "## Serving" in md and f"| vllm | meta-llama/Llama-3.1-8B-Instruct |" in md and jpt in md, md
print(f"{len(s)} rows, vllm {jpt} J/token in JSON, HTML and Markdown")
PY
)
check "report's Serving section: $msg" bash -c '[[ $1 == *"in JSON, HTML and Markdown" ]]' _ "$msg"

# idle energy of the quiet server: GPU 2 over the stretches between two scrapes that both say
# nothing runs or waits, worked out here from the stored gauges and the fake's exact energy
"$BIN" inference --db "$TMP/w.db" --from "$fromA" --to now --by target --json >"$TMP/q.json"
for g in running waiting; do
    stored "$TMP/w.db" "wattage_inference_requests_$g{target=\"quiet\"}" "$fromA" >"$TMP/$g.csv"
done
msg=$($PY - "$TMP/q.json" "$TMP/running.csv" "$TMP/waiting.csv" "$EXACT" <<'PY' 2>&1
import collections, json, subprocess, sys
d = json.load(open(sys.argv[1]))
assert d["by"] == "target" and len(d["rows"]) == 2, d
r = next(r for r in d["rows"] if r["target"] == "quiet")
a, b = r["from_s"], r["to_s"]
busy = collections.defaultdict(float)
for f in sys.argv[2:4]:
    for l in open(f):
        if l.strip():
            t, v = float(l.split(",")[0]), float(l.split(",")[-1])
            if a - 1e-6 <= t <= b + 1e-6:
                busy[t] += v
ts = sorted(busy)
gap = 3 * (ts[-1] - ts[0]) / (len(ts) - 1)
spans = []
for x, y in zip(ts, ts[1:]):
    if busy[x] == 0 and busy[y] == 0 and y - x <= gap + 1e-6:
        if spans and spans[-1][1] == x:
            spans[-1][1] = y
        else:
            spans.append([x, y])
idle_s = sum(y - x for x, y in spans)
assert idle_s >= 1, ("no idle stretch to check", spans)
exact = sum(float(subprocess.check_output([sys.argv[4], "2", repr(x), repr(y)])) for x, y in spans)
assert abs(r["idle_seconds"] - idle_s) < 1e-3, (r["idle_seconds"], idle_s)
assert abs(r["idle_energy_joules"] / exact - 1) < 0.005, (r["idle_energy_joules"], exact)
assert r["idle_energy_joules"] < r["energy_joules"], r
print(f"{r['idle_energy_joules']:.1f} J over {idle_s:.1f} s in {len(spans)} stretches "
      f"(exact {exact:.1f} J) of {r['energy_joules']:.1f} J in {b - a:.1f} s")
PY
)
check "idle energy: $msg" bash -c '[[ $1 == *stretches* ]]' _ "$msg"
finish
