#!/usr/bin/env bash
# A full disk is not silent: the store lives on a small tmpfs that is filled while the daemon
# runs. /readyz turns 503 with the store's reason, /metrics shows the write errors and the queue,
# the log says it once (and no "cannot rollback"), readings are kept in memory; when the disk is
# freed they are written, nothing stored before is lost, and /readyz is 200 again. A second run
# with a small store.buffer_readings drops and counts what does not fit.
. tests/cli/lib.sh
if [[ $(id -u) -ne 0 ]]; then
    not_ok "this test mounts a small tmpfs and needs root (CI runs as root)"
    finish
fi
MNT=$TMP/mnt
mkdir -p "$MNT" "$TMP/sys" "$TMP/proc"
if ! mount -t tmpfs -o size=16m tmpfs "$MNT"; then
    not_ok "mount a 16 MiB tmpfs for the store"
    finish
fi
trap 'cleanup_mnt' EXIT
cleanup_mnt() {
    for p in $T_PIDS; do kill "$p" 2>/dev/null; done
    for p in $T_PIDS; do wait "$p" 2>/dev/null; done
    umount "$MNT" 2>/dev/null
    cleanup
}
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc WATTAGE_NVML_LIBRARY=$FAKE_NVML
export WATTAGE_CLOCK_STATUS=0 FAKE_NVML_GPUS=4
DB=$MNT/w.db
now() { python3 -c 'import time; print(repr(time.time()))'; }
# get PORT PATH: body, then a line with the HTTP status
get() { curl -s -w '\n%{http_code}' "http://127.0.0.1:$1$2"; }
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }
ready_is() { [[ $(get "$1" /readyz | tail -n1) == "$2" ]]; }
fill() { dd if=/dev/zero of="$MNT/fill" bs=64k 2>/dev/null; sync; }

start() { # start CONFIG LOG: a daemon on a free port; sets PORT and PID
    PORT=$(free_port)
    "$BIN" run -c "$1" --db "$DB" --interval 0.2 --listen "127.0.0.1:$PORT" >"$2" 2>&1 &
    PID=$!
    T_PIDS="$T_PIDS $PID"
}
stop() { kill -TERM "$PID"; wait "$PID"; }

# --- 1: fill, see it, free, every buffered reading written
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/w.yaml"
start "$TMP/w.yaml" "$TMP/run1.log"
check "the store has been written (last flush time exported)" \
    wait_for 20 bash -c "curl -s http://127.0.0.1:$PORT/metrics | grep -q '^wattage_store_last_flush_timestamp_seconds '"
check "ready before the disk fills" ready_is "$PORT" 200
python3 -c '
import sys
sys.path.insert(0, "tests/cli")
from stored import readings
print("\n".join("%d|%d|%r" % (s, t, v) for s, pts in readings(sys.argv[1]).items() for t, v in pts))' "$DB" >"$TMP/before.txt"
t_fill=$(now)
fill
check "/readyz answers 503 once writes fail" wait_for 20 ready_is "$PORT" 503
body=$(get "$PORT" /api/v1/health)
check "/api/v1/health says degraded, component store, disk full" python3 -c '
import json, sys
d = json.loads(sys.argv[1].rsplit("\n", 1)[0])
assert d["status"] == "degraded", d
r = [x for x in d["reasons"] if x["component"] == "store"]
assert r and "database or disk is full" in r[0]["message"], d' "$body"
check "/healthz stays 200 (liveness: the daemon serves)" test "$(get "$PORT" /healthz | tail -n1)" = 200
check "wattage_store_write_errors_total counts the failed writes" \
    wait_for 10 bash -c "v=\$(curl -s http://127.0.0.1:$PORT/metrics | awk '\$1==\"wattage_store_write_errors_total\"{print \$2}'); [[ \${v:-0} != 0 ]]"
