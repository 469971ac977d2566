#!/usr/bin/env bash
# The serving GPUs found from the processes, and the fleet counter of serving energy, on the real
# daemon (fake NVML: 3 GPUs) scraped by a real Prometheus. The vLLM peer "served" has no gpus:
# its port leads to its process tree, and the fake NVML lists only its child (which holds no
# socket, as vLLM's EngineCore) on GPU 1: its GPUs become {1}, said once in the log, on
# wattage_inference_info's gpus and in `wattage inference`; when NVML moves the child to GPU 2
# that is said once more. The peer "pinned" (gpus: [0, 2]) serves two models.
# wattage_inference_energy_joules_total: over a window, the ratio of its increase to the generated
# tokens' in PromQL is the truth (the fake's exact energy of the serving GPUs over the peer's true
# tokens, both between the readings behind the window's first and last scrape) within 3 %, and
# `wattage inference --json`'s J/token for the same window within 3 % too; two models of one target
# share their GPUs' energy whole. `wattage inference --source` on that Prometheus (the scrape names
# the node n1) gives the store's figures within 3 %, its targets and GPUs named n1/...; on
# VictoriaMetrics, which the daemon remote-writes to (the energy counter with the rest), within
# their bar (and 1 ms at each edge); with --db it exits 2, an engine that does not answer 1.
# A daemon restart is a counter reset (from about 0), never a drop to some other value.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/prometheus_lib.sh"
source "$(dirname "$0")/remote_write_lib.sh"

if ! command -v "$PROMETHEUS" >/dev/null; then
    skip "the serving energy counters in Prometheus" "prometheus is not installed (scripts/deps.sh --test)"
    finish
fi
mkdir -p "$TMP/empty" "$TMP/tmpdir"
export WATTAGE_SYSFS_ROOT=$TMP/empty TMPDIR=$TMP/tmpdir
PY=/usr/bin/python3
PEER=tests/peers/inference_server.py
EXACT=${WATTAGE_BUILD:-build}/tests/fakes/fake_nvml_energy
now=$($PY -c 'import time; print(round(time.time(), 3))')
T0=$($PY -c "print(round($now - 60, 3))")
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=3 FAKE_NVML_T0=$now FAKE_NVML_POWER=300,120,5
export FAKE_NVML_PROCS_FILE=$TMP/procs

bg $PY "$PEER" --engine vllm --port-file "$TMP/served.port" --child-pid-file "$TMP/served.child" \
    --t0 "$T0"
bg $PY "$PEER" --engine vllm --port-file "$TMP/pinned.port" --t0 "$T0" --model m/a --model m/b \
    --req-rate 1
wait_for 10 test -s "$TMP/served.port" -a -s "$TMP/served.child" -a -s "$TMP/pinned.port" ||
    { not_ok "the vLLM peers started"; finish; }
child=$(cat "$TMP/served.child")
echo "1 $child compute sm=60" >"$TMP/procs"
printf 'store:\n  flush_interval: 500ms\ninference:\n  targets:\n    - name: served\n      url: http://127.0.0.1:%s/metrics\n    - name: pinned\n      url: http://127.0.0.1:%s/metrics\n      gpus: [0, 2]\n' \
    "$(cat "$TMP/served.port")" "$(cat "$TMP/pinned.port")" >"$TMP/w.yaml"

# VictoriaMetrics receives the daemon's remote write, when installed
VM=${VICTORIA_METRICS:-victoria-metrics}
have_vm=
if command -v "$VM" >/dev/null; then
    VPORT=$(free_port)
    bg "$VM" -storageDataPath="$TMP/vm" -httpListenAddr="127.0.0.1:$VPORT" -retentionPeriod=1y \
        -search.disableCache -loggerLevel=ERROR 2>>"$TMP/vm.log"
    wait_for 30 curl -sf "http://127.0.0.1:$VPORT/health" -o /dev/null && have_vm=1
    [[ -n $have_vm ]] && printf 'topology:\n  node: n1\nremote_write:\n  - url: http://127.0.0.1:%s/api/v1/write\n    name: vm\n    deadline: 1s\n' \
        "$VPORT" >>"$TMP/w.yaml"
