#!/usr/bin/env bash
# `wattage job end` prints final figures: the store writes every 2 s here, so at the end the
# job's window is not on disk yet; the command waits (at most --wait, default 5 s) until the
# store covers it, prints coverage 100%, and the figure it prints is the one `job show` gives
# later. With --wait 0 what it prints is labelled provisional, with its coverage.
. tests/cli/lib.sh
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
printf 'store:\n  flush_interval: 2s\n' >"$TMP/w.yaml"
export FAKE_NVML_T0=$(python3 -c 'import time; print(round(time.time(), 3))')
export FAKE_NVML_POWER=300,120,5 FAKE_NVML_GPUS=2
PORT=$(free_port)
export WATTAGE_URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.2 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 10 curl -sf "$WATTAGE_URL/healthz" -o /dev/null

"$BIN" job start waited >/dev/null
sleep 1
"$BIN" job end waited >"$TMP/end.txt" 2>"$TMP/end.err"
rc=$?
check "job end exits 0 ($(cat "$TMP/end.err"))" test "$rc" -eq 0
check "job end prints coverage 100% ($(grep energy "$TMP/end.txt"))" \
    grep -q 'energy .* coverage 100.0%' "$TMP/end.txt"
check "... and nothing provisional" bash -c '! grep -q provisional "$0"' "$TMP/end.txt"

"$BIN" job start waited-json >/dev/null
sleep 1
"$BIN" job end waited-json --json >"$TMP/end.json"
sleep 2.5 # two flushes later: everything is on disk
"$BIN" job show waited-json --json >"$TMP/show.json"
msg=$(python3 - "$TMP/end.json" "$TMP/show.json" <<'PY' 2>&1
import json, sys
e, s = (json.load(open(f)) for f in sys.argv[1:3])
assert e["provisional"] is False, e.get("provisional")
assert e["kpi"]["coverage"] >= 0.999, e["kpi"]["coverage"]
a, b = e["kpi"]["energy_joules"], s["kpi"]["energy_joules"]
assert abs(a - b) <= 1e-9 * b, (a, b)
print("ok")
PY
)
check "job end --json: provisional false, the same energy as job show later ($msg)" test "$msg" = ok

"$BIN" job start hasty >/dev/null
sleep 1
"$BIN" job end hasty --wait 0 >"$TMP/hasty.txt" 2>"$TMP/hasty.err"
rc=$?
check "job end --wait 0 exits 0 ($(cat "$TMP/hasty.err"))" test "$rc" -eq 0
check "... and labels its figures provisional, with their coverage ($(grep provisional "$TMP/hasty.txt"))" \
    grep -qE '^  provisional: the store covers [0-9.]+% of the window so far' "$TMP/hasty.txt"
msg=$("$BIN" job end hasty --wait x 2>&1)
rc=$?
check "job end --wait x: exit 2, names the option ($msg)" bash -c '[[ $0 == 2 && $1 == *"--wait"* ]]' "$rc" "$msg"
finish
