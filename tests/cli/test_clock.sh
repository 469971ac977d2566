#!/usr/bin/env bash
# The clock's discipline on every figure, on the real binary. WATTAGE_CLOCK_FILE stands in for
# the kernel's ntp_adjtime (read on every poll, so the test changes it while the daemon runs):
# synchronised, then unsynchronised, then synchronised with a maximum error above the bound,
# then well again. /metrics has the wattage_clock_* gauges of each phase and a fake sysfs PTP
# clock's info; `wattage energy`, `kpi`, `report` and a job's figures over a window carry a
# warning exactly when the clock was unsynchronised or its maximum error above
# daemon.clock_max_error within it, in JSON ("warnings") and in text.
. tests/cli/lib.sh
mkdir -p "$TMP/sys/sys/class/ptp/ptp0" "$TMP/proc"
echo "fake-phc" >"$TMP/sys/sys/class/ptp/ptp0/clock_name"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc WATTAGE_NVML_LIBRARY=$FAKE_NVML
export FAKE_NVML_GPUS=1 FAKE_NVML_POWER=300,120,5
export FAKE_NVML_T0=$(python3 -c 'import time; print(round(time.time(), 3))')
export WATTAGE_CLOCK_FILE=$TMP/clock
clock() { printf '%s\n' "$@" >"$TMP/clock.new" && mv "$TMP/clock.new" "$TMP/clock"; }
now() { python3 -c 'import time; print(f"{time.time():.3f}")'; }
PORT=$(free_port)
export WATTAGE_URL=http://127.0.0.1:$PORT
metric() { curl -s "$WATTAGE_URL/metrics" | grep -E "^$1 " | awk '{print $2}'; }
metric_is() { python3 -c 'import sys; sys.exit(0 if sys.argv[1] and abs(float(sys.argv[1]) - float(sys.argv[2])) < 1e-9 else 1)' "$(metric "$1")" "$2"; }

clock "status 0x1" "maxerror_us 5000" "esterror_us 120" "offset_us -42"
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/w.yaml"
bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.2 --listen "127.0.0.1:$PORT" \
    2>"$TMP/run.log"
check "the daemon answers" wait_for 10 curl -sf "$WATTAGE_URL/healthz" -o /dev/null
check "wattage_clock_synchronized 1 while synchronised" wait_for 10 metric_is wattage_clock_synchronized 1
check "  maximum error 5 ms" metric_is wattage_clock_maximum_error_seconds 0.005
check "  estimated error 120 us" metric_is wattage_clock_estimated_error_seconds 0.00012
check "  offset -42 us" metric_is wattage_clock_offset_seconds -4.2e-05
check "  status word 1 (STA_PLL)" metric_is wattage_clock_status 1
check "a PTP clock of the sysfs tree has its info series" \
    bash -c "curl -s $WATTAGE_URL/metrics | grep -q '^wattage_clock_ptp_info{device=\"ptp0\",clock=\"fake-phc\"} 1'"
"$BIN" job start spans >/dev/null
sleep 1.5
t1=$(now)
sleep 1.5
t2=$(now)

clock "status 0x40" "maxerror_us 16000000" "esterror_us 16000000"
check "wattage_clock_synchronized 0 once unsynchronised" wait_for 10 metric_is wattage_clock_synchronized 0
check "  and /readyz says why" bash -c "curl -s $WATTAGE_URL/readyz | grep -q '\"component\":\"clock\"'"
sleep 1.5
t3=$(now)

clock "status 0x1" "maxerror_us 350000" "esterror_us 2000"
check "synchronised again, maximum error 350 ms" wait_for 10 metric_is wattage_clock_maximum_error_seconds 0.35
check "  wattage_clock_synchronized 1" metric_is wattage_clock_synchronized 1
sleep 0.5
t4=$(now)
sleep 1.5
t5=$(now)

clock "status 0x1" "maxerror_us 2000" "esterror_us 100"
check "well again: maximum error 2 ms" wait_for 10 metric_is wattage_clock_maximum_error_seconds 0.002
sleep 0.5
t6=$(now)
sleep 1.5
t7=$(now)
"$BIN" job end spans --json >"$TMP/job.json" 2>"$TMP/job.err"
"$BIN" job show spans >"$TMP/job.txt" 2>&1
sleep 0.5 # the last flush

