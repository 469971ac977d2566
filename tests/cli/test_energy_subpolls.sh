#!/usr/bin/env bash
# Energy sub-polls (collectors.nvml.energy_interval, auto by default): between its 1-s ticks the
# NVML collector reads each GPU's energy counter alone, every 0.2 s, and only the store keeps
# those readings. The stored counter series is 0.2 s apart once auto has measured the first
# ticks, power and the per-process split stay at one reading a tick; off leaves the counter at
# the ticks; a counter read that is expensive in CPU time keeps auto off; the key's values are
# checked.
. tests/cli/lib.sh
mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty FAKE_NVML_GPUS=2
echo "0 4242 compute sm=60" >"$TMP/procs"
export FAKE_NVML_PROCS_FILE=$TMP/procs
# STAMPS DB SERIES: the stored stamps of SERIES (unix seconds), one a line
stamps() {
    "$BIN" query --db "$1" --json --from -10m "$2" | python3 -c '
import json, sys, datetime
for s in json.load(sys.stdin)["series"]:
    for t, v in s["points"]:
        print(datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp())'
}
# SPACING FILE LO HI: the median spacing of the stamps after the first 6 s lies in [LO, HI]
spacing() {
    python3 - "$@" <<'PY'
import sys
ts = sorted(float(x) for x in open(sys.argv[1]))
ts = [t for t in ts if t >= ts[0] + 6]
d = sorted(b - a for a, b in zip(ts, ts[1:]))
med = d[len(d) // 2] if d else -1
print(f"{len(ts)} stamps, median spacing {med:.3f} s")
sys.exit(0 if float(sys.argv[2]) <= med <= float(sys.argv[3]) else 1)
PY
}
run() { # DB CONFIG [ENV...]: a 10-s daemon
    local db=$1 conf=$2
    shift 2
    env "$@" WATTAGE_NVML_LIBRARY="$FAKE_NVML" "$BIN" run -c "$conf" --db "$db" --duration 10 \
        --listen "127.0.0.1:$(free_port)" >"$db.log" 2>&1
}
printf 'daemon:\n  interval: 1s\n' >"$TMP/auto.yaml"
run "$TMP/a.db" "$TMP/auto.yaml"
check "the daemon ran and stopped cleanly" test $? -eq 0
check "auto turned the sub-polls on for the fake's cheap counter" \
    grep -q "energy counters read every 0.2 s between ticks (energy_interval auto)" "$TMP/a.db.log"
g0='{gpu="0"}'
stamps "$TMP/a.db" "wattage_gpu_energy_joules_total$g0" >"$TMP/ae"
stamps "$TMP/a.db" "wattage_gpu_power_watts$g0" >"$TMP/ap"
stamps "$TMP/a.db" "wattage_process_gpu_energy_joules_total{gpu=\"0\",pid=\"4242\"}" >"$TMP/aa"
msg=$(spacing "$TMP/ae" 0.15 0.25 2>&1)
check "the stored counter readings are 0.2 s apart ($msg)" test $? -eq 0
msg=$(spacing "$TMP/ap" 0.95 1.05 2>&1)
check "the stored power readings stay 1 s apart ($msg)" test $? -eq 0
msg=$(spacing "$TMP/aa" 0.95 1.05 2>&1)
check "the per-process split stays at one a tick ($msg)" test $? -eq 0
# the counter's sub-poll stamps lie on the 0.2-s grid of the aligned ticks
msg=$(python3 - "$TMP/ae" <<'PY'
import sys
ts = sorted(float(x) for x in open(sys.argv[1]))[6:]
ph = sorted(round(t * 1e3) % 200 for t in ts)
print(f"median phase {ph[len(ph) // 2]} ms of {len(ph)}")
sys.exit(0 if ph[len(ph) // 2] < 20 else 1)
PY
)
check "sub-polls keep the ticks' phase ($msg)" test $? -eq 0

printf 'daemon:\n  interval: 1s\ncollectors:\n  nvml:\n    energy_interval: off\n' >"$TMP/off.yaml"
run "$TMP/b.db" "$TMP/off.yaml"
stamps "$TMP/b.db" "wattage_gpu_energy_joules_total$g0" >"$TMP/be"
msg=$(spacing "$TMP/be" 0.95 1.05 2>&1)
check "energy_interval: off keeps the counter at the ticks ($msg)" test $? -eq 0

run "$TMP/c.db" "$TMP/auto.yaml" FAKE_NVML_ENERGY_CPU_US=3000
check "auto leaves them off when a read costs 3 ms of CPU" \
    grep -q "energy counters read at the ticks only (energy_interval auto)" "$TMP/c.db.log"
stamps "$TMP/c.db" "wattage_gpu_energy_joules_total$g0" >"$TMP/ce"
msg=$(spacing "$TMP/ce" 0.95 1.05 2>&1)
check "... and the counter stays at the ticks ($msg)" test $? -eq 0

for v in auto off 0 250ms; do
    printf 'collectors:\n  nvml:\n    energy_interval: %s\n' "$v" >"$TMP/v.yaml"
    check "check-config accepts energy_interval: $v" bash -c '"$0" check-config "$1" >/dev/null' "$BIN" "$TMP/v.yaml"
done
for v in 5ms banana -1; do
    printf 'collectors:\n  nvml:\n    energy_interval: %s\n' "$v" >"$TMP/v.yaml"
    out=$("$BIN" check-config "$TMP/v.yaml" 2>&1); rc=$?
    check "energy_interval: $v exits 2 naming file:line and key ($out)" \
        bash -c '[[ $0 == 2 && $1 == *"v.yaml:3: collectors.nvml.energy_interval"* ]]' "$rc" "$out"
done
finish
