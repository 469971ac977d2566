#!/bin/bash
# SPDX-License-Identifier: MIT
# The fleet's window at scale: VictoriaMetrics on loopback fed a simulated fleet by
# build/bench/fleet_feed (NODES nodes x 8 GPUs x SECONDS at 1 s, energy and power, remote
# write), then
# `wattage kpi --source` and `wattage report --source --format json` over the feed's job window
# (SECONDS - 120 s), 3 runs each under /usr/bin/time -v: wall, wattage's CPU (user + system) and
# peak RSS, medians. kpi's GPU energy is checked against the exact energy the feed wrote.
# WATTAGE_BASE=PATH times another wattage binary on the same engine and fleet, run for run
# alternately with this build's (a before/after side by side). FLEET_WINDOW_CMDS="kpi" (or
# "report") times one command only: a report of thousands of GPUs spends minutes in its own
# per-GPU work, whatever the read path.
#   bench/fleet_window.sh [BUILD] [NODES] [SECONDS]
set -u
BUILD=${1:-build}
NODES=${2:-512}
SECS=${3:-600}
[[ -x /usr/bin/time ]] || { echo "fleet_window: /usr/bin/time is not installed" >&2; exit 1; }
. "$(dirname "$0")/fleet_vm.sh"
fleet_vm_start fleet_window
"$BUILD/bench/fleet_feed" "http://127.0.0.1:$PORT/api/v1/write" "$NODES" "$SECS" power >"$TMP/feed.json" || exit 1
curl -sf "http://127.0.0.1:$PORT/internal/force_flush" -o /dev/null
sleep 2
$PY - "$TMP" "$BUILD/wattage" "victoriametrics://127.0.0.1:$PORT" "$NODES" "${WATTAGE_BASE:-}" \
    "${FLEET_WINDOW_CMDS:-kpi report}" <<'PY'
import json, os, re, subprocess, sys
tmp, exe, src, nodes, base = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
feed = [json.loads(l) for l in open(tmp + "/feed.json") if l.startswith("{")][0]
fr, to, want = f"{feed['start_s']:.3f}", f"{feed['end_s']:.3f}", feed["energy_joules"]
exes = {"wattage": exe}
if base:
    exes["base"] = base
cmds = {"kpi": ["kpi", "--json", "--source", src, "--from", fr, "--to", to],
        "report": ["report", "--format", "json", "--source", src, "--from", fr, "--to", to]}
cmds = {c: a for c, a in cmds.items() if c in sys.argv[6].split()}
res = {(k, c): [] for k in exes for c in cmds}
ok = {}
for _ in range(3):
    for c, args in cmds.items():
        for k, path in exes.items():
            pr = subprocess.run(["/usr/bin/time", "-v", path] + args, capture_output=True,
                                env=dict(os.environ, TMPDIR=tmp))
            err = pr.stderr.decode(errors="replace")
            g = lambda pat: float(re.search(pat, err).group(1))
            wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", err).group(1)
            secs = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.split(":"))))
            res[(k, c)].append((secs, g(r"User time \(seconds\): (\S+)") +
                                g(r"System time \(seconds\): (\S+)"),
                                g(r"Maximum resident set size \(kbytes\): (\d+)") / 1024))
            if pr.returncode != 0:
                ok[(k, c)] = "exit %d: %s" % (pr.returncode, err.strip().splitlines()[0][:200])
            elif c == "kpi":
                got = json.loads(pr.stdout)["energy"]["gpu"]["joules"]
                ok[(k, c)] = "exact" if abs(got - want) <= 1e-6 * want else f"WRONG {got} of {want}"
            else:
                ok[(k, c)] = "ok"
for (k, c), runs in res.items():
    med = [sorted(x[i] for x in runs)[1] for i in range(3)]
    print(f"fleet_window: {k} {c} {nodes} nodes x 8 GPUs x {float(to) - float(fr):.0f} s: wall "
          f"median {med[0]:.2f} s, CPU {med[1]:.2f} s, peak RSS {med[2]:.0f} MB, {ok[(k, c)]}",
          file=sys.stderr)
if ok.get(("wattage", "kpi"), "exact") != "exact":
    sys.exit(1)
PY
