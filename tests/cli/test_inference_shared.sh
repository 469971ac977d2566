#!/usr/bin/env bash
# Two inference servers on one GPU (both targets list gpus: [0]) and a third on GPU 1 alone, the
# fake NVML's 2 GPUs at 300 W and 120 W, scraped every 0.5 s for about 10 s. GPU 0's energy goes
# to its two targets by their generated tokens, so they add up to it once (the fake's exact
# energy), not twice; `--by model` (the two serve the same model) counts GPU 0 once; the target
# alone on GPU 1 keeps all of its GPU. The live counter wattage_inference_energy_joules_total
# does the same: between two /metrics scrapes, the two targets' increases add up to GPU 0's exact
# energy, not twice it, each tick's energy shared by the tokens each counted in that tick: busy's
# part is the stored tokens' tick by tick share; "alone" gets GPU 1's. A counter trails by up to
# a process poll (the ledger's, 1 s), the tick its tokens wait for the ledger to move and a
# scrape, 2 s: the energy is within 2 s of the GPU's mean power at each end; the share is the
# ticks' over the window moved back by 0 to 2 s, within what 2 s at each end shared by another
# tick's tokens can move it, and 0.01.
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
PY=/usr/bin/python3
PEER=tests/peers/inference_server.py
EXACT=${WATTAGE_BUILD:-build}/tests/fakes/fake_nvml_energy
now=$($PY -c 'import time; print(round(time.time(), 3))')
T0=$($PY -c "print(round($now - 60, 3))")
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_T0=$now FAKE_NVML_POWER=300,120

# busy and slow: 8 and 2 requests a second (many at once: their tokens are smooth tick to tick),
# so their tokens differ
bg $PY "$PEER" --engine vllm --port-file "$TMP/a.port" --t0 "$T0" --req-rate 8 --seed 1
bg $PY "$PEER" --engine vllm --port-file "$TMP/b.port" --t0 "$T0" --req-rate 2 --seed 2
bg $PY "$PEER" --engine vllm --port-file "$TMP/c.port" --t0 "$T0" --req-rate 1 --seed 3
for p in a b c; do
    wait_for 10 test -s "$TMP/$p.port" || { not_ok "peer $p started"; finish; }
done
cat >"$TMP/w.yaml" <<Y
store:
  flush_interval: 500ms
inference:
  targets:
    - {name: busy, url: "http://127.0.0.1:$(cat "$TMP/a.port")/metrics", gpus: [0]}
    - {name: slow, url: "http://127.0.0.1:$(cat "$TMP/b.port")/metrics", gpus: [0]}
    - {name: alone, url: "http://127.0.0.1:$(cat "$TMP/c.port")/metrics", gpus: [1]}
Y
port=$(free_port)
bg "$BIN" run -c "$TMP/w.yaml" --interval 0.5 --db "$TMP/w.db" --listen "127.0.0.1:$port" \
    >"$TMP/run.log" 2>&1
pid=$!
up() {
    local m
    m=$(curl -s "http://127.0.0.1:$port/metrics")
    for t in busy slow alone; do
        grep -q "^wattage_inference_up{target=\"$t\"} 1$" <<<"$m" || return 1
    done
}
check "the three peers are read" wait_for 20 up
energy_up() {
    curl -s "http://127.0.0.1:$port/metrics" >"$TMP/m0"
    for t in busy slow alone; do
        grep -q "^wattage_inference_energy_joules_total{target=\"$t\",.*} [1-9]" "$TMP/m0" ||
            return 1
    done
}
wait_for 10 energy_up
start=$($PY -c 'import time; print(round(time.time(), 3))')
curl -s "http://127.0.0.1:$port/metrics" >"$TMP/m1"
sleep 10
end=$($PY -c 'import time; print(round(time.time(), 3))')
curl -s "http://127.0.0.1:$port/metrics" >"$TMP/m2"
kill -TERM "$pid"
wait "$pid"

from=$($PY -c "print(f'{$start + 0.3:.3f}')")
to=$($PY -c "print(f'{$end - 0.7:.3f}')")
"$BIN" inference --db "$TMP/w.db" --from "$from" --to "$to" --json >"$TMP/t.json" 2>"$TMP/t.err"
check "inference --json exits 0 ($(cat "$TMP/t.err"))" test $? -eq 0
"$BIN" inference --db "$TMP/w.db" --from "$from" --to "$to" --by model --json >"$TMP/m.json" \
    2>"$TMP/m.err"
check "inference --by model --json exits 0 ($(cat "$TMP/m.err"))" test $? -eq 0
"$BIN" inference --db "$TMP/w.db" --from "$from" --to "$to" >"$TMP/t.txt" 2>&1
check "the text output says the GPU is shared with the other targets" \
    grep -q "shared by generated tokens with the other targets on its GPUs" "$TMP/t.txt"

