#!/usr/bin/env bash
# Edge samples: a job's start, marks and end make the collectors with energy counters poll at
# once (off the request's thread), and each edge's time then moves to its edge sample's, so a
# phase's edges fall on counter readings. Against the real daemon on the fake NVML (2 GPUs whose
# power swings 435 +- 265 W every 2.1 s, 1-s polls), a job marked at random instants, 3.3 s
# apart: every phase's energy inside its bar and within 0.05 % of the fake's exact integral over
# the phase's reported window (measured 0.0006 % with a load average of 14 on 2 cores, 0.011 %
# once on a busier one: what is left is the counter's 1 mJ and the time between a poll's stamp
# and its counter read, which the bar counts as read skew; 2 % without edge
# samples, 0.012 % with edge samples interpolated across their wake-up latency), the job's too,
# each inside its error bar; every edge is a reading's time; the 1-s tick grid is kept (aligned
# ticks still fall on whole seconds, but for a few late ones on a loaded machine).
. tests/cli/lib.sh
EXACT=${WATTAGE_BUILD:-build}/tests/fakes/fake_nvml_energy
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/w.yaml"
export FAKE_NVML_T0=$(python3 -c 'import time; print(round(time.time(), 3))')
export FAKE_NVML_POWER=435,265,2.1 FAKE_NVML_GPUS=2
PORT=$(free_port)
export WATTAGE_URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 1 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 10 curl -sf "$WATTAGE_URL/healthz" -o /dev/null
sleep 1.37
"$BIN" job start edges --gpus 0,1 >/dev/null
for i in 1 2 3 4; do
    sleep 3.3
    "$BIN" job mark edges --index "$i" >/dev/null
done
sleep 3.3
"$BIN" job end edges --wait 5 >/dev/null
"$BIN" job show edges --json >"$TMP/edges.json"
msg=$(python3 - "$TMP/edges.json" "$EXACT" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
ex = lambda f, t: sum(float(subprocess.check_output([sys.argv[2], str(g), repr(f), repr(t)])) for g in (0, 1))
ep = [p for p in d["phases"] if p["kind"] == "epoch"]
assert len(ep) >= 4, d["phases"]
worst = 0
for p in ep:
    assert p["to_s"] - p["from_s"] >= 3, p
    want = ex(p["from_s"], p["to_s"])
    got = p["kpi"]["energy_joules"]
    err = abs(got - want) / want
    worst = max(worst, err)
    assert err < 0.0005, (p["index"], got, want, err)
    # the bar counts each GPU counter's read skew (1 mJ more: the JSON's times keep ~0.1 us)
    assert abs(got - want) <= p["kpi"]["uncertainty_joules"] + 0.001, (p["index"], got, want, p["kpi"])
want = ex(d["start_s"], d["end_s"])
err = abs(d["kpi"]["energy_joules"] - want) / want
assert err < 0.0005, (d["kpi"]["energy_joules"], want, err)
print(f"worst phase {worst:.5%}, job {err:.5%}")
PY
)
check "every phase and the job within 0.05 % of the exact energy, inside its bar ($msg)" bash -c '[[ $1 == worst* ]]' _ "$msg"
stored "$TMP/w.db" wattage_gpu_energy_joules_total >"$TMP/energy.csv"
msg=$(python3 - "$TMP/edges.json" "$TMP/energy.csv" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
ts = sorted({float(l.split(",")[0]) for l in open(sys.argv[2])})
edges = [d["start_s"], d["end_s"]] + [p["from_s"] for p in d["phases"] if p["kind"] == "epoch"]
lag = [min((abs(t - e) for t in ts), default=99) for e in edges]
assert max(lag) < 1e-5, lag  # each edge moved to its edge sample's time (JSON keeps ~0.1 us)
on_grid = [t for t in ts if abs(t - round(t)) < 0.02]
# the energy sub-polls (collectors.nvml.energy_interval auto) fall on the 0.2-s grid between
off = [t for t in ts if abs(t * 5 - round(t * 5)) >= 0.1]
# the ticks stay on whole seconds and the sub-polls on fifths; the others are the edge samples
# (one per edge), the first poll, and the readings a loaded machine woke late for: how many
# depends on the load (18 of them with 14 suites and 4 compilers on 2 cores), so they are held
# to a quarter of the readings, which a scheduler off its grid (all of them off) would exceed
assert len(off) <= len(edges) + max(3, len(ts) // 4) and len(on_grid) >= 15, (len(ts), len(on_grid), off)
print(f"every edge on a reading; {len(on_grid)} ticks on the grid")
PY
)
check "every edge is a counter reading's time, and the ticks keep their grid ($msg)" bash -c '[[ $1 == every* ]]' _ "$msg"
finish
