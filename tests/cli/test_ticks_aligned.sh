#!/usr/bin/env bash
# Aligned ticks (daemon.align_ticks, on by default): the readings a daemon stores are stamped on
# wall-clock multiples of the poll interval, here 0.25 s, for the GPU and the host collectors
# alike, so every node of a fleet samples at the same instants. It checks the phase of the stored
# stamps (how far past a multiple of the interval each lies), never how long anything took: each
# daemon is started half an interval off the grid, and a poll can only wake late, by its lateness
# L, so an aligned daemon's stamps lie L past the grid and L + half an interval past the start,
# where an unaligned one keeps the phase of its start: the median phase past the grid must be the
# smaller, which holds for any L under half an interval, on a loaded machine too (no bound on L:
# a median of 10 ms was seen beside two busy loops and other builds).
. tests/cli/lib.sh
mkdir -p "$TMP/sys"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$PWD/tests/fixtures/procfs-sample1 FAKE_NVML_GPUS=2

phases() { # DB INTERVAL_S METRIC START: checks the stamps of METRIC's stored readings
    stored "$1" "$3" >"$TMP/stamps.csv"
    /usr/bin/python3 - "$@" "$TMP/stamps.csv" <<'PY'
import sys
db, iv, metric = sys.argv[1], round(float(sys.argv[2]) * 1e9), sys.argv[3]
start = round(float(sys.argv[4]) * 1e9)
stamps = {l.split(",")[0] for l in open(sys.argv[5])}  # unix seconds to the ns: kept exact
ts = sorted(int(s.split(".")[0]) * 10**9 + int(s.split(".")[1]) for s in stamps)
if len(ts) < 6:
    sys.exit(f"{metric}: only {len(ts)} stamps")
grid = sorted(t % iv for t in ts[1:])  # the first poll runs at start, off the grid
past_start = sorted((t - start) % iv for t in ts[1:])
mg, ms = grid[len(grid) // 2] / 1e6, past_start[len(grid) // 2] / 1e6
print(f"{metric}: {len(ts)} stamps, median phase {mg:.2f} ms past the grid, {ms:.2f} ms past "
      f"the start {start % iv / 1e6:.0f} ms off it")
sys.exit(0 if mg < ms else 1)
PY
}
# off_grid INTERVAL_S: waits until half an interval past a multiple of it; prints the time
off_grid() {
    /usr/bin/python3 -c 'import sys, time
iv = float(sys.argv[1])
time.sleep((1.5 * iv - time.time() % iv) % iv)
print(repr(time.time()))' "$1"
}

start=$(off_grid 0.25)
WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" run --db "$TMP/a.db" --interval 0.25 --duration 4 \
    --listen "127.0.0.1:$(free_port)" >"$TMP/a.log" 2>&1
check "the daemon ran and stopped cleanly" test $? -eq 0
for m in wattage_gpu_power_watts wattage_memory_used_ratio; do
    msg=$(phases "$TMP/a.db" 0.25 $m "$start" 2>&1)
    check "stored $m stamps fall on multiples of 0.25 s ($msg)" test $? -eq 0
done

# 1 s, set in the file: whole seconds
printf 'daemon:\n  interval: 1s\n  align_ticks: true\n' >"$TMP/b.yaml"
start=$(off_grid 1)
WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" run -c "$TMP/b.yaml" --db "$TMP/b.db" --duration 7 \
    --listen "127.0.0.1:$(free_port)" >"$TMP/b.log" 2>&1
check "the daemon ran at 1 s" test $? -eq 0
msg=$(phases "$TMP/b.db" 1 wattage_gpu_power_watts "$start" 2>&1)
check "stored stamps fall on whole seconds ($msg)" test $? -eq 0

# align_ticks: false is accepted and keeps one phase (the monotonic grid from the start)
printf 'daemon:\n  align_ticks: false\n' >"$TMP/c.yaml"
"$BIN" check-config "$TMP/c.yaml" >/dev/null 2>&1
check "check-config accepts align_ticks: false" test $? -eq 0
printf 'daemon:\n  align_ticks: maybe\n' >"$TMP/d.yaml"
out=$("$BIN" check-config "$TMP/d.yaml" 2>&1); rc=$?
check "a bad align_ticks exits 2 naming file:line and key ($out)" \
    bash -c '[[ $0 == 2 && $1 == *"d.yaml:2: daemon.align_ticks"* ]]' "$rc" "$out"
finish
