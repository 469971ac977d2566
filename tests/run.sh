#!/usr/bin/env bash
# Runs every unit test executable and every CLI/integration script, then prints one closing
# line "N passed, N failed, N skipped" summed over all of them. Exit 1 if anything failed.
# Usage: tests/run.sh BUILD_DIR [PATTERN]
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
passed=0 failed=0 skipped=0 broken=""

run_one() {
    local name=$1; shift
    echo "# == $name"
    local log out
    log=$(mktemp)
    "$@" 2>&1 | tee "$log"
    out=$(tail -n 1 "$log")
    rm -f "$log"
    if [[ $out =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
        passed=$((passed + BASH_REMATCH[1]))
        failed=$((failed + BASH_REMATCH[2]))
        skipped=$((skipped + BASH_REMATCH[3]))
    else
        failed=$((failed + 1))
        broken="$broken $name"
    fi
}

for t in "$build"/tests/unit/test_*; do
    [[ $t == *.d ]] && continue
    [[ -n $pattern && $(basename "$t") != *$pattern* ]] && continue
    if [[ -n ${WATTAGE_VALGRIND:-} ]]; then
        run_one "$(basename "$t")" valgrind -q --error-exitcode=9 --leak-check=full "$t" 2>/dev/null
    else
        run_one "$(basename "$t")" "$t"
    fi
done
for t in tests/cli/test_*.sh; do
    [[ -n $pattern && $(basename "$t") != *$pattern* ]] && continue
    run_one "$(basename "$t")" bash "$t"
done
[[ -n $broken ]] && echo "# suites that did not finish with a count line:$broken"
echo "$passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
