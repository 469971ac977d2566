#!/usr/bin/env bash
# Dark power end to end, on the fake NVML: two GPUs at 60 W and utilization 0, GPU 1 held by a
# process (FAKE_NVML_PROCS_FILE). GPU 0's idle energy and idle power level show on /metrics and
# /api/v1/status and grow with its counter (60 J a second); GPU 1 has none; a process appearing
# on GPU 0 stops the count within a few ticks. Then the report's findings name GPU 0's idle kWh
# from the store, and `wattage energy` never counts the idle series as energy of their own.
source "$(dirname "$0")/lib.sh"

PORT=$(free_port)
printf 'daemon:\n  interval: 1s\nstore:\n  path: %s\n' "$TMP/w.db" >"$TMP/w.yaml"
echo "1 4242" >"$TMP/procs"
FAKE_NVML_GPUS=2 FAKE_NVML_POWER=60,0,0 FAKE_NVML_PROCS_FILE="$TMP/procs" \
    WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" \
    --listen "127.0.0.1:$PORT" >"$TMP/run.log" 2>&1 &
RUN_PID=$!
T_PIDS="$T_PIDS $RUN_PID"
wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null

metric() {
    curl -sf "http://127.0.0.1:$PORT/metrics" |
        awk -v n="$1" -v l="$2" '$1 ~ "^"n"\\{" && index($1, l) { print $NF; exit }'
}
idle_for() { # idle_for SECONDS: GPU 0 has been idle that long
    local s
    s=$(metric wattage_gpu_idle_seconds_total 'gpu="0"')
    [[ -n $s ]] && awk -v s="$s" -v m="$1" 'BEGIN { exit !(s >= m) }'
}
if wait_for 30 idle_for 4; then ok "GPU 0 with no process and utilization 0 counts idle time"
else not_ok "GPU 0 with no process and utilization 0 counts idle time" "$(curl -s "http://127.0.0.1:$PORT/metrics" | grep idle)" "$(tail -5 "$TMP/run.log")"; fi

m=$(curl -sf "http://127.0.0.1:$PORT/metrics")
e0=$(awk '$1 ~ /^wattage_gpu_idle_energy_joules_total\{/ && /gpu="0"/ { print $NF }' <<<"$m")
s0=$(awk '$1 ~ /^wattage_gpu_idle_seconds_total\{/ && /gpu="0"/ { print $NF }' <<<"$m")
p0=$(awk '$1 ~ /^wattage_gpu_idle_power_watts\{/ && /gpu="0"/ { print $NF }' <<<"$m")
if awk -v e="$e0" -v s="$s0" 'BEGIN { exit !(s > 0 && e / s > 59.4 && e / s < 60.6) }'; then
    ok "idle energy is the counter's 60 J a second ($e0 J over $s0 s)"
else not_ok "idle energy is the counter's 60 J a second" "e=$e0 s=$s0"; fi
if awk -v p="$p0" 'BEGIN { exit !(p > 59.4 && p < 60.6) }'; then ok "the idle power level is 60 W ($p0)"
else not_ok "the idle power level is 60 W" "p=$p0"; fi
if grep -q '^wattage_gpu_idle_energy_joules_total{gpu="1".*} 0$' <<<"$m" &&
    grep -q '^wattage_gpu_idle{gpu="1".*} 0$' <<<"$m" &&
    ! grep -q '^wattage_gpu_idle_power_watts{gpu="1"' <<<"$m"; then
    ok "GPU 1, held by a process at utilization 0, is not idle: 0 J and no idle level"
else not_ok "GPU 1, held by a process at utilization 0, is not idle" "$(grep 'gpu="1"' <<<"$m" | grep idle)"; fi
if grep -q '^# TYPE wattage_gpu_idle_energy_joules_total counter' <<<"$m"; then ok "the idle energy is a counter"
else not_ok "the idle energy is a counter" "$(grep idle_energy_joules <<<"$m")"; fi

st=$(curl -sf "http://127.0.0.1:$PORT/api/v1/status")
if python3 -c '
import json, sys
g = {str(x["index"]): x for x in json.loads(sys.argv[1])["gpus"]}
a, b = g["0"], g["1"]
assert a["idle"] == 1 and abs(a["idle_power_watts"] - 60) < 0.6 and a["idle_energy_today_joules"] > 0
assert b["idle"] == 0 and b["idle_energy_today_joules"] == 0 and "idle_power_watts" not in b
' "$st" 2>"$TMP/py.err"; then ok "/api/v1/status shows each GPU's idle state, today's idle energy and level"
else not_ok "/api/v1/status shows each GPU's idle state, today's idle energy and level" "$(cat "$TMP/py.err")"; fi

# A process appears on GPU 0: idle within a few ticks (the list is read once a second).
echo "0 5151" >>"$TMP/procs"
busy0() { [[ $(metric wattage_gpu_idle 'gpu="0"') == 0 ]]; }
if wait_for 5 busy0; then ok "a process on GPU 0 ends its idle run"
else not_ok "a process on GPU 0 ends its idle run" "$(metric wattage_gpu_idle 'gpu="0"')"; fi
s1=$(metric wattage_gpu_idle_seconds_total 'gpu="0"')
sleep 2.5
s2=$(metric wattage_gpu_idle_seconds_total 'gpu="0"')
if [[ -n $s1 && $s1 == "$s2" ]]; then ok "busy time is not counted as idle ($s1 s, then $s2 s)"
else not_ok "busy time is not counted as idle" "$s1 then $s2"; fi

kill -TERM "$RUN_PID"
wait "$RUN_PID"

"$BIN" energy --db "$TMP/w.db" --from -10m --to now --json >"$TMP/energy.json" 2>"$TMP/energy.err"
if [[ -s $TMP/energy.json ]] && ! grep -q idle "$TMP/energy.json"; then
    ok "wattage energy does not add the idle series to the GPUs' energy"
else not_ok "wattage energy does not add the idle series to the GPUs' energy" "$(cat "$TMP/energy.json" "$TMP/energy.err")"; fi

"$BIN" report --db "$TMP/w.db" -c "$TMP/w.yaml" --from -10m --to now --format json \
    -o "$TMP/report.json" 2>"$TMP/report.err"
if python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
f = [x for x in r["findings"] if x["kind"] == "dark_power"]
assert len(f) == 1, f
assert "GPU 0" in f[0]["title"] and "idle power level 60." in f[0]["evidence"], f
e = 60 * float(sys.argv[2])  # every idle second the daemon counted, at 60 W
assert abs(f[0]["energy_joules"] - e) <= 0.02 * e + 1, (f[0]["energy_joules"], e)
' "$TMP/report.json" "$s2" 2>"$TMP/py.err"; then ok "the report's findings name GPU 0's idle kWh and level from the store"
else not_ok "the report's findings name GPU 0's idle kWh and level from the store" "$(cat "$TMP/py.err" "$TMP/report.err")"; fi
WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 "$BIN" status -c "$TMP/w.yaml" >"$TMP/status.txt" 2>&1
if grep -q '^dark power today' "$TMP/status.txt" &&
    grep -Eq '^GPU 0: 0\.0[0-9]+ kWh idle over 0\.0 h, idle power level 60\.[0-9] W$' "$TMP/status.txt" &&
    ! grep -q '^GPU 1:' "$TMP/status.txt"; then
    ok "wattage status (no daemon) shows today's idle energy and level from the store"
else not_ok "wattage status (no daemon) shows today's idle energy and level from the store" "$(tail -8 "$TMP/status.txt")"; fi
finish
