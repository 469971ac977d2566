#!/usr/bin/env bash
# GPUIdleBurn on AMD GPUs (the fake ROCm SMI at 400 W of a 500 W cap, busy (1 + sin(phase + i))/2
# with the phase held at -pi/2: die 0 busy 0 %, die 1 23 %, dies 2 and 3 71 % and 99 %):
# - four MI300X (each its own package): GPU 0, idle at 80 % of its limit, fires GPUIdleBurn,
#   naming its AMD uuid; the busy ones do not;
# - two MI250X: package 0's power is on die 0 (busy 0 %) but die 1 works (23 %): the package is
#   busy, so no GPUIdleBurn (pending or firing) on GPU 0, while the other daemon's fires.
. tests/cli/lib.sh
FAKE_ROCM=${WATTAGE_FAKE_ROCM:-$PWD/${WATTAGE_BUILD:-build}/tests/fakes/librocm_smi64.so.1}
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
export WATTAGE_NVML_LIBRARY=$TMP/no-libnvidia-ml.so.1 WATTAGE_ROCM_SMI_LIBRARY=$FAKE_ROCM
# a period of 10^6 s and T0 three quarters of one ago: the phase is -pi/2 for the test's length
P=1000000
T0=$(python3 -c "import time; print(repr(time.time() - 0.75 * $P))")
export FAKE_RSMI_T0=$T0 FAKE_RSMI_POWER=450,50,$P FAKE_RSMI_GPUS=4
# idle_burns PORT STATES: the GPUIdleBurn alerts in those states (pending,firing), "gpu uuid" a line
idle_burns() {
    curl -sf "http://127.0.0.1:$1/api/v1/alerts" | python3 -c '
import json, sys
states = sys.argv[1].split(",")
for a in json.load(sys.stdin)["alerts"]:
    if a["alertname"] == "GPUIdleBurn" and a["state"] in states:
        print(a["labels"]["gpu"], a["labels"]["uuid"], a["summary"])' "$2"
}
CONF=$'alerts:\n  detectors:\n    idle_burn: {for: 2s}\n'
start() { # NAME ENV...: a daemon at 0.2 s; PORT_NAME set
    local name=$1 port
    shift
    port=$(free_port)
    printf -v "PORT_$name" %s "$port"
    printf '%s' "$CONF" >"$TMP/$name.yaml"
    env "$@" "$BIN" run -c "$TMP/$name.yaml" --db "$TMP/$name.db" --interval 0.2 \
        --listen "127.0.0.1:$port" 2>"$TMP/$name.log" &
    T_PIDS="$T_PIDS $!"
}
start single FAKE_RSMI_MI250X=
start pair FAKE_RSMI_MI250X=1
U0=$(python3 -c 'print("AMD-%016x" % 0x00c0ffee00000000)')
fired() { idle_burns "$PORT_single" firing >"$TMP/single" && grep -q "^0 $U0 " "$TMP/single"; }
check "MI300X GPU 0, busy 0 % at 400 W of 500 W, fires GPUIdleBurn on its AMD uuid" wait_for 30 fired
check "  its summary says the utilization and the limit" \
    grep -q "^0 $U0 .*(0% utilization).*500 W limit" "$TMP/single"
check "  the busy GPUs do not" test "$(idle_burns "$PORT_single" pending,firing | grep -vc '^0 ')" -eq 0
idle_burns "$PORT_pair" pending,firing >"$TMP/pair"
check "the MI250X whose second die works is not idle: no GPUIdleBurn, pending or firing" \
    test $? -eq 0 -a ! -s "$TMP/pair"
check "  (its daemon reads the package: power on GPU 0)" \
    bash -c "curl -sf 'http://127.0.0.1:$PORT_pair/metrics' | grep -q '^wattage_gpu_power_watts{gpu=\"0\",uuid=\"$U0\"'"
finish
