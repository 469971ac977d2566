#!/bin/bash
# SPDX-License-Identifier: MIT
# The fleet's read path at scale: VictoriaMetrics on loopback fed a simulated fleet by
# build/bench/fleet_feed (256 nodes x 8 GPUs x 600 s at 1 s, remote write), then
# `wattage job show fleet-job --source victoriametrics://...` timed (wall, 5 runs) and checked
# against the exact energy the feed wrote; wattage's own CPU time (user + system) is reported with
# the wall. WATTAGE_BASE=PATH times another wattage binary on the same engine and fleet, run for
# run alternately with this build's (a before/after side by side). JSON lines for bench/run.sh's
# external section.
#   bench/fleet_query.sh [BUILD] [NODES] [SECONDS]
set -u
BUILD=${1:-build}
NODES=${2:-256}
SECS=${3:-600}
. "$(dirname "$0")/fleet_vm.sh"
fleet_vm_start fleet_query
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
$PY - "$TMP/feed.json" "$TMP/job.json" "$BUILD/wattage" "$SRC" "$NODES" "${WATTAGE_BASE:-}" <<'PY'
import json, os, subprocess, sys, time
feed = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][0]
exe, src, nodes, base = sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
want = feed["energy_joules"]
exes = {"wattage": exe}
if base:
    exes["base"] = base

walls = {k: [] for k in exes}
cpus = {k: [] for k in exes}
exact = {k: None for k in exes}
for _ in range(5):
    for k, path in exes.items():
        t = time.monotonic()
        pr = subprocess.Popen([path, "job", "show", "fleet-job", "--json", "--source", src],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out = pr.stdout.read()
        errs = pr.stderr.read()
        _, status, ru = os.wait4(pr.pid, 0)
        walls[k].append(time.monotonic() - t)
        cpus[k].append(ru.ru_utime + ru.ru_stime)
        if status != 0:
            exact[k] = "error: " + errs.decode(errors="replace").strip()[:200]
            continue
        job = json.loads(out)
        got = job["kpi"]["energy_joules"]
        ok = len(job["nodes"]) == nodes and abs(got - want) <= 1e-3 * want
        exact[k] = "exact" if ok else f"WRONG: {got:.1f} J of {want:.1f} J, {len(job['nodes'])} nodes"
for k in exes:
    w, c = sorted(walls[k]), sorted(cpus[k])
    fig = {"median": w[2], "min": w[0], "max": w[-1], "n": 5}
    if k == "wattage":
        print(json.dumps({"section": "Fleet", "what": f"job show --source: a {nodes}-node job's "
                          "energy and phases from VictoriaMetrics (wall, goal < 2 s)", "unit": "s",
                          "wattage": fig}))
    print(f"fleet_query: {k} {nodes} nodes x 8 GPUs: wall median {w[2]:.3f} s (min {w[0]:.3f}, "
          f"max {w[-1]:.3f}), CPU median {c[2]:.3f} s, {exact[k]}", file=sys.stderr)
if exact["wattage"] != "exact":
    sys.exit(1)
PY