fi
port=$(free_port)
start_prometheus "$(free_port)" "$port" '        labels: {node: n1}'
run_daemon() {
    bg "$BIN" run -c "$TMP/w.yaml" --interval 0.5 --db "$TMP/w.db" --listen "127.0.0.1:$port" \
        >>"$TMP/run.log" 2>&1
    pid=$!
}
run_daemon
metrics() { curl -s "http://127.0.0.1:$port/metrics"; }
found() { metrics | grep -q '^wattage_inference_info{.*target="served".*gpus="1"'; }
check "served: its GPUs found from its processes, {1} (wattage_inference_info gpus=\"1\")" \
    wait_for 20 found || echo "# $(grep inference "$TMP/run.log" | tail -3)"
wait_target_up 20 || not_ok "Prometheus scrapes wattage" "$(target_health)"
metrics >"$TMP/m1"
check "the energy counter of each target and model is on /metrics" bash -c \
    'for t in "target=\"served\",model=\"meta-llama/Llama-3.1-8B-Instruct\"" \
              "target=\"pinned\",model=\"m/a\"" "target=\"pinned\",model=\"m/b\""; do
         grep -q "^wattage_inference_energy_joules_total{$t} [0-9]" "$1" || exit 1; done
     grep -q "^# TYPE wattage_inference_energy_joules_total counter" "$1"' _ "$TMP/m1"
sleep 32
te=$($PY -c 'import time; print(round(time.time() - 1.5, 3))')
W=30
# the window's figures in PromQL, at te
pq() { prom_query "$1" "$te" | $PY -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if len(r) == 1 else "none")'; }
e_served=$(pq "sum(increase(wattage_inference_energy_joules_total{target=\"served\"}[${W}s]))")
g_served=$(pq "sum(increase(wattage_inference_tokens_total{target=\"served\",kind=\"generated\"}[${W}s]))")
e_pinned=$(pq "sum(increase(wattage_inference_energy_joules_total{target=\"pinned\"}[${W}s]))")
g_pinned=$(pq "sum(increase(wattage_inference_tokens_total{target=\"pinned\",kind=\"generated\"}[${W}s]))")
e_a=$(pq "increase(wattage_inference_energy_joules_total{target=\"pinned\",model=\"m/a\"}[${W}s])")
g_a=$(pq "sum(increase(wattage_inference_tokens_total{target=\"pinned\",model=\"m/a\",kind=\"generated\"}[${W}s]))")
fleet=$(pq "sum(increase(wattage_inference_energy_joules_total[${W}s])) / sum(increase(wattage_inference_tokens_total{kind=\"generated\"}[${W}s]))")
from=$($PY -c "print(f'{$te - $W:.3f}')")
"$BIN" inference --db "$TMP/w.db" --from "$from" --to "$te" --json >"$TMP/i.json" 2>"$TMP/i.err" ||
    echo "# $(cat "$TMP/i.err")"