msg=$($PY - "$TMP/t.json" "$TMP/m.json" "$EXACT" <<'PY' 2>&1
import json, subprocess, sys
d, m, exact = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
rows = {r["target"]: r for r in d["rows"]}
assert set(rows) == {"busy", "slow", "alone"}, rows.keys()
busy, slow, alone = rows["busy"], rows["slow"], rows["alone"]
def energy(g, a, b):
    return float(subprocess.check_output([exact, g, repr(a), repr(b)]))
for r in (busy, slow):
    assert r["gpus_shared"] is True and r["energy_split"] == "generated_tokens", r
assert alone["gpus_shared"] is False and alone["energy_split"] == "none", alone
assert alone["energy_share"] == 1, alone
# alone: the whole of GPU 1 over its span
e1 = energy("1", alone["from_s"], alone["to_s"])
assert abs(alone["energy_joules"] / e1 - 1) < 0.005, ("alone", alone["energy_joules"], e1)
# busy and slow: GPU 0 once, shared by their generated tokens
gb, gs = busy["generated_tokens"], slow["generated_tokens"]
assert gb > 1.5 * gs > 0, (gb, gs)
eb = energy("0", busy["from_s"], busy["to_s"])
es = energy("0", slow["from_s"], slow["to_s"])
want_b, want_s = eb * gb / (gb + gs), es * gs / (gb + gs)
for name, r, want in (("busy", busy, want_b), ("slow", slow, want_s)):
    assert abs(r["energy_joules"] / want - 1) < 0.005, (name, r["energy_joules"], want)
    assert abs(r["energy_share"] - r["energy_joules"] / energy("0", r["from_s"], r["to_s"])) < 0.005, r
total = busy["energy_joules"] + slow["energy_joules"]
e0 = energy("0", min(busy["from_s"], slow["from_s"]), max(busy["to_s"], slow["to_s"]))
assert abs(total / e0 - 1) < 0.01, ("GPU 0 twice?", total, e0)
# --by model: one model on all three targets; GPU 0 counted once, GPU 1 once
assert len(m["rows"]) == 1, m["rows"]
g = m["rows"][0]
whole = total + alone["energy_joules"]
assert abs(g["energy_joules"] / whole - 1) < 1e-9, (g["energy_joules"], whole)
assert g["generated_tokens"] == gb + gs + alone["generated_tokens"], g
print(f"busy {busy['energy_joules']:.1f} J + slow {slow['energy_joules']:.1f} J = GPU 0's "
      f"{e0:.1f} J ({100 * (total / e0 - 1):+.3f} %), tokens {gb:.0f}/{gs:.0f}; --by model "
      f"{g['energy_joules']:.1f} J")
PY
)
check "GPU 0 counted once between its targets: $msg" bash -c '[[ $1 == "busy "* ]]' _ "$msg"

# the live counter between the two scrapes; the stored generated tokens of each scrape
for t in busy slow; do
    "$BIN" query --db "$TMP/w.db" --from "$(${PY} -c "print($start - 2.5)")" --to "$end" --json --unix \
        "wattage_inference_tokens_total{target=\"$t\",kind=\"generated\"}" >"$TMP/g_$t.json"
done
msg=$($PY - "$TMP/m1" "$TMP/m2" "$EXACT" "$start" "$end" "$TMP/g_busy.json" "$TMP/g_slow.json" \
    <<'PY' 2>&1
import json, re, subprocess, sys
exact, t1, t2 = sys.argv[3], sys.argv[4], sys.argv[5]
def sums(path, name, extra=""):
    out = {}
    for line in open(path):
        m = re.match(r'%s\{target="(\w+)"[^}]*\} (\S+)$' % name, line)
        if m and extra in line:
            out[m[1]] = out.get(m[1], 0) + float(m[2])
    return out
def inc(name, extra=""):
    a, b = sums(sys.argv[1], name, extra), sums(sys.argv[2], name, extra)
    return {t: b[t] - a[t] for t in ("busy", "slow", "alone")}
e = inc("wattage_inference_energy_joules_total")
g = inc("wattage_inference_tokens_total", 'kind="generated"')
def energy(gpu):
    return float(subprocess.check_output([exact, gpu, t1, t2]))
e0, e1 = energy("0"), energy("1")
total = e["busy"] + e["slow"]
lag = 2 / (float(t2) - float(t1))  # of the window, at each end
assert abs(total - e0) <= lag * e0, ("GPU 0 twice?", e, e0)
assert abs(e["alone"] - e1) <= lag * e1, ("alone", e["alone"], e1)
# tick by tick (the two scraped at each tick): GPU 0's exact energy over the tick, busy's part
# by the tokens each counted in it
def points(path):
    return [(float(t), v) for x in json.load(open(path))["series"] for t, v in x["points"]]
pb, ps = points(sys.argv[6]), points(sys.argv[7])
ticks = []
for t, v in pb:
    near = [w for u, w in ps if abs(u - t) < 0.2]
    if len(near) == 1:
        ticks.append((t, v, near[0]))
r = []  # (tick's end, GPU 0's energy over it, busy's part of the tokens)
for (ta, ba, sa), (tb, bb, sb) in zip(ticks, ticks[1:]):
    j = float(subprocess.check_output([exact, "0", repr(ta), repr(tb)]))
    db, ds = bb - ba, sb - sa
    r.append((tb, j, db / (db + ds) if db + ds > 0 else 0.5))
def want(back):
    w = [(j, x) for t, j, x in r if float(t1) - back < t <= float(t2) - back]
    assert len(w) > 10, (back, r)
    return sum(j * x for j, x in w) / sum(j for j, x in w)
wants = [want(back) for back in (0, 0.5, 1, 1.5, 2)]
share = e["busy"] / total
tol = 2 * lag * max(abs(x - wants[0]) for _, _, x in r) + 0.01
window = g["busy"] / (g["busy"] + g["slow"])
assert g["busy"] > 1.5 * g["slow"] > 0, g
assert min(wants) - tol <= share <= max(wants) + tol, (e, g, share, wants, tol)
print(f"busy {e['busy']:.1f} J + slow {e['slow']:.1f} J = {total:.1f} J, GPU 0's {e0:.1f} J "
      f"({100 * (total / e0 - 1):+.2f} %); busy's share {share:.4f}, of the ticks' tokens "
      f"{min(wants):.4f}..{max(wants):.4f} +- {tol:.3f} (of the window's {window:.4f}); alone "
      f"{e['alone']:.1f} J, GPU 1's {e1:.1f} J")
PY
)
check "the live counter shares GPU 0 between its targets by tokens: $msg" \
    bash -c '[[ $1 == "busy "* ]]' _ "$msg"
finish