warnings() { # FILE: the warnings of a JSON document, one a line
    python3 -c 'import json, sys; [print(w) for w in json.load(open(sys.argv[1])).get("warnings", [])]' "$1" 2>/dev/null
}
e() { "$BIN" energy --db "$TMP/w.db" --from "$1" --to "$2" "${@:3}"; }

e "$t1" "$t2" --json >"$TMP/e1.json"
check "energy over the synchronised phase: no warnings ($(warnings "$TMP/e1.json"))" \
    test -z "$(warnings "$TMP/e1.json")"
e "$t2" "$t3" --json >"$TMP/e2.json"
check "energy over the unsynchronised phase: a warning that says so" \
    grep -q "not synchronised" <(warnings "$TMP/e2.json")
check "  and only that one (the 16 s error is the unsynchronised clock's own)" \
    test "$(warnings "$TMP/e2.json" | grep -vc "maximum error\|not synchronised")" -eq 0
e "$t4" "$t5" --json >"$TMP/e3.json"
check "energy over the 350-ms phase: the maximum error above daemon.clock_max_error" \
    grep -q "maximum error reached 0.350 s in this window, above daemon.clock_max_error (0.100 s)" \
    <(warnings "$TMP/e3.json")
check "  and not unsynchronised" bash -c "! grep -q 'not synchronised' <(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(\"warnings\"))' $TMP/e3.json)"
printf 'daemon:\n  clock_max_error: 500ms\n' >"$TMP/loose.yaml"
e "$t4" "$t5" --json -c "$TMP/loose.yaml" >"$TMP/e4.json"
check "with daemon.clock_max_error 500ms the 350-ms phase has no warning" \
    test -z "$(warnings "$TMP/e4.json")"
e "$t6" "$t7" --json >"$TMP/e5.json"
check "energy over the last, well phase: no warnings" test -z "$(warnings "$TMP/e5.json")"
e "$t1" "$t7" >"$TMP/e6.txt"
check "energy's text over the whole run has the warning lines" \
    bash -c "grep -q '^warning: the clock was not synchronised for about' $TMP/e6.txt && grep -q '^warning: the clock.s maximum error reached' $TMP/e6.txt"
check "  the time unsynchronised is about the phase's (more than half of t2..t3, less than t2..t4)" python3 -c '
import re, sys
m = re.search(r"for about (\d+) s", open(sys.argv[1]).read())
t2, t3, t4 = map(float, sys.argv[2:])
assert m and 0.5 * (t3 - t2) - 1 <= int(m.group(1)) <= t4 - t2 + 1, (m and m.group(1), t2, t3, t4)' \
    "$TMP/e6.txt" "$t2" "$t3" "$t4"

"$BIN" kpi --db "$TMP/w.db" --from "$t2" --to "$t3" --json >"$TMP/k.json" 2>/dev/null
check "kpi --json over the unsynchronised phase has the warning" grep -q "not synchronised" <(warnings "$TMP/k.json")
"$BIN" kpi --db "$TMP/w.db" --from "$t2" --to "$t3" >"$TMP/k.txt" 2>/dev/null
check "  and kpi's text a warning line" grep -q "^warning: the clock was not synchronised" "$TMP/k.txt"
"$BIN" kpi --db "$TMP/w.db" --from "$t1" --to "$t2" --json >"$TMP/k1.json" 2>/dev/null
check "kpi over the synchronised phase: none" test -z "$(warnings "$TMP/k1.json")"
"$BIN" report --db "$TMP/w.db" --from "$t2" --to "$t5" --format json -o "$TMP/r.json" 2>"$TMP/r.err"
check "report --format json has both warnings" \
    bash -c "warnings() { python3 -c 'import json,sys; [print(w) for w in json.load(open(sys.argv[1])).get(\"warnings\", [])]' \"\$1\"; }; warnings $TMP/r.json | grep -q 'not synchronised' && warnings $TMP/r.json | grep -q 'maximum error'"
check "  and says them on stderr" grep -q "wattage report: warning: the clock was not synchronised" "$TMP/r.err"
"$BIN" report --db "$TMP/w.db" --from "$t2" --to "$t5" --format html -o "$TMP/r.html" 2>/dev/null
check "  the HTML report has a Warnings section" grep -q "<ul id='warnings'><li>the clock was not synchronised" "$TMP/r.html"
check "the job's JSON (spanning the phases) has the warnings" grep -q "not synchronised" <(warnings "$TMP/job.json")
check "  and job show prints them" grep -q "warning: the clock was not synchronised" "$TMP/job.txt"
finish
