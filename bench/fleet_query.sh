#!/bin/bash
# SPDX-License-Identifier: MIT
# The fleet's read path at scale: VictoriaMetrics on loopback fed a simulated fleet by
# build/bench/fleet_feed (256 nodes x 8 GPUs x 600 s at 1 s, remote write), then
# `wattage job show fleet-job --source victoriametrics://...` timed (wall, 5 runs) and checked
# against the exact energy the feed wrote. JSON lines for bench/run.sh's external section.
#   bench/fleet_query.sh [BUILD] [NODES] [SECONDS]
set -u
BUILD=${1:-build}
NODES=${2:-256}
SECS=${3:-600}
PY=/usr/bin/python3
VM=${VICTORIA_METRICS:-victoria-metrics}
command -v "$VM" >/dev/null || { echo "fleet_query: $VM is not installed" >&2; exit 1; }
TMP=$(mktemp -d)
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$VM" -storageDataPath="$TMP/vm" -httpListenAddr="127.0.0.1:$PORT" -retentionPeriod=1y \
    -search.disableCache -loggerLevel=ERROR 2>"$TMP/vm.log" &
vm=$!
trap 'kill $vm 2>/dev/null; wait $vm 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/health" -o /dev/null && break; sleep 0.1; done
"$BUILD/bench/fleet_feed" "http://127.0.0.1:$PORT/api/v1/write" "$NODES" "$SECS" >"$TMP/feed.json" || exit 1
grep section "$TMP/feed.json"
SRC=victoriametrics://127.0.0.1:$PORT
# samples become searchable a moment after they are acknowledged
for _ in $(seq 100); do
    "$BUILD/wattage" job show fleet-job --json --source "$SRC" >"$TMP/job.json" 2>/dev/null &&
        $PY -c "import json,sys; d=json.load(open('$TMP/job.json')); sys.exit(len(d['nodes']) != $NODES or d['kpi']['coverage'] < 1)" &&
        break
    sleep 0.2
done
$PY - "$TMP/feed.json" "$TMP/job.json" "$BUILD/wattage" "$SRC" "$NODES" <<'PY'
import json, subprocess, sys, time
feed = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][0]
job = json.load(open(sys.argv[2]))
exe, src, nodes = sys.argv[3], sys.argv[4], int(sys.argv[5])
got, want = job["kpi"]["energy_joules"], feed["energy_joules"]
assert len(job["nodes"]) == nodes, len(job["nodes"])
assert abs(got - want) <= 1e-3 * want, (got, want)
walls = []
for _ in range(5):
    t = time.monotonic()
    subprocess.run([exe, "job", "show", "fleet-job", "--json", "--source", src], check=True,
                   stdout=subprocess.DEVNULL)
    walls.append(time.monotonic() - t)
walls.sort()
fig = {"median": walls[2], "min": walls[0], "max": walls[-1], "n": 5}
print(json.dumps({"section": "Fleet", "what": f"job show --source: a {nodes}-node job's energy "
                  "and phases from VictoriaMetrics (wall, goal < 2 s)", "unit": "s",
                  "wattage": fig}))
print(f"fleet_query: {nodes} nodes, {got:.1f} J (exact {want:.1f} J), wall median "
      f"{walls[2]:.3f} s (min {walls[0]:.3f}, max {walls[-1]:.3f})", file=sys.stderr)
PY
