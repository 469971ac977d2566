#!/usr/bin/env bash
# A vLLM on ROCm: the serving GPUs found from the processes on AMD GPUs, and their energy in
# wattage_inference_energy_joules_total and `wattage inference`, on a node with both vendors
# (fake NVML: 2 GPUs at 50 W; fake ROCm SMI: 4 GPUs at 400 W), so AMD's GPU 1 is not NVIDIA's.
# The peer "served" has no gpus: its child (which holds no socket, as vLLM's EngineCore) is
# listed by ROCm SMI on AMD GPU 1: its GPUs become amd:1 (said once, on wattage_inference_info's
# gpus); the peer "pinned" is configured on gpus [amd:2, amd:3]. Over a window, `wattage
# inference --json` gives each target the fake's exact energy of its AMD GPUs within 1 %, and
# the increase of wattage_inference_energy_joules_total between two scrapes is the AMD GPUs'
# (not NVIDIA's 8x smaller one) within 10 % (it trails by up to a process poll). A gpus entry
# that is neither an index nor a vendor's index is refused, naming its place; a plain index that
# both vendors have (the target "plain", gpus [1]) counts NVIDIA's, and says so once.
source "$(dirname "$0")/lib.sh"
mkdir -p "$TMP/empty" "$TMP/tmpdir"
export WATTAGE_SYSFS_ROOT=$TMP/empty TMPDIR=$TMP/tmpdir
PY=/usr/bin/python3
PEER=tests/peers/inference_server.py
FAKE_ROCM=${WATTAGE_FAKE_ROCM:-$PWD/${WATTAGE_BUILD:-build}/tests/fakes/librocm_smi64.so.1}
EXACT=${WATTAGE_BUILD:-build}/tests/fakes/fake_rocm_energy
now=$($PY -c 'import time; print(round(time.time(), 3))')
T0=$($PY -c "print(round($now - 60, 3))")
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_T0=$now FAKE_NVML_POWER=50,0,5
export WATTAGE_ROCM_SMI_LIBRARY=$FAKE_ROCM FAKE_RSMI_GPUS=4 FAKE_RSMI_T0=$now
export FAKE_RSMI_POWER=400,120,5 FAKE_RSMI_PROCS_FILE=$TMP/procs
: >"$TMP/procs"

printf 'inference:\n  targets:\n    - name: bad\n      url: http://127.0.0.1:1/metrics\n      gpus: [amd:x]\n' \
    >"$TMP/bad.yaml"
"$BIN" check-config "$TMP/bad.yaml" >"$TMP/bad.out" 2>&1
check "gpus: [amd:x] is refused (exit 2)" test $? -eq 2
check "  naming its place and what is expected" \
    grep -q 'bad.yaml:5: inference.targets\[0\].gpus\[0\]: expected a GPU index (0..1023) or a vendor.s index (nvidia:0, amd:0)' "$TMP/bad.out"

bg $PY "$PEER" --engine vllm --port-file "$TMP/served.port" --child-pid-file "$TMP/served.child" \
    --t0 "$T0"
bg $PY "$PEER" --engine vllm --port-file "$TMP/pinned.port" --t0 "$T0" --model m/a --req-rate 1
wait_for 10 test -s "$TMP/served.port" -a -s "$TMP/served.child" -a -s "$TMP/pinned.port" ||
    { not_ok "the vLLM peers started"; finish; }
echo "1 $(cat "$TMP/served.child") 1073741824" >"$TMP/procs"
printf 'store:\n  flush_interval: 500ms\ninference:\n  targets:\n    - name: served\n      url: http://127.0.0.1:%s/metrics\n    - name: pinned\n      url: http://127.0.0.1:%s/metrics\n      gpus: [amd:2, "amd:3"]\n    - name: plain\n      url: http://127.0.0.1:%s/metrics\n      gpus: [1]\n' \
    "$(cat "$TMP/served.port")" "$(cat "$TMP/pinned.port")" "$(cat "$TMP/pinned.port")" >"$TMP/w.yaml"
port=$(free_port)
bg "$BIN" run -c "$TMP/w.yaml" --interval 0.5 --db "$TMP/w.db" --listen "127.0.0.1:$port" \
    >>"$TMP/run.log" 2>&1
