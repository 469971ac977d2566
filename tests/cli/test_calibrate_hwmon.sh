#!/usr/bin/env bash
# `wattage calibrate` on a node whose only wall is its own ACPI power meter (hwmon, no PDU, BMC
# or topology): a follower rewrites the meter's power1_average in the fake sysfs tree as a wall
# follows its chips (412 W + 1.07 x the fake GPUs' power, from the fake NVML's limits file). The
# daemon serves the sensor in its status ("hwmon", role "wall", with its time), calibrate takes
# it as the wall, recovers offset and slope within 2 % and stores the model with wall "hwmon".
source "$(dirname "$0")/lib.sh"

H=$TMP/sys/sys/class/hwmon
mkdir -p "$H/hwmon0/device" "$TMP/proc"
echo power_meter >"$H/hwmon0/device/name"
echo 1803000000 >"$H/hwmon0/device/power1_average"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
export WATTAGE_ROCM_SMI_LIBRARY=$TMP/no-librocm_smi64.so.1
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_POWER=650,0,0
export FAKE_NVML_T0=$(date +%s) FAKE_NVML_LIMITS_FILE=$TMP/limits

# the wall: 412 W + 1.07 x sum over the GPUs of min(650, its last limit), in µW, every 0.1 s
/usr/bin/python3 -c '
import os, sys, time
lim, out = sys.argv[1], sys.argv[2]
while True:
    last = {}
    try:
        for line in open(lim):
            f = line.split()
            if len(f) == 2:
                last[int(f[0])] = float(f[1])
    except OSError:
        pass
    chips = sum(min(650.0, last.get(i, 700.0)) for i in range(2))
    with open(out + ".tmp", "w") as fh:
        fh.write("%d\n" % round((412 + 1.07 * chips) * 1e6))
    os.rename(out + ".tmp", out)
    time.sleep(0.1)
' "$TMP/limits" "$H/hwmon0/device/power1_average" &
FOLLOW_PID=$!
T_PIDS="$T_PIDS $FOLLOW_PID"

PORT=$(free_port)
cat >"$TMP/w.yaml" <<EOT
daemon: {interval: 500ms, listen: "127.0.0.1:$PORT"}
store: {path: "$TMP/st/w.db"}
collectors:
  procfs: {enabled: false}
EOT
mkdir -p "$TMP/st"
"$BIN" run -c "$TMP/w.yaml" >"$TMP/run.log" 2>&1 &
RUN_PID=$!
T_PIDS="$T_PIDS $RUN_PID"
hwwall() {
    curl -sf "http://127.0.0.1:$PORT/api/v1/status" -o "$TMP/st.json" &&
        python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
w = [s for s in d["hwmon"] if s["role"] == "wall"]
assert len(w) == 1 and w[0]["chip"] == "power_meter" and w[0]["t"], d["hwmon"]
assert abs(d["hwmon_power_watts"]["wall"] - (412 + 1.07 * 1300)) < 1, d["hwmon_power_watts"]
' "$TMP/st.json" 2>/dev/null
}
check "the daemon's status has the ACPI meter as the hwmon wall (1803 W)" wait_for 20 hwwall

"$BIN" calibrate -c "$TMP/w.yaml" --load "sleep 600" --steps 100,75,50,30 --hold 4s \
    >"$TMP/c.out" 2>"$TMP/c.err"
rc=$?
if [[ $rc == 0 ]] && grep -q '^model of node .* stored' "$TMP/c.out" &&
    grep -q '^fit (hwmon): ' "$TMP/c.out"; then ok "calibrate fits against the hwmon wall and stores the model"
else not_ok "calibrate fits against the hwmon wall and stores the model" "rc=$rc" "$(cat "$TMP/c.out" "$TMP/c.err")"; fi
check "each step shows the hwmon wall" test "$(grep -c '^step .* hwmon .* W  (' "$TMP/c.out")" -eq 4
fit=$(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["models"]
assert len(m) == 1 and m[0]["wall"] == "hwmon" and m[0]["tracks"], m
assert abs(m[0]["a_watts"] - 412) / 412 < 0.02, m[0]["a_watts"]
assert abs(m[0]["b"] - 1.07) / 1.07 < 0.02, m[0]["b"]
assert m[0]["points"] == 4, m
print("a %.1f W, b %.4f" % (m[0]["a_watts"], m[0]["b"]))
' "$TMP/st/calibration.json" 2>"$TMP/py.err")
if [[ -n $fit ]]; then ok "the fit recovers 412 W + 1.07 x chips within 2 % ($fit)"
else not_ok "the fit recovers 412 W + 1.07 x chips within 2 %" "$(cat "$TMP/py.err")" "$(cat "$TMP/c.out")"; fi
if awk '{ last[$1] = $2 } END { for (g in last) if (last[g] != 700) exit 1 }' "$TMP/limits"; then
    ok "the limits are back at the end"
else not_ok "the limits are back at the end" "$(tail -4 "$TMP/limits")"; fi

# a meter that stops moving with the chips: "wall does not track chip", nothing stored
kill "$FOLLOW_PID"
wait "$FOLLOW_PID" 2>/dev/null
rm -f "$TMP/st/calibration.json"
"$BIN" calibrate -c "$TMP/w.yaml" --load "sleep 600" --steps 100,60,30 --hold 3s \
    >"$TMP/n.out" 2>"$TMP/n.err"
rc=$?
if [[ $rc == 1 ]] && grep -q 'wall does not track chip' "$TMP/n.err" &&
    [[ ! -e $TMP/st/calibration.json ]]; then ok "a stuck hwmon wall: does not track, no model"
else not_ok "a stuck hwmon wall: does not track, no model" "rc=$rc" "$(cat "$TMP/n.out" "$TMP/n.err")"; fi
kill -TERM "$RUN_PID"
wait "$RUN_PID"
check "the daemon stopped cleanly" test $? -eq 0
finish
