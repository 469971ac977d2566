#!/usr/bin/env bash
# CUE in `wattage kpi` weights the grid intensity by IT energy when the energy is an imported
# node's: an nvidia-smi log with a step load (2 GPUs at 100 W for an hour, then 700 W for an
# hour) against an intensity of 100 g/kWh, then 500 g/kWh. Energy-weighted, the mean is about
# 450 g/kWh; weighted by time it would be 300.
. tests/cli/lib.sh
export TZ=UTC
DB=$TMP/c.db
T0=1767225600 # 2026-01-01T00:00:00Z

python3 - "$T0" >"$TMP/smi.csv" <<'EOF'
import sys, datetime as dt
t0 = int(sys.argv[1])
print("timestamp, index, uuid, name, power.draw [W]")
for k in range(0, 7201, 10):
    ts = dt.datetime.fromtimestamp(t0 + k, dt.timezone.utc).strftime("%Y/%m/%d %H:%M:%S.000")
    for g in range(2):
        print(f"{ts}, {g}, GPU-step-{g}, NVIDIA H200, {100 if k < 3600 else 700:.2f} W")
EOF
printf 'timestamp,gco2_per_kwh,kind\n' >"$TMP/ci.csv"
for k in 0 1800 3600 5400; do
    printf '%s,%s,actual\n' $((T0 + k)) $([[ $k -lt 3600 ]] && echo 100 || echo 500) >>"$TMP/ci.csv"
done
"$BIN" import nvidia-smi "$TMP/smi.csv" --node imported-1 --db "$DB" >"$TMP/imp.txt" 2>&1
check "the nvidia-smi log imports as node imported-1" test $? -eq 0
"$BIN" import carbon "$TMP/ci.csv" --zone T --db "$DB" >>"$TMP/imp.txt" 2>&1
check "the intensity series imports" test $? -eq 0

printf 'carbon:\n  zone: T\n  pue_assumed: 1.5\n' >"$TMP/k.yaml"
"$BIN" kpi --from $T0 --to $((T0 + 7200)) -c "$TMP/k.yaml" --db "$DB" --json >"$TMP/k.json" 2>"$TMP/k.err"
check "wattage kpi answers" test $? -eq 0
"$BIN" energy --from $T0 --to $((T0 + 3600)) --db "$DB" --json >"$TMP/e1.json"
"$BIN" energy --from $((T0 + 3600)) --to $((T0 + 7200)) --db "$DB" --json >"$TMP/e2.json"
check "CUE is 1.5 x the IT-energy-weighted intensity / 1000, not the time-weighted one" \
    python3 - "$TMP/k.json" "$TMP/e1.json" "$TMP/e2.json" <<'EOF'
import json, sys
row = [k for k in json.load(open(sys.argv[1]))["kpis"] if k["name"] == "cue"][0]
e1, e2 = (json.load(open(f))["total_joules"] for f in sys.argv[2:4])
# the imported energy itself: 2 GPUs, trapezoids, the step between 00:59:50 and 01:00:00
assert abs(e1 - 2 * (100 * 3590 + 400 * 10)) < 1e-6 * e1, e1
assert abs(e2 - 2 * 700 * 3600) < 1e-6 * e2, e2
want = 1.5 * (100 * e1 + 500 * e2) / (e1 + e2) / 1000
timew = 1.5 * 300 / 1000
assert abs(want - timew) > 0.1, (want, timew)
assert row.get("value") is not None and abs(row["value"] - want) < 1e-9, (row, want, timew)
weights = [i for i in row["inputs"] if i["name"] == "weights"][0]
assert "IT energy" in weights["detail"], weights
print(f"# CUE {row['value']:.6f} kgCO2e/kWh (time-weighted would be {timew:.6f})", file=sys.stderr)
EOF
finish
