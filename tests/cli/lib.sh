# Shared helpers for the integration scripts: TAP output, a private temp dir, free loopback
# ports, and the closing count line. Source it; call `finish` at the end.
set -u
T_PASSED=0 T_FAILED=0 T_SKIPPED=0 T_N=0
BIN=${WATTAGE_BIN:-build/wattage}
FAKE_NVML=${WATTAGE_FAKE_NVML:-$PWD/build/tests/fakes/libnvidia-ml.so.1}
TMP=$(mktemp -d /tmp/wt-cli-XXXXXX)
T_PIDS=""
cleanup() {
    for p in $T_PIDS; do kill "$p" 2>/dev/null; done
    for p in $T_PIDS; do wait "$p" 2>/dev/null; done
    [[ -z ${WATTAGE_KEEP_TMP:-} ]] && rm -rf "$TMP"
}
trap cleanup EXIT

ok() { T_N=$((T_N + 1)); T_PASSED=$((T_PASSED + 1)); echo "ok $T_N - $1"; }
not_ok() { T_N=$((T_N + 1)); T_FAILED=$((T_FAILED + 1)); echo "not ok $T_N - $1"; shift; for l in "$@"; do echo "# $l"; done; }
skip() {
    T_N=$((T_N + 1))
    if [[ ${CI:-} == true ]]; then T_FAILED=$((T_FAILED + 1)); echo "not ok $T_N - $1 # skipped under CI=true: $2";
    else T_SKIPPED=$((T_SKIPPED + 1)); echo "ok $T_N - $1 # SKIP $2"; fi
}
# check NAME CMD...: ok when CMD succeeds
check() { local n=$1; shift; if "$@"; then ok "$n"; else not_ok "$n" "command failed: $*"; fi; }
finish() { echo "$T_PASSED passed, $T_FAILED failed, $T_SKIPPED skipped"; [[ $T_FAILED -eq 0 ]]; exit $?; }

# tick_gaps LOG: "N MAXGAP" for the `debug nvml: tick` lines of a daemon's log (--log-level
# debug): how many ticks and the largest gap between two in seconds (-1 with fewer than two).
tick_gaps() {
    /usr/bin/python3 - "$1" <<'PY'
import re, sys, datetime
ts = []
for line in open(sys.argv[1]):
    m = re.match(r'(\S+)Z debug nvml: tick', line)
    if m:
        ts.append(datetime.datetime.fromisoformat(m.group(1)).timestamp())
gaps = [b - a for a, b in zip(ts, ts[1:])]
print(len(ts), round(max(gaps), 3) if gaps else -1)
PY
}

# stored DB SERIES [FROM]: the stored readings of every series matching SERIES since FROM (unix
# seconds, default 0) as CSV lines "unix_seconds,series,value", read through `wattage query`, so
# a test sees what a user sees whatever the store's layout (rows, packed ticks or chunks)
stored() {
    "$BIN" query --db "$1" --from "${3:-0}" --to now --csv --unix "$2" 2>/dev/null | tail -n +2
}

# check_ticks NAME LOG MIN: ok when LOG has at least MIN ticks and no gap of 1.5 s or more
# between two (the daemons of these tests tick every 0.5 s)
check_ticks() {
    local nticks maxgap
    read -r nticks maxgap <<<"$(tick_gaps "$2")"
    check "$1 ($nticks ticks, largest gap ${maxgap}s at 0.5s)" \
        /usr/bin/python3 -c "import sys; sys.exit(0 if int(sys.argv[1]) >= int(sys.argv[3]) and 0 < float(sys.argv[2]) < 1.5 else 1)" \
        "${nticks:-0}" "${maxgap:--1}" "$3"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# bg CMD...: start in background, remember its pid in $! and for cleanup
bg() { "$@" & T_PIDS="$T_PIDS $!"; }
# wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds
wait_for() { local end=$((SECONDS + $1)); shift; until "$@" 2>/dev/null; do [[ $SECONDS -ge $end ]] && return 1; sleep 0.1; done; }
