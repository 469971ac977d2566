#!/usr/bin/env bash
# `wattage import nvidia-smi FILE`: a recorded node in the store that `wattage energy` audits.
. tests/cli/lib.sh
export TZ=UTC
FX=tests/fixtures/nvidia-smi
out=$("$BIN" import nvidia-smi "$FX/h200-4gpu-units.csv" --db "$TMP/w.db" 2>"$TMP/err"); rc=$?
check "import exits 0" test $rc -eq 0
check "import says what it stored ($out)" \
    bash -c '[[ $0 == *"as node h200-4gpu-units: 480 rows"*"4 GPUs, 3 lines skipped"* ]]' "$out"
check "malformed lines are reported with their line numbers" \
    bash -c 'grep -q "h200-4gpu-units.csv:51: " "$0" && grep -q "csv:101: bad timestamp" "$0" &&
             grep -q "csv:201: column 5: bad number" "$0"' "$TMP/err"

"$BIN" energy --db "$TMP/w.db" --from 2024-05-01T12:00:00Z --to 2024-05-01T12:02:00Z --json \
    >"$TMP/e.json"
check "energy of the imported node: 4 GPUs, integrated, with node and GPU labels" python3 -c "
import json; d=json.load(open('$TMP/e.json'))
s=d['series']; assert len(s) == 4, s
assert all(x['node'] == 'h200-4gpu-units' and x['method'] == 'integrated' for x in s), s
assert [x['gpu'] for x in s] == ['0', '1', '2', '3'] and s[0]['model'] == 'NVIDIA H200'
# ~300-340 W for 119 s, window of 120 s
assert 4 * 300 * 119 < d['total_joules'] < 4 * 340 * 119, d['total_joules']
assert all(0.98 < x['coverage'] < 0.995 for x in s), s"

"$BIN" import nvidia-smi "$FX/a100-nounits.csv" --node lab-a100 --db "$TMP/w.db" >/dev/null 2>&1
check "a second node next to the first" test "$(sqlite3 "$TMP/w.db" \
    "SELECT count(DISTINCT node) FROM series")" -eq 2
"$BIN" energy --db "$TMP/w.db" --from 2024-05-01T12:00:00Z --to 2024-05-01T12:01:00Z --by node \
    --json >"$TMP/n.json"
check "--by node: one entry per node" python3 -c "
import json; d=json.load(open('$TMP/n.json'))
n={x['node']: x for x in d['series']}; assert set(n) == {'h200-4gpu-units', 'lab-a100'}, n
assert abs(n['lab-a100']['energy_joules'] - (250*60 + 300*49.5)) < 1e-6, n"
before=$(sqlite3 "$TMP/w.db" "SELECT count(*), sum(v) FROM readings")
"$BIN" import nvidia-smi "$FX/a100-nounits.csv" --node lab-a100 --db "$TMP/w.db" >/dev/null 2>&1
check "importing again changes nothing stored" \
    test "$(sqlite3 "$TMP/w.db" "SELECT count(*), sum(v) FROM readings")" = "$before"

# Issue 48 item 6: a file whose every line is bad stores nothing; that is a failure (exit 2)
# naming the file and its first bad line, and what the store held is still there.
count_stored() {
    echo "$(stored "$TMP/w.db" wattage_gpu_power_watts | wc -l)" \
        "$(stored "$TMP/w.db" wattage_gpu_energy_integrated_joules_total | wc -l)"
}
held=$(count_stored)
printf 'timestamp, index, power.draw [W]\n2024/05/01 12:00:00.000, 0, lots\n' >"$TMP/allbad.csv"
printf 'yesterday, 0, 100\n2024/05/01 12:00:02.000, 0\n' >>"$TMP/allbad.csv"
out=$("$BIN" import nvidia-smi "$TMP/allbad.csv" --node allbad --db "$TMP/w.db" 2>"$TMP/err"); rc=$?
check "a file with no good line exits 2 (rc $rc)" test $rc -eq 2
check "it names the file and the first bad line, and says nothing was stored" \
    grep -q "wattage import: $TMP/allbad.csv:2: column 3: bad number \"lots\"; no line could be read (3 skipped), nothing stored" "$TMP/err"
check "the other bad lines are still listed" \
    bash -c 'grep -q "allbad.csv:3: bad timestamp" "$0" && grep -q "allbad.csv:4: expected 3 fields" "$0"' "$TMP/err"
check "and no \"imported\" line on stdout" test -z "$out"
check "what was stored before is all still there ($held)" test "$(count_stored)" = "$held"
check "no node allbad in the store" test "$(sqlite3 "$TMP/w.db" \
    "SELECT count(*) FROM series WHERE node='allbad'")" -eq 0
printf 'timestamp, index, power.draw [W]\n' >"$TMP/header.csv"
msg=$("$BIN" import nvidia-smi "$TMP/header.csv" --db "$TMP/w.db" 2>&1); rc=$?
check "a header without data lines exits 2 and says so" \
    bash -c '[[ $0 == 2 && $1 == *"header.csv: no data lines after the header, nothing stored"* ]]' \
    "$rc" "$msg"
printf 'timestamp, index, power.draw [W]\n2024/05/01 12:00:00.000, 0, lots\n' >"$TMP/somebad.csv"
printf '2024/05/01 12:00:01.000, 0, 100\n' >>"$TMP/somebad.csv"
out=$("$BIN" import nvidia-smi "$TMP/somebad.csv" --db "$TMP/w.db" 2>"$TMP/err"); rc=$?
check "one good line is enough: exit 0, the bad line named ($out)" \
    bash -c '[[ $0 == 0 && $1 == *"1 rows"*"1 lines skipped"* ]] && grep -q "somebad.csv:2: " "$2"' \
    "$rc" "$out" "$TMP/err"

printf 'power.draw [W]\n100\n' >"$TMP/bad.csv"
msg=$("$BIN" import nvidia-smi "$TMP/bad.csv" --db "$TMP/w.db" 2>&1); rc=$?
check "a file without timestamps exits 2 and says why" \
    bash -c '[[ $0 == 2 && $1 == *"bad.csv:1: no timestamp column"* ]]' "$rc" "$msg"
"$BIN" import nvidia-smi "$TMP/none.csv" --db "$TMP/w.db" >/dev/null 2>&1
check "a missing file exits 2" test $? -eq 2
"$BIN" import dcgm "$FX/a100-nounits.csv" --db "$TMP/w.db" >/dev/null 2>&1
check "an unknown format exits 2" test $? -eq 2
finish
