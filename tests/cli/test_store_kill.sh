#!/usr/bin/env bash
# Durability: the running daemon is killed with SIGKILL at random moments, 22 times, then
# restarted. After each kill the store passes PRAGMA integrity_check and lost at most one flush
# interval (plus one poll) of readings; at the end the energy over the whole span (the GPU's
# hardware counter spans every restart) matches the fake's exact energy: never counted twice.
. tests/cli/lib.sh
EXACT=${WATTAGE_BUILD:-build}/tests/fakes/fake_nvml_energy
KILLS=${WATTAGE_KILLS:-22}
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
# WATTAGE_STORE_PACKED=1 (test_store_kill_packed.sh): the same with store.packed_ticks (the
# default); without it, packed_ticks: false, a row per reading
printf 'store:\n  flush_interval: 500ms\n' >"$TMP/w.yaml"
if [[ ${WATTAGE_STORE_PACKED:-0} == 1 ]]; then printf '  packed_ticks: true\n' >>"$TMP/w.yaml"
else printf '  packed_ticks: false\n' >>"$TMP/w.yaml"; fi # the rows path, kept for stores that ask
FLUSH=0.5 POLL=0.2 SLACK=0.25
DB=$TMP/w.db
t0=$(python3 -c 'import time; print(round(time.time(), 3))')
export FAKE_NVML_T0=$t0 FAKE_NVML_POWER=250,150,3 FAKE_NVML_GPUS=4
export WATTAGE_NVML_LIBRARY=$FAKE_NVML

now() { date +%s.%N; }
# The first and last stored time of the GPUs' energy counters (unix seconds, ms), as the store's
# readers see them (rows, packed ticks and chunks alike); none: "0 0".
stored_span() {
    "$BIN" query --db "$DB" --from 0 --to now --csv wattage_gpu_energy_joules_total 2>/dev/null |
        python3 -c "
import sys, datetime
ts = [datetime.datetime.strptime(l.split(',')[0], '%Y-%m-%dT%H:%M:%S.%fZ')
      .replace(tzinfo=datetime.timezone.utc).timestamp() for l in sys.stdin if l[:1].isdigit()]
print(f'{min(ts):.3f} {max(ts):.3f}' if ts else '0 0')"
}
bad_integrity=0 asserted=0 lost_too_much=""
for i in $(seq 1 "$KILLS"); do
    # made here, not by the background job's redirection: on a loaded machine a kill 0.05 s
    # after the start can come before the job has opened it
    : >"$TMP/run$i.log"
    "$BIN" run -c "$TMP/w.yaml" --db "$DB" --interval $POLL --listen "127.0.0.1:$(free_port)" \
        --log-level debug >"$TMP/run$i.log" 2>&1 &
    pid=$!
    T_PIDS="$T_PIDS $pid"
    # odd kills hit the start-up (before or around the first flush), even ones a running writer:
    # 0.8-2 s after its first tick (more than a flush and its slack), counted from the tick
    # itself, so that a loaded machine slow to start the daemon still has it writing
    if ((i % 2)); then
        range="0.05, 1.0"
    else
        range="0.8, 2.0"
        wait_for 20 grep -q 'debug nvml: tick' "$TMP/run$i.log"
    fi
    sleep "$(python3 -c "import random; print(round(random.uniform($range), 3))")"
    tk=$(now)
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    ic=$(sqlite3 "$DB" 'PRAGMA integrity_check' 2>&1)
    [[ $ic == ok ]] || { bad_integrity=$((bad_integrity + 1)); echo "# kill $i: integrity: $ic"; }
    # Every NVML tick the daemon logged (debug) more than one flush interval (and a margin for
    # the commit) before the kill must be in the store. Ticks it never took (a loaded machine)
    # are not losses, so this holds however busy the host is.
    verdict=$(stored_span | python3 -c "
import sys, re, datetime
last = float(sys.stdin.read().split()[1])
ticks = []
for line in open('$TMP/run$i.log', errors='replace'):  # a kill may cut a line
    m = re.match(r'(\S+Z) debug nvml: tick', line)
    if m:
        ticks.append(datetime.datetime.strptime(m.group(1), '%Y-%m-%dT%H:%M:%S.%fZ')
                     .replace(tzinfo=datetime.timezone.utc).timestamp())
due = [t for t in ticks if t <= $tk - $FLUSH - $SLACK]
if not due: print('young')
elif last >= max(due) - 0.1: print('ok')
else: print(f'lost tick at {max(due):.3f}, last stored {last:.3f}, kill {$tk:.3f}')" 2>&1 | paste -sd' ' -)
    case $verdict in
    ok) asserted=$((asserted + 1)) ;;
    young) ;;
    *) lost_too_much="$lost_too_much kill$i: $verdict;" ;;
    esac
