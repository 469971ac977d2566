#!/usr/bin/env bash
# Runs every unit test executable and every CLI/integration script, side by side, then prints one
# closing line "N passed, N failed, N skipped" summed over all of them. Exit 1 if anything failed.
# Usage: tests/run.sh BUILD_DIR [PATTERN]
#        WATTAGE_TEST_QUICK=1 tests/run.sh BUILD_DIR [PATTERN]   the quick tier: no slow suite
#
# Most suites wait on daemons and peers, not on the CPU, so they run WATTAGE_TEST_JOBS at a time
# (default 3 per core, at least 4). Each suite has its own temporary directory, state and
# loopback ports (tests/cli/lib.sh), and its output is printed whole when it ends, so suites never
# interleave. A suite whose header says `# test: exclusive` (it changes the machine, as the
# package test does) runs alone after the others. A suite that runs longer than
# WATTAGE_SUITE_TIMEOUT seconds (default 900) is stopped and counted as failed. The time each
# suite took is written to BUILD_DIR/test-times.tsv, and the slowest are named at the end.
set -u
build=${1:-build}
pattern=${2:-}

# The real data sets the tests read live beside the repository, in ../shared/data (see its
# README.md). A clone made somewhere else finds them through WATTAGE_DATA_DIR or beside the
# repository it was cloned from, and runs the tests from a directory whose ../shared/data is
# them (the tree itself reached through links); without them the tests that need them fail.
if [[ ! -d ../shared/data ]]; then
    data=${WATTAGE_DATA_DIR:-}
    origin=$(git config --get remote.origin.url 2>/dev/null || true)
    if [[ -z $data && -n $origin && -d $origin/../shared/data ]]; then
        data=$origin/../shared/data
    fi
    if [[ -n $data && -d $data ]]; then
        root=$(mktemp -d /tmp/wt-tree-XXXXXX)
        chmod 0755 "$root" # the tests that run a command as another user go through it too
        trap 'rm -rf "$root"' EXIT
        mkdir -p "$root/shared" "$root/repo"
        ln -s "$(cd "$data" && pwd -P)" "$root/shared/data"
        for e in * .[!.]*; do
            [[ -e $e ]] && ln -s "$PWD/$e" "$root/repo/$e"
        done
        echo "# the data sets: $(cd "$data" && pwd -P) (through $root)"
        cd "$root/repo"
    else
        echo "# ../shared/data is missing: the tests that read the real data sets will fail" >&2
    fi
fi
export WATTAGE_BUILD=$build
export WATTAGE_SRCDIR=$PWD
export WATTAGE_BIN=$build/wattage
export WATTAGE_FAKE_NVML=$PWD/$build/tests/fakes/libnvidia-ml.so.1

cores=$(nproc 2>/dev/null || echo 1)
jobs=${WATTAGE_TEST_JOBS:-$((cores * 3 > 4 ? cores * 3 : 4))}
limit=${WATTAGE_SUITE_TIMEOUT:-900}
logs=$(mktemp -d /tmp/wt-run-XXXXXX)
trap 'rm -rf "$logs" ${root:+"$root"}' EXIT

# The slow suites (20 s or more when 6 run side by side on 2 cores, as the run's test-times.tsv
# measured), which start first so that the long ones do not hold the end of the run, and which
# the quick tier (WATTAGE_TEST_QUICK=1, `make check`) leaves out; then the rest in name order.
slow_first="test_remote_write_vm.sh test_calibrate_drift.sh test_prometheus_energy.sh test_kafka.sh
test_slurm.sh test_calibrate.sh test_report.sh test_calibrate_slow.sh test_fleet.sh test_fleet_limits.sh test_cap.sh
test_gpu_health.sh test_jobs_exec.sh test_store_kill_packed.sh test_store_kill.sh test_alerts.sh
test_ipmi.sh test_otlp.sh test_remote_write.sh test_live_page.sh test_prometheus.sh
test_assess.sh test_alert_delivery.sh test_energy_subpolls.sh test_store_full.sh test_deb.sh
test_report_source.sh test_jobs_metrics.sh test_alertmanager.sh test_idle_policy.sh
test_jobs_detect.sh test_tls.sh test_clock.sh test_snmp.sh test_daemon.sh test_jobs_api.sh
test_mig.sh test_http_malformed.sh test_remote_write_auth.sh test_layers.sh test_nvml
test_reconcile_gauges.sh test_jobs_edges.sh test_notify test_inference_fleet.sh
test_inference_kpi.sh test_remote_write_stop.sh test_prometheus_inference_rules.sh test_statement.sh
test_systemd.sh test_remote_write_faults.sh test_redfish.sh test_calibrate_snmp.sh"
declare -a order=() exclusive=()
declare -A cmd=()
add() { # add NAME CMD...: one suite
    local name=$1; shift
    [[ -n $pattern && $name != *$pattern* ]] && return
    cmd[$name]="$*"
}
for t in "$build"/tests/unit/test_*; do
    [[ $t == *.d ]] && continue
    if [[ -n ${WATTAGE_VALGRIND:-} ]]; then
        add "$(basename "$t")" valgrind -q --error-exitcode=9 --leak-check=full "$t"
    else
        add "$(basename "$t")" "$t"
    fi
