#!/usr/bin/env bash
# collectors.hwmon.max_hold with the real daemon over a fake sysfs tree: a PMBus chip that
# updates every 1000 ms (update_interval) and an ACPI meter averaging over 1 s, at 0.5-s ticks,
# are read every other tick. On the ticks between, /metrics still shows them (as last read) with
# wattage_hwmon_reading_age_seconds saying how old; the store gets each reading once, 1 s apart,
# and the integrated energy is the written power times the time between the first and the last
# reading, exactly. The one-shot `wattage status` shows a held sensor too (its second poll, 0.25 s
# after the first, holds it) with its age.
. tests/cli/lib.sh
H=$TMP/sys/sys/class/hwmon
mkdir -p "$H/hwmon0/device" "$H/hwmon1" "$H/hwmon2" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
export WATTAGE_NVML_LIBRARY=$TMP/no-libnvidia-ml.so.1
export WATTAGE_ROCM_SMI_LIBRARY=$TMP/no-librocm_smi64.so.1
echo power_meter >"$H/hwmon0/device/name"
echo 450000000 >"$H/hwmon0/device/power1_average"
echo 1000 >"$H/hwmon0/device/power1_average_interval"
echo pmbus >"$H/hwmon1/name"
echo 1000 >"$H/hwmon1/update_interval"
echo pin >"$H/hwmon1/power1_label"
echo 500000000 >"$H/hwmon1/power1_input"
echo pout1 >"$H/hwmon1/power2_label"
echo 470000000 >"$H/hwmon1/power2_input"
# amdgpu without update_interval: every tick, never held
echo amdgpu >"$H/hwmon2/name"
echo PPT >"$H/hwmon2/power1_label"
echo 120000000 >"$H/hwmon2/power1_input"
printf 'store:\n  flush_interval: 300ms\ncollectors:\n  procfs:\n    enabled: false\n  hwmon:\n    max_hold: 10s\n' >"$TMP/w.yaml"
PIN='{chip="pmbus",sensor="power1",label="pin",role="psu_in"}'

port=$(free_port)
"$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.5 --duration 7 \
    --listen "127.0.0.1:$port" >"$TMP/run.log" 2>&1 &
pid=$!
T_PIDS="$T_PIDS $pid"
has() { curl -s "127.0.0.1:$port/metrics" >"$TMP/m.txt" && grep -q "$1" "$TMP/m.txt"; }
check "the daemon serves the PSU" wait_for 15 has "^wattage_hwmon_power_watts$PIN 500$"
# 24 scrapes 0.11 s apart: about 5 ticks, so some fall on ticks that did not read the PSU
missing=0 ages=""
for i in $(seq 24); do
    curl -s "127.0.0.1:$port/metrics" >"$TMP/s$i.txt"
    grep -q "^wattage_hwmon_power_watts$PIN 500$" "$TMP/s$i.txt" || missing=$((missing + 1))
    grep -q '^wattage_hwmon_power_watts{chip="power_meter".*role="wall"} 450$' "$TMP/s$i.txt" ||
        missing=$((missing + 1))
    grep -q '^wattage_hwmon_energy_joules_total{chip="pmbus",sensor="power1".*method="integrated"}' \
        "$TMP/s$i.txt" || missing=$((missing + 1))
    ages="$ages $(sed -n "s/^wattage_hwmon_reading_age_seconds$PIN //p" "$TMP/s$i.txt")"
    sleep 0.11
done
check "the held sensors are in every scrape (missing $missing times)" test "$missing" -eq 0
check "their age is 0 on the ticks that read them, a tick on the others (ages:$ages)" \
    python3 -c '
import sys
a = [float(x) for x in sys.argv[1:]]
# a loaded machine moves a tick: about the 1-s hold at most, never negative
assert len(a) == 24 and 0.0 in a and all(0 <= x < 2 for x in a), a
assert any(x > 0 for x in a), a
' $ages
check "the age is typed and documented" grep -q '^# HELP wattage_hwmon_reading_age_seconds ' "$TMP/m.txt"
check "a sensor not held has no age" bash -c "! grep -q '^wattage_hwmon_reading_age_seconds{chip=\"amdgpu\"' '$TMP/m.txt'"
curl -s "127.0.0.1:$port/api/v1/status" >"$TMP/st.json"
check "the status document gives the held sensor's age" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = [s for s in d["hwmon"] if s["role"] == "psu_in"][0]
assert s["power_watts"] == 500 and 0 <= s["age_seconds"] < 2, s
assert [s for s in d["hwmon"] if s["chip"] == "amdgpu" and "age_seconds" not in s], d["hwmon"]
' "$TMP/st.json"
wait "$pid"
check "the daemon ran and stopped cleanly" test $? -eq 0

# the store: each reading of the PSU once, a read every other tick (1 s apart)
stored "$TMP/w.db" "wattage_hwmon_power_watts$PIN" >"$TMP/p.csv"
stored "$TMP/w.db" 'wattage_hwmon_energy_joules_total{chip="pmbus",sensor="power1",method="integrated"}' >"$TMP/e.csv"
msg=$(python3 - "$TMP/p.csv" "$TMP/e.csv" <<'PY' 2>&1
import sys
def rows(p):
    # time,series,value
    return [(int(l.split(",", 1)[0].replace(".", "")), float(l.rsplit(",", 1)[1]))
            for l in open(p) if l.strip()]
p, e = rows(sys.argv[1]), rows(sys.argv[2])
assert len(p) >= 4 and len(p) == len(e), (len(p), len(e))
t = [x[0] for x in p]
assert t == [x[0] for x in e], "power and energy share their stamps"
gaps = [(b - a) / 1e9 for a, b in zip(t, t[1:])]
# never closer than the hold (a quarter tick of jitter aside), never every tick
assert all(0.85 < g < 2 for g in gaps), gaps
# integrated once: 500 W x the time between the first and the last reading
span = (t[-1] - t[0]) / 1e9
assert abs((e[-1][1] - e[0][1]) - 500 * span) < 1e-6, (e[-1][1] - e[0][1], 500 * span)
print("ok")
PY
)
check "stored once a read, 1 s apart, energy = 500 W x time ($msg)" test "$msg" = ok

# the one-shot status (1-s ticks): a chip updating every 2 s is held by its second poll, 0.25 s
# after the first
echo 2000 >"$H/hwmon1/update_interval"
"$BIN" status -c "$TMP/w.yaml" --json >"$TMP/o.json" 2>"$TMP/o.err"
check "status --json exits 0 ($(head -c 200 "$TMP/o.err"))" test $? -eq 0
check "status shows the held PSU with its age" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
by = {s["role"]: s for s in d["hwmon"]}
assert by["psu_in"]["power_watts"] == 500 and 0.2 < by["psu_in"]["age_seconds"] < 1, by
assert d["hwmon_power_watts"]["psu_in"] == 500 and d["psu_loss_watts"] == 30, d
' "$TMP/o.json"
"$BIN" status -c "$TMP/w.yaml" >"$TMP/o.txt" 2>&1
check "the table has the PSU with its age" grep -q '^psu_in  *pmbus  *power1  *pin  *500.0 .* 0\.[2-9]$' "$TMP/o.txt"
finish
