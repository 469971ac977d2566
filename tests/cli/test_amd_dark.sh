#!/usr/bin/env bash
# Dark power on AMD GPUs (the fake ROCm SMI: two MI250X, four dies in two packages, 60 W per
# package, busy 0) beside an NVIDIA GPU (the fake NVML, 60 W, utilization 0, no process): a
# package is idle when none of its dies lists a process and none is busy, and counts on its
# primary, where its power is. Package 0 has a process on its second die (GPU 1): not idle;
# package 1 has none: wattage_gpu_idle 1 on GPU 2, its idle energy growing at its 60 W; the
# second dies have no dark series of their own; NVIDIA's GPU 0 is idle beside AMD's GPU 0 and
# neither is taken for the other. A process appearing on GPU 3 (package 1's second die) stops
# package 1's count within a few ticks. `wattage status` without a daemon sees the same.
source "$(dirname "$0")/lib.sh"
FAKE_ROCM=${WATTAGE_FAKE_ROCM:-$PWD/${WATTAGE_BUILD:-build}/tests/fakes/librocm_smi64.so.1}
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
AMD0=$(python3 -c 'print("AMD-%016x" % 0x00c0ffee00000000)')
AMD2=$(python3 -c 'print("AMD-%016x" % 0x00c0ffee00000001)')

# `wattage status` without a daemon (no store): the same packages, idle from its one snapshot
printf 'store:\n  path: %s\n' "$TMP/none.db" >"$TMP/s.yaml"
echo "1 4242" >"$TMP/sprocs"
FAKE_RSMI_GPUS=4 FAKE_RSMI_MI250X=1 FAKE_RSMI_POWER=60,0,1e9 FAKE_RSMI_PROCS_FILE="$TMP/sprocs" \
    WATTAGE_NVML_LIBRARY=$TMP/no-libnvidia-ml.so.1 WATTAGE_ROCM_SMI_LIBRARY=$FAKE_ROCM \
    "$BIN" status -c "$TMP/s.yaml" --json >"$TMP/status.json" 2>"$TMP/status.err"
if python3 - "$TMP/status.json" "$AMD0" "$AMD2" 2>"$TMP/py.err" <<'PY'; then
import json, sys
g = {x["uuid"]: x for x in json.load(open(sys.argv[1]))["gpus"]}
a, b = g[sys.argv[2]], g[sys.argv[3]]
assert a["idle"] == 0 and a["idle_energy_today_joules"] == 0, a
assert b["idle"] == 1 and b["idle_energy_today_joules"] > 0, b
assert not any("idle" in x for u, x in g.items() if u.endswith("-1")), g
PY
    ok "wattage status (no daemon) counts AMD packages: package 1 idle, package 0 (a process) not"
else not_ok "wattage status (no daemon) counts AMD packages: package 1 idle, package 0 (a process) not" \
    "$(cat "$TMP/py.err" "$TMP/status.err")"; fi

PORT=$(free_port)
printf 'daemon:\n  interval: 1s\nstore:\n  path: %s\n' "$TMP/w.db" >"$TMP/w.yaml"
echo "1 4242" >"$TMP/procs"
: >"$TMP/nvprocs"
FAKE_NVML_GPUS=1 FAKE_NVML_POWER=60,0,0 FAKE_NVML_PROCS_FILE="$TMP/nvprocs" \
    FAKE_RSMI_GPUS=4 FAKE_RSMI_MI250X=1 FAKE_RSMI_POWER=60,0,1e9 FAKE_RSMI_PROCS_FILE="$TMP/procs" \
    WATTAGE_NVML_LIBRARY=$FAKE_NVML WATTAGE_ROCM_SMI_LIBRARY=$FAKE_ROCM bg "$BIN" run \
    -c "$TMP/w.yaml" --db "$TMP/w.db" --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
metric() { # file name labels-substring
    awk -v n="$2" -v l="$3" '$1 ~ "^"n"\\{" && index($1, l) { print $NF; exit }' "$1"
}
idle_for() { # idle_for SECONDS: AMD GPU 2 (package 1) has been idle that long
    curl -sf "http://127.0.0.1:$PORT/metrics" -o "$TMP/m" || return 1
    local s
    s=$(metric "$TMP/m" wattage_gpu_idle_seconds_total "uuid=\"$AMD2\"")
    [[ -n $s ]] && awk -v s="$s" -v m="$1" 'BEGIN { exit !(s >= m) }'
}
if wait_for 40 idle_for 3; then ok "package 1 (GPU 2), no process on either die and busy 0, counts idle time"
else not_ok "package 1 (GPU 2), no process on either die and busy 0, counts idle time" "$(grep idle "$TMP/m")" "$(tail -5 "$TMP/run.log")"; fi
cp "$TMP/m" "$TMP/m1"
check "  wattage_gpu_idle 1 on GPU 2" test "$(metric "$TMP/m1" wattage_gpu_idle "uuid=\"$AMD2\"")" = 1
check "package 0, a process on its second die, is not idle (wattage_gpu_idle 0 on GPU 0)" \
    test "$(metric "$TMP/m1" wattage_gpu_idle "uuid=\"$AMD0\"")" = 0
check "  and has no idle time" test "$(metric "$TMP/m1" wattage_gpu_idle_seconds_total "uuid=\"$AMD0\"")" = 0
check "the second dies have no dark series" \
    bash -c "! grep -q '^wattage_gpu_idle[a-z_]*{gpu=\"[13]\",uuid=\"AMD-' '$TMP/m1'"
check "NVIDIA's GPU 0 is idle beside AMD's, on its own uuid" \
    test "$(metric "$TMP/m1" wattage_gpu_idle 'uuid="GPU-')" = 1
sleep 3
curl -sf "http://127.0.0.1:$PORT/metrics" -o "$TMP/m2"
msg=$(python3 - "$(metric "$TMP/m1" wattage_gpu_idle_energy_joules_total "uuid=\"$AMD2\"")" \
    "$(metric "$TMP/m2" wattage_gpu_idle_energy_joules_total "uuid=\"$AMD2\"")" \
    "$(metric "$TMP/m1" wattage_gpu_idle_seconds_total "uuid=\"$AMD2\"")" \
    "$(metric "$TMP/m2" wattage_gpu_idle_seconds_total "uuid=\"$AMD2\"")" <<'PY' 2>&1
import sys
e1, e2, s1, s2 = map(float, sys.argv[1:5])
assert s2 - s1 >= 1, (s1, s2)
w = (e2 - e1) / (s2 - s1)
assert abs(w - 60) < 0.6, w
print("ok: %.1f J over %.1f s idle" % (e2 - e1, s2 - s1))
PY
)
check "its idle energy grows at the package's 60 W ($msg)" grep -q '^ok' <<<"$msg"
echo "3 4243" >>"$TMP/procs"
stopped() {
    curl -sf "http://127.0.0.1:$PORT/metrics" -o "$TMP/m3" &&
        [[ $(metric "$TMP/m3" wattage_gpu_idle "uuid=\"$AMD2\"") == 0 ]]
}
check "a process on package 1's second die stops its count" wait_for 10 stopped
e3=$(metric "$TMP/m3" wattage_gpu_idle_energy_joules_total "uuid=\"$AMD2\"")
sleep 2.5
curl -sf "http://127.0.0.1:$PORT/metrics" -o "$TMP/m4"
check "  its idle energy stays where it was" \
    test "$(metric "$TMP/m4" wattage_gpu_idle_energy_joules_total "uuid=\"$AMD2\"")" = "$e3"
finish
