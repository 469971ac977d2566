#!/usr/bin/env bash
# A node with no PDU, BMC or topology at all, only its own hwmon meters (an ACPI power meter,
# a PMBus supply's pin and pout) and two GPUs on the fake NVML: the real daemon records them and
# `wattage kpi` reconciles the chips against the ACPI meter (wall_from "hwmon") with IT energy
# from it, and gives the supply's conversion loss, each against the values written in the tree;
# the daemon's KPI gauges do the same while it runs.
. tests/cli/lib.sh
H=$TMP/sys/sys/class/hwmon
mkdir -p "$H/hwmon0/device" "$H/hwmon1" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
export WATTAGE_ROCM_SMI_LIBRARY=$TMP/no-librocm_smi64.so.1
echo power_meter >"$H/hwmon0/device/name"
echo 1500000000 >"$H/hwmon0/device/power1_average"
echo 1000 >"$H/hwmon0/device/power1_average_interval"
echo pmbus >"$H/hwmon1/name"
echo pin >"$H/hwmon1/power1_label"
echo 1600000000 >"$H/hwmon1/power1_input"
echo pout1 >"$H/hwmon1/power2_label"
echo 1500000000 >"$H/hwmon1/power2_input"
# the KPI gauges' window ends the slowest facility collector's interval before now: short ones
{
    printf 'store:\n  flush_interval: 300ms\ncollectors:\n  procfs:\n    enabled: false\n'
    for c in snmp redfish modbus ipmi; do printf '  %s:\n    interval: 500ms\n' $c; done
    printf 'facility:\n  kpi_window: 2s\n  kpi_interval: 1s\n'
} >"$TMP/w.yaml"
t0=$(python3 -c 'import time; print(round(time.time(), 3))')
export FAKE_NVML_T0=$t0 FAKE_NVML_POWER=300,0,5 FAKE_NVML_GPUS=2
port=$(free_port)
WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.2 \
    --duration 9 --listen "127.0.0.1:$port" >"$TMP/run.log" 2>&1 &
pid=$!
T_PIDS="$T_PIDS $pid"
gauge() { curl -s "127.0.0.1:$port/metrics" >"$TMP/m.txt" && grep -q '^wattage_node_unaccounted_power_watts{' "$TMP/m.txt"; }
check "the daemon's KPI gauges reconcile the node against its ACPI meter, no topology needed" \
    wait_for 12 gauge
uw=$(grep '^wattage_node_unaccounted_power_watts{' "$TMP/m.txt" | head -n 1 | awk '{print $2}')
check "  ... 1500 W wall - 600 W of GPUs: unaccounted $uw W (900 within 3%)" \
    python3 -c "import sys; sys.exit(0 if abs(float(sys.argv[1]) - 900) < 27 else 1)" "${uw:-0}"
wait "$pid"
check "the daemon ran" test $? -eq 0
base=$(stored "$TMP/w.db" wattage_hwmon_power_watts | sort -t, -k1,1g | head -n 1 | cut -d, -f1)
check "the ACPI meter was stored" test -n "$base"
from=$(python3 -c "print(f'{$base + 1.5:.3f}')")
to=$(python3 -c "print(f'{$base + 4.5:.3f}')")
"$BIN" kpi --db "$TMP/w.db" -c "$TMP/w.yaml" --from "$from" --to "$to" --json >"$TMP/k.json" \
    2>"$TMP/k.err"
check "kpi --json exits 0 ($(head -c 300 "$TMP/k.err"))" test $? -eq 0
msg=$(python3 - "$TMP/k.json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
s = d["seconds"]
assert len(d["nodes"]) == 1, d["nodes"]
n = d["nodes"][0]
assert n["wall_from"] == "hwmon", n
assert abs(n["wall_joules"] - 1500 * s) < 0.01 * 1500 * s, (n["wall_joules"], 1500 * s)
# the two fake GPUs at a steady 300 W each; no RAPL in the tree
assert abs(n["gpu_joules"] - 600 * s) < 0.02 * 600 * s, (n["gpu_joules"], 600 * s)
assert abs(n["unaccounted_watts"] - 900) < 0.03 * 900, n["unaccounted_watts"]
assert abs(n["psu_loss_joules"] - 100 * s) < 0.02 * 100 * s, n
assert abs(n["psu_loss_ratio"] - 100 / 1600) < 0.002, n["psu_loss_ratio"]
it = d["energy"]["it"]
assert it["from"] == "hwmon" and it["count"] == 1, it
print("ok")
PY
)
check "reconciled against the ACPI meter, IT energy from it, PSU loss ($msg)" test "$msg" = ok
"$BIN" kpi --db "$TMP/w.db" -c "$TMP/w.yaml" --from "$from" --to "$to" >"$TMP/k.txt" 2>&1
check "text: the wall is named hwmon" grep -q 'wall .* kWh (hwmon)' "$TMP/k.txt"
check "text: the PSU conversion loss line" grep -q 'PSU conversion loss [0-9.]* kWh (6\.[23]% of the PSUs' "$TMP/k.txt"
finish
