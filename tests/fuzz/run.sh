#!/usr/bin/env bash
# Runs the fuzz harnesses built in BUILD/tests/fuzz/: for each, first its regression inputs
# (tests/fuzz/regress/NAME/: crashes found once, each must now pass), then libFuzzer for
# SECONDS from the seed corpus (tests/fuzz/seeds.sh) and what earlier runs found
# (BUILD/corpus/NAME). One harness at a time, one process each. A crash, leak, sanitizer report
# or hang fails the harness; its input is left in BUILD/crashes/. Closes with "N passed, N failed".
# Usage: tests/fuzz/run.sh BUILD SECONDS [NAME...]
set -uo pipefail
build=${1:?usage: run.sh BUILD SECONDS [NAME...]}
secs=${2:?usage: run.sh BUILD SECONDS [NAME...]}
shift 2
names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
    for f in tests/fuzz/fuzz_*.c; do
        n=${f#tests/fuzz/fuzz_}
        names+=("${n%.c}")
    done
fi
./tests/fuzz/seeds.sh "$build/seeds" || exit 1
mkdir -p "$build/crashes"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
passed=0 failed=0 broken=""
for n in "${names[@]}"; do
    bin=$build/tests/fuzz/fuzz_$n
    log=$build/fuzz_$n.log
    if [[ ! -x $bin ]]; then
        echo "not ok - fuzz_$n: $bin is not built (make fuzz-build)"
        failed=$((failed + 1)) broken="$broken $n"
        continue
    fi
    regress=(tests/fuzz/regress/"$n"/*)
    if [[ -e ${regress[0]} ]]; then
        if ! "$bin" "${regress[@]}" >"$log" 2>&1; then
            tail -n 40 "$log"
            echo "not ok - fuzz_$n: a regression input fails again (log: $log)"
            failed=$((failed + 1)) broken="$broken $n"
            continue
        fi
        echo "# fuzz_$n: ${#regress[@]} regression inputs pass"
    fi
    mkdir -p "$build/corpus/$n"
    if "$bin" -max_total_time="$secs" -timeout=25 -print_final_stats=1 \
        -artifact_prefix="$build/crashes/$n-" "$build/corpus/$n" "$build/seeds/$n" >"$log" 2>&1; then
        echo "ok - fuzz_$n: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
            grep -o '[0-9]*$') runs in ${secs} s, $(find "$build/corpus/$n" -type f | wc -l) inputs in the corpus"
        passed=$((passed + 1))
    else
        tail -n 60 "$log"
        echo "not ok - fuzz_$n: see $log and $build/crashes/"
        failed=$((failed + 1)) broken="$broken $n"
    fi
done
[[ -n $broken ]] && echo "# fuzz: failed:$broken"
echo "fuzz: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