out=$($PY - "$TMP/i.json" "$PEER" "$T0" "$EXACT" "$te" "$W" "$e_served" "$g_served" "$e_pinned" \
    "$g_pinned" "$e_a" "$g_a" "$fleet" "$PROM_URL" "$BIN" "$TMP/w.db" <<'PY' 2>&1
import json, subprocess, sys, urllib.parse, urllib.request
d = json.load(open(sys.argv[1]))
peer, t0, exact = sys.argv[2], sys.argv[3], sys.argv[4]
te, w = float(sys.argv[5]), float(sys.argv[6])
es, gs, ep, gp, ea, ga, fleet = map(float, sys.argv[7:14])
prom, wattage, db = sys.argv[14:17]
# increase() sees the scrapes inside the window: it takes the counters' change from the first to
# the last and stretches it toward the window's edges by the same factor for every series of one
# scrape, which cancels in a ratio. Each scraped value is the daemon's latest reading when
# scraped: the truth is taken between the stored readings behind the first and the last scrape
# (the energy's and the tokens' apart, as they were read apart).
def behind(sel, target):  # the stamps of the stored readings behind the first and last scrape
    q = urllib.parse.urlencode({"query": f"{sel}[{w:g}s]", "time": repr(te)})
    r = json.load(urllib.request.urlopen(f"{prom}/api/v1/query?{q}", timeout=10))["data"]["result"]
    assert r, (sel, r)
    v = sorted((float(t), float(x)) for t, x in r[0]["values"])
    assert len(v) >= 2 and te - w <= v[0][0] < v[-1][0] <= te, (sel, v)
    lab = ",".join(f'{k}="{x}"' for k, x in sorted(r[0]["metric"].items()) if k not in ("__name__", "job", "instance", "node"))
    out = subprocess.check_output([wattage, "query", "--db", db, "--from", "0", "--to", "now", "--csv",
                                   "--unix", f"{r[0]['metric']['__name__']}{{{lab}}}"], text=True)
    st = sorted((float(l.split(",")[0]), float(l.split(",")[-1])) for l in out.splitlines()[1:] if l)
    def at(t, x):  # the latest reading up to the scrape with the value it carried
        c = [(abs(y - x), -s) for s, y in st if t - 5 <= s <= t]
        assert c, (sel, t, x)
        d, s = min(c)
        assert d <= 1e-6 * max(abs(x), 1), (sel, t, x, d)
        return -s
    return at(*v[0]), at(*v[-1]), v[-1][0] - v[0][0]
span, scr = {}, {}
for t in ("served", "pinned"):
    g0, g1, sg = behind(f'wattage_inference_tokens_total{{target="{t}",kind="generated"}}', t)
    e0, e1, se = behind(f'wattage_inference_energy_joules_total{{target="{t}"}}', t)
    assert sg == se, (t, sg, se)  # one scrape carries both: the stretch cancels
    span[t], scr[t] = {"gen": (g0, g1), "energy": (e0, e1)}, sg
def gen(target, *models):
    a, b = span[target]["gen"]
    args = [sys.executable, peer, "--engine", "vllm", "--t0", t0, "--truth", repr(a), repr(b)]
    if models:
        args += ["--req-rate", "1"] + [x for m in models for x in ("--model", m)]
    return sum(v["gen"] for v in json.loads(subprocess.check_output(args)).values())
def energy(target, *gpus):
    a, b = span[target]["energy"]
    return sum(float(subprocess.check_output([exact, g, repr(a), repr(b)])) for g in gpus)
said = [f"scrapes {scr['served']:.2f} s of {w:g}"]
def near(name, got, want, tol=0.03):
    assert got > 0 and abs(got / want - 1) <= tol, (name, got, want)
    said.append(f"{name} {got:.4g} ({want:.4g})")
e_s, g_s = energy("served", "1"), gen("served")
e_p, g_p = energy("pinned", "0", "2"), gen("pinned", "m/a", "m/b")
near("served J/token, PromQL vs truth", es / gs, e_s / g_s)
near("pinned J/token, PromQL vs truth", ep / gp, e_p / g_p)
near("fleet J/token, PromQL vs truth", fleet, (e_s + e_p) / (g_s + g_p))
near("m/a J/token, PromQL vs its target's", ea / ga, ep / gp)
rows = {(r["target"], r["model"]): r for r in d["rows"]}
r = rows[("served", "meta-llama/Llama-3.1-8B-Instruct")]
assert r["gpus"] == "1" and r["energy_method"] == "counter", r
near("served J/token, PromQL vs wattage inference", es / gs, r["joules_per_generated_token"])
p = [rows[("pinned", m)] for m in ("m/a", "m/b")]
assert all(x["gpus"] == "0,2" for x in p), p
near("pinned J/token, PromQL vs wattage inference", ep / gp,
     sum(x["energy_joules"] for x in p) / sum(x["generated_tokens"] for x in p))
print(", ".join(said))
PY
)
check "J/generated token as a ratio of two PromQL increases: the truth and wattage inference, within 3 % ($out)" \
    bash -c '[[ $1 == *"pinned J/token, PromQL vs wattage inference"* ]]' _ "$out"

# the same window from Prometheus (`--source`): the same figures as the store's within what the
# two sets of samples allow at the window's edges (the engine holds one scrape a second, each
# stamped when scraped with the daemon's latest reading, the store every 0.5-s reading; on a
# loaded machine either may come late): at each edge, a counter's increase between the stored
# readings around it and around the scrapes around it (a reading before the earlier scrape, for
# the scrape's lag), from the raw samples of both
SRC=prometheus://${PROM_URL#http://}
"$BIN" inference --source "$SRC" --from "$from" --to "$te" --json >"$TMP/s.json" 2>"$TMP/s.err" ||
    echo "# $(cat "$TMP/s.err")"
