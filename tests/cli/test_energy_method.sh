#!/usr/bin/env bash
# `wattage energy --method counter|integrated` never answers a silent 0: on a store whose GPUs
# have no counter (an imported nvidia-smi log: integrated power only) --method counter exits 1
# and says why, while --method integrated and auto give the energy; a window the stored counters
# do not reach is refused the same way.
. tests/cli/lib.sh
export TZ=UTC
DB=$TMP/m.db
T0=1767225600 # 2026-01-01T00:00:00Z
python3 - "$T0" >"$TMP/smi.csv" <<'PY'
import sys, datetime as dt
t0 = int(sys.argv[1])
print("timestamp, index, uuid, name, power.draw [W]")
for k in range(0, 601, 5):
    ts = dt.datetime.fromtimestamp(t0 + k, dt.timezone.utc).strftime("%Y/%m/%d %H:%M:%S.000")
    print(f"{ts}, 0, GPU-m-0, NVIDIA H200, 250.00 W")
PY
"$BIN" import nvidia-smi "$TMP/smi.csv" --node rec-1 --db "$DB" >/dev/null 2>&1
check "the log imports" test $? -eq 0
W=(--from $T0 --to $((T0 + 600)) --db "$DB")

"$BIN" energy "${W[@]}" --method counter >"$TMP/c.out" 2>"$TMP/c.err"; rc=$?
check "--method counter without counters exits 1 ($rc)" test $rc -eq 1
check "and says there is no counter, and what to use ($(cat "$TMP/c.err"))" \
    grep -q -- "--method counter: no GPU energy counter in the store covers.*--method integrated" "$TMP/c.err"
check "and prints no total" test ! -s "$TMP/c.out"
"$BIN" energy "${W[@]}" --method integrated --json >"$TMP/i.json"; rc=$?
check "--method integrated gives the imported energy: 250 W x 600 s ($rc)" python3 -c '
import json, sys; d = json.load(open(sys.argv[1])); assert abs(d["total_joules"] - 150000) < 1e-6, d' "$TMP/i.json"
"$BIN" energy "${W[@]}" --json >"$TMP/a.json"; rc=$?
check "--method auto falls back to it ($rc)" python3 -c '
import json, sys; d = json.load(open(sys.argv[1])); assert abs(d["total_joules"] - 150000) < 1e-6, d' "$TMP/a.json"
"$BIN" energy --from $((T0 + 7200)) --to $((T0 + 9000)) --db "$DB" --method integrated >/dev/null 2>"$TMP/w.err"; rc=$?
check "--method integrated over a window nothing covers exits 1 ($rc)" \
    bash -c '[[ $1 == 1 ]] && grep -q "no GPU integrated energy in the store covers" "$0"' "$TMP/w.err" "$rc"
finish
