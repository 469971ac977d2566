#!/usr/bin/env bash
# hwmon sensors over a fake sysfs tree written from the kernel's ABI (an ACPI power meter with its
# attributes on the ACPI device, a PMBus PSU, amdgpu, xe): /metrics shows each sensor with its
# role; a value changed in the tree reaches /metrics; the readings are stored and `wattage energy`
# counts them; a sensor that reads garbage, one out of range and one that vanishes are each said
# once while the rest goes on.
. tests/cli/lib.sh
H=$TMP/sys/sys/class/hwmon
mkdir -p "$H/hwmon0/device" "$H/hwmon1" "$H/hwmon2" "$H/hwmon3" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
export WATTAGE_NVML_LIBRARY=$TMP/no-libnvidia-ml.so.1
export WATTAGE_ROCM_SMI_LIBRARY=$TMP/no-librocm_smi64.so.1
# the ACPI power meter: name and attributes on the ACPI device (acpi_power_meter.c)
echo power_meter >"$H/hwmon0/device/name"
echo 450000000 >"$H/hwmon0/device/power1_average"
echo 1000 >"$H/hwmon0/device/power1_average_interval"
echo "HPE system board" >"$H/hwmon0/device/power1_oem_info"
# a PMBus PSU (Documentation/hwmon/pmbus.rst labels)
echo pmbus >"$H/hwmon1/name"
echo pin >"$H/hwmon1/power1_label"
echo 500000000 >"$H/hwmon1/power1_input"
echo pout1 >"$H/hwmon1/power2_label"
echo 470000000 >"$H/hwmon1/power2_input"
# amdgpu: power1_average, µW
echo amdgpu >"$H/hwmon2/name"
echo PPT >"$H/hwmon2/power1_label"
echo 120000000 >"$H/hwmon2/power1_average"
# xe: energy1_input, µJ
echo xe >"$H/hwmon3/name"
echo card >"$H/hwmon3/energy1_label"
echo 5000000 >"$H/hwmon3/energy1_input"
printf 'store:\n  flush_interval: 500ms\ncollectors:\n  procfs:\n    enabled: false\n' >"$TMP/w.yaml"

port=$(free_port)
"$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.2 --duration 12 \
    --listen "127.0.0.1:$port" >"$TMP/run.log" 2>&1 &
pid=$!
T_PIDS="$T_PIDS $pid"
metrics() { curl -s "127.0.0.1:$port/metrics" >"$TMP/m.txt"; }
has() { metrics && grep -q "$1" "$TMP/m.txt"; }
check "the daemon serves the wall meter" wait_for 15 has '^wattage_hwmon_power_watts{.*role="wall"} 450$'
check "with its OEM label and averaging interval" \
    grep -q '^wattage_hwmon_average_interval_seconds{chip="power_meter",sensor="power1",label="HPE system board",role="wall"} 1$' "$TMP/m.txt"
check "the PSU's input and output" bash -c "grep -q '^wattage_hwmon_power_watts{chip=\"pmbus\",sensor=\"power1\",label=\"pin\",role=\"psu_in\"} 500$' '$TMP/m.txt' && grep -q '^wattage_hwmon_power_watts{chip=\"pmbus\",sensor=\"power2\",label=\"pout1\",role=\"psu_out\"} 470$' '$TMP/m.txt'"
check "amdgpu as role gpu" grep -q '^wattage_hwmon_power_watts{chip="amdgpu",sensor="power1",label="PPT",role="gpu"} 120$' "$TMP/m.txt"
check "xe's energy counter" grep -q '^wattage_hwmon_energy_joules_total{chip="xe",sensor="energy1",label="card",role="gpu",method="counter"} 5$' "$TMP/m.txt"
check "power-only sensors have an integrated energy series" \
    test "$(grep -c '^wattage_hwmon_energy_joules_total{.*method="integrated"}' "$TMP/m.txt")" -eq 4
