#!/usr/bin/env bash
# Each field at its own cadence (collectors.nvml.slow_interval) on the real daemon and the fake
# NVML, whose call log counts every NVML call:
#  - "fast": ticks of 0.5 s, slow fields every 2 s: status shows the slow fields and the
#    interval; a limit set by another tool (the fake's limits file) is on /metrics within a
#    slow interval of ticks; the power limit and remapped rows are read at most
#    ticks * 0.5 / 2 + 2 times while power is read every tick; the stored limit series has a
#    reading at every tick power has (no gap);
#  - "slow": slow fields every hour: a limit set by another tool is not read at the ticks, an
#    XID event makes the GPU read them (the rows remapped meanwhile show), and a reload (SIGHUP)
#    reads them again (the new limit shows).
. tests/cli/lib.sh
mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty WATTAGE_NVML_LIBRARY=$FAKE_NVML
export FAKE_NVML_GPUS=1

# m PORT NAME [LABEL=VALUE]: the value of the one sample of NAME on /metrics with that label
m() {
    curl -sf "http://127.0.0.1:$1/metrics" | python3 -c '
import re, sys
name, want = sys.argv[1], sys.argv[2:]
for line in sys.stdin:
    g = re.match(r"^(\w+)(?:\{(.*)\})? (\S+)", line)
    if g and g.group(1) == name and all(w in (g.group(2) or "") for w in want):
        print(float(g.group(3)))
        break' "$2" "${@:3}"
}
# is PORT NAME VALUE [LABEL=VALUE]: the sample reads VALUE (asked again at each call: for wait_for)
is() { test "$(m "$1" "$2" "${@:4}")" = "$3"; }
# ticks_past LOG N: the daemon logged at least N ticks
ticks_past() { test "$(ticks "$1")" -ge "$2"; }
calls() { grep -cx "$2" "$1" || true; }
ticks() { grep -c ' debug nvml: tick' "$1" || true; }

# --- fast: slow fields every 2 s at 0.5-s ticks
port=$(free_port)
: >"$TMP/f.limits"
printf 'daemon:\n  interval: 0.5s\ncollectors:\n  nvml:\n    slow_interval: 2s\n' >"$TMP/f.yaml"
FAKE_NVML_CALL_LOG=$TMP/f.calls FAKE_NVML_LIMITS_FILE=$TMP/f.limits \
    bg "$BIN" run -c "$TMP/f.yaml" --db "$TMP/f.db" --listen "127.0.0.1:$port" --log-level debug \
    >"$TMP/f.log" 2>&1
fpid=$!
check "the daemon answers" wait_for 20 curl -sf "http://127.0.0.1:$port/healthz" -o /dev/null
st=$(curl -sf "http://127.0.0.1:$port/api/v1/status")
check "GET /api/v1/status: nvml's slow fields and interval" python3 -c '
import json, sys
c = [c for c in json.loads(sys.argv[1])["collectors"] if c["name"] == "nvml"][0]
f = c["slow_fields"]
sys.exit(0 if c["slow_interval_seconds"] == 2 and "power_limit" in f and "remapped_rows" in f
         and "ecc_aggregate" in f and "power" not in f else 1)' "$st"
check "the limit starts at the default 700 W" wait_for 10 is "$port" wattage_gpu_power_limit_watts 700.0
sleep 1
t_set=$(date +%s.%N)
echo "0 450" >>"$TMP/f.limits" # nvidia-smi -pl 450, another tool's
check "a limit set by another tool is seen" wait_for 30 is "$port" wattage_gpu_power_limit_watts 450.0
sleep 3
kill -TERM "$fpid"
wait "$fpid" 2>/dev/null
n=$(ticks "$TMP/f.log")
power=$(calls "$TMP/f.calls" nvmlDeviceGetPowerUsage)
limit=$(calls "$TMP/f.calls" nvmlDeviceGetEnforcedPowerLimit)
remap=$(calls "$TMP/f.calls" nvmlDeviceGetRemappedRows)
bound=$((n * 5 / 20 + 2))
check "power is read every tick ($power reads, $n ticks)" test "$power" -ge "$n" -a "$n" -ge 8
check "the power limit is read at most $bound times in $n ticks (got $limit)" test "$limit" -ge 1 -a "$limit" -le "$bound"
check "remapped rows are read at most $bound times in $n ticks (got $remap)" test "$remap" -ge 1 -a "$remap" -le "$bound"
stored "$TMP/f.db" 'wattage_gpu_power_watts{gpu="0"}' | cut -d, -f1 | sort -u >"$TMP/f.power"
stored "$TMP/f.db" 'wattage_gpu_power_limit_watts{gpu="0"}' | cut -d, -f1 | sort -u >"$TMP/f.limit"
check "the stored limit has a reading at every tick power has ($(wc -l <"$TMP/f.power") ticks)" \
    cmp "$TMP/f.power" "$TMP/f.limit"