metrics() { curl -s "http://127.0.0.1:$port/metrics"; }
found() { metrics | grep -q '^wattage_inference_info{.*target="served".*gpus="amd:1"'; }
check "served: its GPU found from the ROCm SMI process list, amd:1 (NVIDIA has a GPU 1 too)" \
    wait_for 30 found || echo "# $(grep inference "$TMP/run.log" | tail -3)"
check "  said once" test "$(grep -c 'served: serving GPUs amd:1' "$TMP/run.log")" -eq 1
check "pinned: its configured GPUs, amd:2,amd:3" \
    bash -c "curl -s 'http://127.0.0.1:$port/metrics' | grep -q '^wattage_inference_info{.*target=\"pinned\".*gpus=\"amd:2,amd:3\"'"
# the counters from one scrape to another: the AMD GPUs' energy, not NVIDIA's
counter() { # file target
    awk -v t="target=\"$2\"" 'index($1, "wattage_inference_energy_joules_total{") == 1 && index($1, t) { s += $2 } END { print s + 0 }' "$1"
}
wait_for 10 bash -c "curl -s 'http://127.0.0.1:$port/metrics' | grep -q '^wattage_inference_energy_joules_total{target=\"served\"'"
metrics >"$TMP/m1"
t1=$($PY -c 'import time; print(round(time.time(), 3))')
sleep 20
metrics >"$TMP/m2"
t2=$($PY -c 'import time; print(round(time.time(), 3))')
out=$($PY - "$EXACT" "$t1" "$t2" "$(counter "$TMP/m1" served)" "$(counter "$TMP/m2" served)" \
    "$(counter "$TMP/m1" pinned)" "$(counter "$TMP/m2" pinned)" <<'PY' 2>&1
import subprocess, sys
exact, t1, t2 = sys.argv[1], sys.argv[2], sys.argv[3]
s1, s2, p1, p2 = map(float, sys.argv[4:8])
def energy(*gpus):
    return sum(float(subprocess.check_output([exact, g, t1, t2])) for g in gpus)
es, ep = energy("1"), energy("2", "3")
assert abs((s2 - s1) / es - 1) < 0.10, ("served", s2 - s1, es)
assert abs((p2 - p1) / ep - 1) < 0.10, ("pinned", p2 - p1, ep)
print("served %.0f J (AMD GPU 1: %.0f J), pinned %.0f J (%.0f J)" % (s2 - s1, es, p2 - p1, ep))
PY
)
check "wattage_inference_energy_joules_total counts the AMD GPUs ($out)" grep -q '^served' <<<"$out"
check "a plain index both vendors have: NVIDIA's counted, said once" \
    test "$(grep -c "plain: gpus 1: GPU 1 is NVIDIA's and AMD's here; NVIDIA's is counted (name nvidia:1 or amd:1)" "$TMP/run.log")" -eq 1

sleep 1
te=$($PY -c 'import time; print(round(time.time() - 1.5, 3))')
from=$($PY -c "print(f'{$te - 15:.3f}')")
"$BIN" inference --db "$TMP/w.db" --from "$from" --to "$te" --json >"$TMP/i.json" 2>"$TMP/i.err" ||
    echo "# $(cat "$TMP/i.err")"
out=$($PY - "$TMP/i.json" "$EXACT" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
rows = {r["target"]: r for r in d["rows"]}
said = []
for t, gpus in (("served", ["1"]), ("pinned", ["2", "3"])):
    r = rows[t]
    want = sum(float(subprocess.check_output([sys.argv[2], g, repr(r["from_s"]), repr(r["to_s"])]))
               for g in gpus)
    assert r["energy_method"] == "counter", r
    assert abs(r["energy_joules"] / want - 1) < 0.01, (t, r["gpus"], r["energy_joules"], want)
    said.append("%s on %s: %.0f J (exact %.0f J)" % (t, r["gpus"], r["energy_joules"], want))
print(", ".join(said))
PY
)
check "wattage inference: each target's AMD GPUs' exact energy within 1 % ($out)" \
    grep -q '^served on amd:1' <<<"$out"
finish