out=$($PY - "$TMP/i.json" "$TMP/s.json" "$PROM_URL" "$BIN" "$TMP/w.db" <<'PY' 2>&1
import bisect, json, subprocess, sys, urllib.parse, urllib.request
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
prom, wattage, db = sys.argv[3], sys.argv[4], sys.argv[5]
ra = {(r["target"], r["model"]): r for r in a["rows"]}
rb = {(r["target"], r["model"]): r for r in b["rows"]}
assert sorted(rb) == sorted(("n1/" + t, m) for t, m in ra), (sorted(ra), sorted(rb))
def stored(sel):  # [(t, v)] of the one stored series sel names
    out = subprocess.check_output([wattage, "query", "--db", db, "--from", "0", "--to", "now",
                                   "--csv", "--unix", sel], text=True).splitlines()[1:]
    return sorted((float(l.split(",")[0]), float(l.split(",")[-1])) for l in out)
def scraped(sel, at):  # the times of the engine's samples of sel up to at
    q = urllib.parse.urlencode({"query": f"{sel}[200s]", "time": repr(at)})
    r = json.load(urllib.request.urlopen(f"{prom}/api/v1/query?{q}", timeout=10))["data"]["result"]
    assert len(r) == 1, (sel, r)
    return sorted(float(t) for t, _ in r[0]["values"])
def edge_slack(sel, edges, at):
    s, p = stored(sel), scraped(sel, at)
    ts = [t for t, _ in s]
    total = 0
    for e in edges:
        i, j = bisect.bisect_right(p, e) - 1, bisect.bisect_left(p, e)
        lo_t = min(p[max(i, 0)], e)
        hi_t = max(p[min(j, len(p) - 1)], e)
        lo = max(bisect.bisect_right(ts, lo_t) - 2, 0)   # a reading before, for the scrape's lag
        hi = min(bisect.bisect_left(ts, hi_t), len(ts) - 1)
        total += s[hi][1] - s[lo][1]
    return total
gpus = {"served": ["1"], "pinned": ["0", "2"]}
said = []
for (t, m), x in sorted(ra.items()):
    y = rb[("n1/" + t, m)]
    assert y["gpus"] == ",".join("n1/" + g for g in x["gpus"].split(",")), (x["gpus"], y["gpus"])
    assert y["engine"] == x["engine"] == "vllm" and y["energy_method"] == "counter", y
    edges, at = (x["from_s"], x["to_s"]), x["to_s"] + 60
    dg = edge_slack(f'wattage_inference_tokens_total{{target="{t}",model="{m}",kind="generated"}}', edges, at)
    de = sum(edge_slack(f'wattage_gpu_energy_joules_total{{gpu="{g}"}}', edges, at) for g in gpus[t])
    assert abs(y["generated_tokens"] - x["generated_tokens"]) <= dg, (t, m, "generated_tokens", x["generated_tokens"], y["generated_tokens"], dg)
    assert abs(y["energy_joules"] - x["energy_joules"]) <= de, (t, m, "energy_joules", x["energy_joules"], y["energy_joules"], de)
    g, e = x["generated_tokens"], x["energy_joules"]
    j = y["joules_per_generated_token"] / x["joules_per_generated_token"]
    assert (e - de) / (g + dg) <= j * e / g <= (e + de) / (g - dg), (t, m, "J/token", x, y, de, dg)
    said.append(f'{t} {m} {y["joules_per_generated_token"]:.4g} ({x["joules_per_generated_token"]:.4g}) J/token, '
                f'tokens {y["generated_tokens"]:.0f} ({x["generated_tokens"]:.0f} +- {dg:.0f})')
print(", ".join(said))
PY
)
check "inference --source $SRC: the store's figures within the edges' samples ($out)" \
    bash -c '[[ $1 == *"J/token"* && $1 != *Error* ]]' _ "$out"