check "... and power has them" test "$(wc -l <"$TMP/f.power")" -ge 8
# the ticks between the change and the first 450 W reading: at most a slow interval of them + 2
after=$(stored "$TMP/f.db" 'wattage_gpu_power_limit_watts{gpu="0"}' | sort -t, -k1 -n |
    awk -F, -v t="$t_set" '$1 >= t { n++; if ($NF == 450) { print n; exit } }')
check "the new limit is read within a slow interval of ticks of the change (tick ${after:-none})" \
    test "${after:-99}" -le $((2 * 2 + 2))

# --- slow: every hour; an XID at 15 s of the fake's time, rows remapped from 13 s
T0=$(python3 -c 'import time; print(repr(time.time()))')
port=$(free_port)
: >"$TMP/s.limits"
printf 'daemon:\n  interval: 0.5s\ncollectors:\n  nvml:\n    slow_interval: 1h\n' >"$TMP/s.yaml"
FAKE_NVML_T0=$T0 FAKE_NVML_XID=0:15:79 FAKE_NVML_REMAP=0:13:0:1:0:0 FAKE_NVML_LIMITS_FILE=$TMP/s.limits \
    FAKE_NVML_CALL_LOG=$TMP/s.calls \
    bg "$BIN" run -c "$TMP/s.yaml" --db "$TMP/s.db" --listen "127.0.0.1:$port" --log-level debug \
    >"$TMP/s.log" 2>&1
spid=$!
check "the slow daemon answers" wait_for 20 curl -sf "http://127.0.0.1:$port/healthz" -o /dev/null
check "no row remapped at start" wait_for 10 is "$port" wattage_gpu_remapped_rows 0.0 'kind="uncorrectable"'
echo "0 450" >>"$TMP/s.limits"
n0=$(ticks "$TMP/s.log")
wait_for 20 ticks_past "$TMP/s.log" $((n0 + 6))
el=$(python3 -c "import time; print(round(time.time() - $T0, 1))")
check "a limit set by another tool is not read at the ticks (1h; ${el}s after T0)" test "$(m "$port" wattage_gpu_power_limit_watts)" = 700.0
check "after the XID the remapped row shows" wait_for 30 is "$port" wattage_gpu_remapped_rows 1.0 'kind="uncorrectable"'
check "... and so does the new limit, read with it" test "$(m "$port" wattage_gpu_power_limit_watts)" = 450.0
limit=$(calls "$TMP/s.calls" nvmlDeviceGetEnforcedPowerLimit)
check "the limit was read twice: at start and after the XID (got $limit)" test "$limit" = 2
echo "0 300" >>"$TMP/s.limits"
kill -HUP "$spid"
check "a reload reads the slow fields again" wait_for 30 is "$port" wattage_gpu_power_limit_watts 300.0
kill -TERM "$spid"
wait "$spid" 2>/dev/null
# the reloaded collector's event set gets the XID again (the fake keeps past events for a new
# set): one read at its start, perhaps one more for it
limit=$(calls "$TMP/s.calls" nvmlDeviceGetEnforcedPowerLimit)
check "the reload read the limit once or twice more (got $limit in all)" test "$limit" -ge 3 -a "$limit" -le 4
finish
