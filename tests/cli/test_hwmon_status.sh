#!/usr/bin/env bash
# `wattage status` shows the hwmon sensors by role from a fake sysfs tree (an ACPI power meter,
# a PMBus supply's pin and pout, amdgpu's PPT): the JSON lists each sensor with its role and
# power, sums each role, and gives the supplies' conversion loss (pin - pout, and its share of
# pin); the table names the roles, the wall and the PSU line. With collectors.hwmon.max_hold
# the sensors held to their chip's update_interval are hwmon's slow_fields.
source "$(dirname "$0")/lib.sh"
H=$TMP/sys/sys/class/hwmon
mkdir -p "$H/hwmon0/device" "$H/hwmon1" "$H/hwmon2" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
export WATTAGE_ROCM_SMI_LIBRARY=$TMP/no-librocm_smi64.so.1 WATTAGE_NVML_LIBRARY=$TMP/no-nvml.so
echo power_meter >"$H/hwmon0/device/name"
echo 450000000 >"$H/hwmon0/device/power1_average"
echo 1000 >"$H/hwmon0/device/power1_average_interval"
echo pmbus >"$H/hwmon1/name"
echo pin >"$H/hwmon1/power1_label"
echo 500000000 >"$H/hwmon1/power1_input"
echo pout1 >"$H/hwmon1/power2_label"
echo 470000000 >"$H/hwmon1/power2_input"
echo amdgpu >"$H/hwmon2/name"
echo PPT >"$H/hwmon2/power1_label"
echo 120000000 >"$H/hwmon2/power1_average"
printf 'collectors:\n  procfs:\n    enabled: false\n' >"$TMP/w.yaml"

"$BIN" status -c "$TMP/w.yaml" --json >"$TMP/s.json" 2>"$TMP/s.err"
check "status --json exits 0 ($(head -c 200 "$TMP/s.err"))" test $? -eq 0
msg=$(python3 - "$TMP/s.json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
by = {s["role"]: s for s in d["hwmon"]}
assert sorted(by) == ["gpu", "psu_in", "psu_out", "wall"], d["hwmon"]
w = by["wall"]
assert w["chip"] == "power_meter" and w["sensor"] == "power1" and w["power_watts"] == 450, w
assert w["average_interval_seconds"] == 1 and w["t"].startswith("20"), w
assert by["psu_in"]["label"] == "pin" and by["psu_out"]["power_watts"] == 470, by
assert by["gpu"]["chip"] == "amdgpu" and by["gpu"]["power_watts"] == 120, by["gpu"]
assert d["hwmon_power_watts"] == {"wall": 450, "psu_in": 500, "psu_out": 470, "gpu": 120}, d["hwmon_power_watts"]
assert abs(d["psu_loss_watts"] - 30) < 1e-9 and abs(d["psu_loss_ratio"] - 0.06) < 1e-9, d
print("ok")
PY
)
check "the JSON lists the sensors by role, their sums and the PSU loss ($msg)" test "$msg" = ok

"$BIN" status -c "$TMP/w.yaml" >"$TMP/s.txt" 2>&1
check "the table has a row per sensor with its role" \
    bash -c "grep -q '^wall  *power_meter  *power1 .* 450.0' '$TMP/s.txt' && grep -q '^psu_out  *pmbus  *power2  *pout1 .* 470.0' '$TMP/s.txt'"
check "the wall line" grep -q '^wall (hwmon): 450.0 W$' "$TMP/s.txt"
check "the PSU line with its conversion loss" \
    grep -q '^PSU: in 500.0 W, out 470.0 W, conversion loss 30.0 W (6.0%)$' "$TMP/s.txt"

# collectors.hwmon.max_hold: the PSU chip updates every 2 s, so its two sensors are held (the
# collector's slow_fields, max_hold its slow interval); the wall meter (1 s) and amdgpu are not
echo 2000 >"$H/hwmon1/update_interval"
printf 'collectors:\n  procfs:\n    enabled: false\n  hwmon:\n    max_hold: 10s\n' >"$TMP/h.yaml"
"$BIN" status -c "$TMP/h.yaml" --json >"$TMP/h.json" 2>"$TMP/h.err"
check "status --json with max_hold exits 0 ($(head -c 200 "$TMP/h.err"))" test $? -eq 0
msg=$(python3 - "$TMP/h.json" <<'PY2' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
c = [c for c in d["collectors"] if c["name"] == "hwmon"][0]
assert sorted(c["slow_fields"]) == ["hwmon1/power1_input", "hwmon1/power2_input"], c
assert c["slow_interval_seconds"] == 10, c
print("ok")
PY2
)
check "the held sensors are hwmon's slow fields ($msg)" test "$msg" = ok
printf 'collectors:\n  procfs:\n    enabled: false\n  hwmon:\n    max_hold: off\n' >"$TMP/off.yaml"
"$BIN" status -c "$TMP/off.yaml" --json >"$TMP/o.json" 2>/dev/null
check "with max_hold off hwmon has no slow fields" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = [c for c in d["collectors"] if c["name"] == "hwmon"][0]
assert "slow_fields" not in c, c
' "$TMP/o.json"

# no hwmon tree: the JSON has an empty list and no PSU figures, the table no hwmon rows
rm -rf "$H"
"$BIN" status -c "$TMP/w.yaml" --json >"$TMP/e.json" 2>/dev/null
check "without sensors: an empty list, no sums" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["hwmon"] == [] and "hwmon_power_watts" not in d and "psu_loss_watts" not in d, d
' "$TMP/e.json"
finish
