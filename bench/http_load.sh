#!/usr/bin/env bash
# Load test of the HTTP server: wrk with 64 connections for 10 s against /metrics on loopback
# (8 fake GPUs), once plain and once gzip-compressed, while the poll loop runs at its default
# 1 s. Reports requests/s, p50/p99 latency and errors, and checks from the daemon's debug log
# that the poll loop's tick start times stayed within 5% of the interval during the load.
# Usage: bench/http_load.sh [BUILD_DIR]   (env: CONNECTIONS=64 DURATION=10 THREADS=2 INTERVAL=1)
# Exit status 1 when wrk saw errors or a tick strayed more than 5%.
set -u
build=${1:-build}
BIN=$build/wattage
FAKE=$PWD/$build/tests/fakes/libnvidia-ml.so.1
CONNECTIONS=${CONNECTIONS:-64}
DURATION=${DURATION:-10}
THREADS=${THREADS:-2}
INTERVAL=${INTERVAL:-1}
for need in wrk python3 curl; do
    command -v "$need" >/dev/null || { echo "http_load: $need is missing (scripts/deps.sh --test)"; exit 2; }
done
[[ -x $BIN && -f $FAKE ]] || { echo "http_load: build first: make BUILD=$build all"; exit 2; }

TMP=$(mktemp -d /tmp/wt-http-load-XXXXXX)
PID=
cleanup() {
    [[ -n $PID ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$TMP/empty"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
WATTAGE_NVML_LIBRARY=$FAKE FAKE_NVML_GPUS=8 WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty \
    "$BIN" run --listen "127.0.0.1:$PORT" --db "$TMP/w.db" --interval "$INTERVAL" --log-level debug \
    2>"$TMP/wattage.log" &
PID=$!
URL=http://127.0.0.1:$PORT/metrics
for _ in $(seq 1 100); do
    curl -sf -o /dev/null "$URL" && break
    sleep 0.1
done
size=$(curl -s "$URL" | wc -c)
echo "http_load: wattage pid $PID on $URL, exposition $size bytes, $(nproc) CPUs"
echo "http_load: wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s"

status=0
# run NAME WRK_ARGS...: one wrk pass; checks errors and the ticks during it
run() {
    local name=$1
    shift
    local t0 t1
    t0=$(date +%s.%N)
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency "$@" "$URL" >"$TMP/wrk-$name.txt" 2>&1
    t1=$(date +%s.%N)
    sleep "$INTERVAL" # the tick that ends the window is logged after it
    python3 - "$name" "$TMP/wrk-$name.txt" "$TMP/wattage.log" "$t0" "$t1" "$INTERVAL" <<'PY'
import re, sys, datetime
name, wrk, log, t0, t1, interval = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
out = open(wrk).read()
def unit(v, u):
    return float(v) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[u]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
lat = {p: unit(*re.search(rf"^\s+{p}%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M).groups()) for p in ("50", "99")}
total = int(re.search(r"(\d+) requests in", out).group(1))
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
errors = (int(non2xx.group(1)) if non2xx else 0) + (sum(map(int, sock.groups())) if sock else 0)
# Tick starts: the debug line's time minus the poll's duration.
starts = []
for line in open(log):
    m = re.match(r"(\S+)Z debug nvml: tick readings=\d+ duration_ms=([\d.]+)", line)
    if not m:
        continue
    t = datetime.datetime.fromisoformat(m.group(1)).replace(tzinfo=datetime.timezone.utc).timestamp()
    t -= float(m.group(2)) / 1e3
    if t0 - interval <= t <= t1 + interval:
        starts.append(t)
gaps = [b - a for a, b in zip(starts, starts[1:])]
# Log times have millisecond resolution: 1 ms of the deviation may be rounding.
worst = max((abs(g - interval) for g in gaps), default=float("inf"))
dev = worst / interval
print(f"http_load: {name}: {rps:.0f} req/s, p50 {lat['50']:.2f} ms, p99 {lat['99']:.2f} ms, "
      f"{total} requests, {errors} errors")
print(f"http_load: {name}: poll loop: {len(gaps)} tick gaps during the load, interval {interval:g} s, "
      f"worst {worst * 1e3:.1f} ms off ({dev:.2%}; limit 5%)")
ok = errors == 0 and len(gaps) >= 5 and dev <= 0.05
if not ok:
    print(f"http_load: {name}: FAILED")
sys.exit(0 if ok else 1)
PY
    [[ $? -eq 0 ]] || status=1
}
run plain
run gzip -H 'Accept-Encoding: gzip'
run openmetrics -H 'Accept: application/openmetrics-text;version=1.0.0' -H 'Accept-Encoding: gzip'
kill -0 "$PID" 2>/dev/null || { echo "http_load: the daemon died"; status=1; }
grep -E ' (warn|error) ' "$TMP/wattage.log" | head -5
exit $status