check "the family is typed and documented" \
    bash -c "grep -q '^# TYPE wattage_hwmon_energy_joules_total counter' '$TMP/m.txt' && grep -q '^# HELP wattage_hwmon_power_watts ' '$TMP/m.txt'"

echo 600000000 >"$H/hwmon0/device/power1_average"
echo 25000000 >"$H/hwmon3/energy1_input"
check "a value changed in the tree reaches /metrics" wait_for 5 has '^wattage_hwmon_power_watts{.*role="wall"} 600$'
check "the energy counter moves with it" wait_for 5 has '^wattage_hwmon_energy_joules_total{chip="xe".*} 25$'

# faults: garbage, out of range, vanished; each said once, the rest goes on
echo "garbage" >"$H/hwmon1/power1_input"
echo 4294967295000 >"$H/hwmon2/power1_average"
rm -f "$H/hwmon3/energy1_input"
lacks() { metrics && ! grep -q "$1" "$TMP/m.txt"; }
check "the garbage PSU input is dropped" wait_for 5 lacks '^wattage_hwmon_power_watts{.*role="psu_in"}'
check "the out-of-range amdgpu reading is refused" wait_for 5 lacks '^wattage_hwmon_power_watts{chip="amdgpu"'
check "the vanished xe counter is dropped" wait_for 5 lacks '^wattage_hwmon_energy_joules_total{chip="xe"'
check "the wall and the PSU output go on" bash -c "grep -q '^wattage_hwmon_power_watts{.*role=\"wall\"} 600$' '$TMP/m.txt' && grep -q '^wattage_hwmon_power_watts{.*role=\"psu_out\"} 470$' '$TMP/m.txt'"
echo 510000000 >"$H/hwmon1/power1_input"
check "a sensor that reads well again is back" wait_for 5 has '^wattage_hwmon_power_watts{.*role="psu_in"} 510$'
wait "$pid"
check "the daemon ran and stopped cleanly" test $? -eq 0
check "garbage said once" test "$(grep -c 'hwmon1/power1_input: expected an unsigned integer' "$TMP/run.log")" -eq 1
check "out of range said once" test "$(grep -c 'hwmon2/power1_average: 4294967295000 µW is out of range' "$TMP/run.log")" -eq 1
check "the vanished sensor said once" test "$(grep -c 'hwmon3/energy1_input: No such file' "$TMP/run.log")" -eq 1
check "the PSU's return said once" test "$(grep -c 'hwmon: sensor back hwmon=hwmon1' "$TMP/run.log")" -eq 1

n=$(stored "$TMP/w.db" 'wattage_hwmon_power_watts{role="wall"}' | wc -l)
check "the wall power is stored ($n readings)" test "$n" -ge 10
n600=$(stored "$TMP/w.db" 'wattage_hwmon_power_watts{role="wall"}' | grep -c ',600$')
check "with the changed value ($n600 readings of 600 W)" test "$n600" -ge 1
"$BIN" energy --db "$TMP/w.db" --from -1h --to now --json >"$TMP/e.json" 2>"$TMP/e.err"
check "energy --json exits 0 ($(head -c 200 "$TMP/e.err"))" test $? -eq 0
msg=$(python3 - "$TMP/e.json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
rows = [s for s in d["series"] if s.get("role") == "wall"]
assert len(rows) == 1, d["series"]
w = rows[0]
assert w["method"] == "integrated", w
# 450 W, then 600 W, for about 12 s: between 450 × 4 and 600 × 13 J (the first reading is an
# average over the second before it, its 1-s window, which the integration covers too)
assert 1800 < w["energy_joules"] < 7800, w
xe = [s for s in d["series"] if s.get("chip") == "xe"]
assert len(xe) == 1 and xe[0]["method"] == "counter", xe
assert abs(xe[0]["energy_joules"] - 20.0) < 1e-6, xe
print("ok")
PY
)
check "wattage energy counts the wall meter (integrated) and xe (counter) ($msg)" test "$msg" = ok
finish