# the same window from VictoriaMetrics, which holds every stored reading (remote write): the
# store's figures within their bar and the 1 ms of the times' precision, the tokens exactly; the
# energy counter was sent too
if [[ -n $have_vm ]]; then
    rw_wait_caught_up "$port" vm 30 || not_ok "the daemon catches up with VictoriaMetrics"
    VSRC=victoriametrics://127.0.0.1:$VPORT
    "$BIN" inference --source "$VSRC" --from "$from" --to "$te" --json >"$TMP/v.json" \
        2>"$TMP/v.err" || echo "# $(cat "$TMP/v.err")"
    out=$($PY - "$TMP/i.json" "$TMP/v.json" "http://127.0.0.1:$VPORT" <<'PY' 2>&1
import json, sys, urllib.parse, urllib.request
a, b, vm = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
ra = {(r["target"], r["model"]): r for r in a["rows"]}
rb = {(r["target"], r["model"]): r for r in b["rows"]}
assert sorted(rb) == sorted(("n1/" + t, m) for t, m in ra), (sorted(ra), sorted(rb))
said = []
for (t, m), x in sorted(ra.items()):
    y = rb[("n1/" + t, m)]
    for k in ("generated_tokens", "prompt_tokens", "requests"):
        assert y[k] == x[k], (t, m, k, x[k], y[k])
    # remote write carries times in ms: each edge may move by 1 ms of the GPUs' power
    ms = 2e-3 * x["energy_joules"] / (x["to_s"] - x["from_s"])
    assert abs(y["energy_joules"] - x["energy_joules"]) <= x["energy_uncertainty_joules"] + ms, (t, m, x, y)
    d = abs(y["joules_per_generated_token"] - x["joules_per_generated_token"])
    assert d <= x["joules_per_generated_token_uncertainty"] + ms / x["generated_tokens"], (t, m, x, y)
    said.append(f'{t} {m} {y["joules_per_generated_token"]:.6g} ({x["joules_per_generated_token"]:.6g} +- {x["joules_per_generated_token_uncertainty"]:.2g})')
q = urllib.parse.urlencode({"query": 'count(wattage_inference_energy_joules_total{node="n1"})'})
r = json.load(urllib.request.urlopen(f"{vm}/api/v1/query?{q}", timeout=10))["data"]["result"]
assert r and float(r[0]["value"][1]) == 3, r
print(", ".join(said))
PY
)
    check "inference --source $VSRC (remote write): the store's figures within their bar, the counter sent ($out)" \
        bash -c '[[ $1 == *"+-"* && $1 != *Error* ]]' _ "$out"
else
    skip "inference --source from VictoriaMetrics" "victoria-metrics is not installed (scripts/deps.sh --test)"
fi
"$BIN" inference --source "$SRC" --db "$TMP/w.db" >/dev/null 2>"$TMP/e1"
rc=$?
check "--source with --db: exit 2, said ($(cat "$TMP/e1"))" bash -c \
    '[[ $1 == 2 ]] && grep -q "name one place" "$2"' _ $rc "$TMP/e1"
"$BIN" inference --source "prometheus://127.0.0.1:$(free_port)" >/dev/null 2>"$TMP/e2"
rc=$?
check "an engine that does not answer: exit 1, named ($(head -c 200 "$TMP/e2"))" bash -c \
    '[[ $1 == 1 ]] && grep -q "127.0.0.1" "$2"' _ $rc "$TMP/e2"
check "no working store is left behind" bash -c '! ls -d "${TMPDIR:-/tmp}"/wattage-inference-* 2>/dev/null | grep -q .'

# the child moves to GPU 2: said once more
n1=$(grep -c 'served: serving GPUs' "$TMP/run.log")
check "the GPUs found are said once ($n1 line)" test "$n1" = 1
echo "2 $child compute sm=60" >"$TMP/procs"
moved() { grep -q 'served: serving GPUs 2 ' "$TMP/run.log"; }
check "NVML lists it on GPU 2: its GPUs become {2}, said" wait_for 15 moved
sleep 2
n2=$(grep -c 'served: serving GPUs' "$TMP/run.log")
check "each change said once ($n2 lines)" test "$n2" = 2
check "pinned (gpus configured): nothing is looked for" bash -c '! grep -q "pinned: serving GPUs" "$1"' \
    _ "$TMP/run.log"

# a daemon restart: a counter reset, from about 0 (a few polls' energy), never another drop
before=$(metrics | grep '^wattage_inference_energy_joules_total{target="pinned",model="m/a"}' |
    awk '{print $2}')
kill -TERM "$pid"
wait "$pid"
t_restart=$($PY -c 'import time; print(round(time.time(), 3))')
run_daemon
again() { metrics | grep -q '^wattage_inference_energy_joules_total{target="pinned",model="m/a"}'; }
wait_for 20 again
after=$(metrics | grep '^wattage_inference_energy_joules_total{target="pinned",model="m/a"}' |
    awk '{print $2}')
t_read=$($PY -c 'import time; print(round(time.time(), 3))')
since=$($PY -c "print(sum(float(__import__('subprocess').check_output(['$EXACT', g, '$t_restart', '$t_read'])) for g in '02'))")
check "after a restart the counter starts again from 0: at most the GPUs' energy since ($before J, then $after J <= $since J)" \
    $PY -c "import sys; b, a, e = float('$before'), float('$after'), float('$since'); sys.exit(not (b > 3000 and 0 <= a <= e < b))"
finish