done
check "integrity_check ok after each of $KILLS kills" test $bad_integrity -eq 0
check "at most one flush interval lost ($asserted kills checked:${lost_too_much:- none lost more})" \
    test -z "$lost_too_much"
check "the loss bound was checked after at least half of the kills ($asserted)" \
    test "$asserted" -ge $((KILLS / 2))
runs=$(sqlite3 "$DB" "SELECT count(*) FROM runs")
check "the starts are recorded as runs ($runs)" test "$runs" -ge "$asserted"

# one clean run to end with, then the energy over everything stored
"$BIN" run -c "$TMP/w.yaml" --db "$DB" --interval $POLL --duration 2 \
    --listen "127.0.0.1:$(free_port)" >>"$TMP/run.log" 2>&1
check "a clean run after the kills" test $? -eq 0
read -r from to < <(stored_span)
rows=$(sqlite3 "$DB" "SELECT count(*) FROM readings")
packed=$(sqlite3 "$DB" "SELECT count(*) || ' rows holding ' || coalesce(sum(n), 0) FROM ticks")
if [[ ${WATTAGE_STORE_PACKED:-0} == 1 ]]; then
    check "packed: the daemon wrote ticks ($packed readings) and no row a reading ($rows)" \
        test "$rows" = 0 -a "${packed%% *}" -gt "$KILLS"
else
    check "packed_ticks: false: the daemon wrote a row per reading ($rows) and no ticks ($packed)" \
        test "$rows" -gt "$KILLS" -a "${packed%% *}" = 0
fi
"$BIN" energy --db "$DB" --from "$from" --to "$to" --json >"$TMP/e.json"
msg=$(python3 - "$TMP/e.json" "$EXACT" "$from" "$to" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
gpus = [s for s in d["series"] if "gpu" in s]
assert len(gpus) == 4, gpus
worst = 0
for s in gpus:
    exact = float(subprocess.check_output([sys.argv[2], s["gpu"], sys.argv[3], sys.argv[4]]))
    err = abs(s["energy_joules"] - exact) / exact
    worst = max(worst, err)
    assert s["method"] == "counter" and s["coverage"] > 0.999, s
    assert err < 0.005, f"gpu {s['gpu']}: {s['energy_joules']:.1f} J vs exact {exact:.1f} J"
print(f"ok worst {worst:.4%}")
PY
)
check "energy across $KILLS restarts matches the exact energy ($msg)" test "${msg%% *}" = ok

# the integrated series restarts with the daemon: each restart is a gap, and coverage says so;
# what it counts is never more than the exact energy
"$BIN" energy --db "$DB" --from "$from" --to "$to" --method integrated --json >"$TMP/i.json"
msg=$(python3 - "$TMP/i.json" "$EXACT" "$from" "$to" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
gpus = [s for s in d["series"] if "gpu" in s]
assert len(gpus) == 4, gpus
for s in gpus:
    exact = float(subprocess.check_output([sys.argv[2], s["gpu"], sys.argv[3], sys.argv[4]]))
    assert s["method"] == "integrated", s
    assert 0.1 < s["coverage"] < 0.99, s
    assert 0.1 * exact < s["energy_joules"] < exact, (s, exact)
print(f"ok coverage {gpus[0]['coverage']:.3f}")
PY
)
check "integrated energy: restarts are gaps, coverage < 1, never more than exact ($msg)" \
    test "${msg%% *}" = ok
finish