sleep 3 # the buffer grows while the disk stays full
q=$(metric "$PORT" wattage_store_queue_readings)
check "wattage_store_queue_readings shows the readings kept in memory ($q)" \
    python3 -c 'import sys; assert float(sys.argv[1]) > 100' "${q:-0}"
status_json=$(curl -s "http://127.0.0.1:$PORT/api/v1/status")
check "/api/v1/status carries the same health section" python3 -c '
import json, sys
h = json.loads(sys.argv[1])["health"]
assert h["status"] == "degraded" and h["reasons"][0]["component"] == "store", h' "$status_json"
check "the log says writes fail once, not twice a second" \
    test "$(grep -c 'store: .*writes failing' "$TMP/run1.log")" -eq 1
check "no misleading 'cannot rollback' line" bash -c "! grep -q 'cannot rollback' '$TMP/run1.log'"
check "no COMMIT error line per flush" test "$(grep -c 'error store' "$TMP/run1.log")" -le 1
rm -f "$MNT/fill"
t_free=$(now)
check "/readyz is 200 again once the disk has room" wait_for 45 ready_is "$PORT" 200
check "one recovery line with what was written" \
    grep -qE 'store: .*writes recovered after [0-9]+ s: wrote [0-9]+ buffered readings failed_writes=[0-9]+ dropped=0' "$TMP/run1.log"
check "nothing was dropped with the default buffer" test "$(metric "$PORT" wattage_store_readings_dropped_total)" = 0
sleep 1
stop
check "every reading stored before the disk filled is still there" python3 -c '
import sys
sys.path.insert(0, "tests/cli")
from stored import readings
have = {l for l in open(sys.argv[1]).read().split("\n") if l}
now = {"%d|%d|%r" % (s, t, v) for s, pts in readings(sys.argv[2]).items() for t, v in pts}
missing = have - now
assert have and not missing, (len(have), sorted(missing)[:3])' "$TMP/before.txt" "$DB"
check "the readings taken while the disk was full were written: no gap over 1 s in a GPU's power" python3 -c '
import sqlite3, sys
sys.path.insert(0, "tests/cli")
from stored import readings
t0, t1 = float(sys.argv[2]) - 1, float(sys.argv[3]) + 1
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
sid = db.execute("SELECT id FROM series WHERE node = ? AND metric = ? AND labels LIKE ?",
                 ("", "wattage_gpu_power_watts", "gpu=\"0\"%")).fetchone()[0]
ts = [t / 1e9 for t, _ in readings(sys.argv[1])[sid] if t0 * 1e9 <= t <= t1 * 1e9]
gaps = [b - a for a, b in zip(ts, ts[1:])]
assert len(ts) > 10 and max(gaps) < 1.0, (len(ts), max(gaps) if gaps else None)' "$DB" "$t_fill" "$t_free"

# --- 2: a small buffer drops what does not fit, and counts it
printf 'store:\n  flush_interval: 200ms\n  buffer_readings: 300\n' >"$TMP/small.yaml"
start "$TMP/small.yaml" "$TMP/run2.log"
check "second run writes" wait_for 20 ready_is "$PORT" 200
fill
check "second run: not ready while the disk is full" wait_for 20 ready_is "$PORT" 503
check "readings beyond store.buffer_readings are dropped and counted" \
    wait_for 15 bash -c "v=\$(curl -s http://127.0.0.1:$PORT/metrics | awk '\$1==\"wattage_store_readings_dropped_total\"{print \$2}'); [[ \${v:-0} != 0 ]]"
q=$(metric "$PORT" wattage_store_queue_readings)
check "the buffer holds at most store.buffer_readings plus one flush ($q)" \
    python3 -c 'import sys; assert 0 < float(sys.argv[1]) <= 300 + 200' "${q:-0}"
rm -f "$MNT/fill"
check "second run: ready again" wait_for 45 ready_is "$PORT" 200
check "the recovery line counts the dropped readings" \
    grep -qE 'writes recovered .* dropped=[1-9][0-9]*' "$TMP/run2.log"
stop
finish