done
for t in tests/cli/test_*.sh; do
    add "$(basename "$t")" bash "$t"
done
for name in $slow_first; do
    [[ -n ${cmd[$name]:-} ]] || continue
    if [[ -n ${WATTAGE_TEST_QUICK:-} ]]; then
        unset "cmd[$name]"
    else
        order+=("$name")
    fi
done
for name in $(printf '%s\n' "${!cmd[@]}" | sort); do
    [[ " ${order[*]} " == *" $name "* ]] && continue
    order+=("$name")
done
is_exclusive() { [[ $1 == *.sh ]] && head -n 20 "tests/cli/$1" | grep -q '^# test: exclusive'; }

passed=0 failed=0 skipped=0 broken="" running=0 failures=""
declare -A pid_of=() started=()
times=$build/test-times.tsv
: >"$times.tmp"

launch() {
    local name=$1
    # timeout makes its own process group and stops the whole of it, daemons included
    # shellcheck disable=SC2086 # a command line made of words without spaces
    timeout -k 10 "$limit" ${cmd[$name]} >"$logs/$name" 2>&1 </dev/null &
    pid_of[$!]=$name
    started[$name]=$EPOCHREALTIME
    running=$((running + 1))
}

# reap: waits for any suite to end, prints its output whole and adds its counts
reap() {
    local pid rc name secs out
    wait -n -p pid
    rc=$?
    name=${pid_of[$pid]}
    unset "pid_of[$pid]"
    running=$((running - 1))
    secs=$(awk -v a="${started[$name]}" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    printf '%s\t%s\n' "$secs" "$name" >>"$times.tmp"
    echo "# == $name (${secs} s)"
    cat "$logs/$name"
    out=$(tail -n 1 "$logs/$name")
    if [[ $rc -eq 124 || $rc -eq 137 ]]; then
        echo "# $name: stopped after ${limit} s"
        failed=$((failed + 1))
        broken="$broken $name"
    elif [[ $out =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
        passed=$((passed + BASH_REMATCH[1]))
        failed=$((failed + BASH_REMATCH[2]))
        skipped=$((skipped + BASH_REMATCH[3]))
    else
        failed=$((failed + 1))
        broken="$broken $name"
    fi
    # the failed checks again at the end, with the diagnostics under each, so that the tail of
    # a long log (all a CI page may show) still names them
    failures+=$(awk -v s="$name" '/^not ok/ { n = 12; print "#   " s ": " $0; next }
        n > 0 && /^#/ { n--; print "#     " $0; next } { n = 0 }' "$logs/$name")
    [[ -n $failures && $failures != *$'\n' ]] && failures+=$'\n'
    if [[ " $broken " == *" $name "* ]]; then
        failures+="#   $name ended without a count line; its last lines:"$'\n'
        failures+=$(tail -n 8 "$logs/$name" | sed 's/^/#     /')$'\n'
    fi
    rm -f "$logs/$name"
}

t0=$EPOCHREALTIME
for name in "${order[@]}"; do
    if is_exclusive "$name"; then
        exclusive+=("$name")
        continue
    fi
    while [[ $running -ge $jobs ]]; do reap; done
    launch "$name"
done
while [[ $running -gt 0 ]]; do reap; done
for name in "${exclusive[@]}"; do
    launch "$name"
    reap
done

sort -rn "$times.tmp" >"$times" && rm -f "$times.tmp"
wall=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
echo "# ${#order[@]} suites, $jobs at a time, in ${wall} s; the slowest:"
head -n 8 "$times" | sed 's/^/#   /'
[[ -n $broken ]] && echo "# suites that did not finish with a count line:$broken"
[[ -n $failures ]] && printf '# the failed checks:\n%s' "$failures"
echo "$passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
