#!/usr/bin/env bash
# Attribution with a poll interval under a second (--interval 0.2): the processes are listed
# and the energy split once a second, whatever the interval, so the gap check must allow for
# that second and not only for 3 intervals (0.6 s), or every joule would go to idle. On the
# fake NVML (2 GPUs), GPU 0 runs 4001 at 60 % SM and 4002 at 20 %: between two scrapes 4001
# gets 60 % of GPU 0's energy, 4002 20 %, idle 20 %, and the parts sum to the GPU's energy to
# the mJ on both GPUs (over a stored window: a page between splits has the last split's
# figures beside a newer counter); and /metrics has the series on every page, not only after
# a split.
. tests/cli/lib.sh
mkdir -p "$TMP/sys" "$TMP/proc"
for p in 4001 4002; do
    mkdir -p "$TMP/proc/proc/$p"
    echo '0::/system.slice/slurmstepd.scope/job_77/step_0/user/task_0' >"$TMP/proc/proc/$p/cgroup"
    echo "$p (worker) R 1 1 1 0 -1 0 0 0 0 0 10 0 0 0 20 0 1 0 $((1000 + p)) 1000 10" \
        >"$TMP/proc/proc/$p/stat"
done
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
printf '0 4001 sm=60\n0 4002 sm=20\n' >"$TMP/procs"
export FAKE_NVML_GPUS=2 FAKE_NVML_PROCS_FILE=$TMP/procs
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run --db "$TMP/w.db" --interval 0.2 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 10 curl -sf "$URL/healthz" -o /dev/null
scrape() { # file: a page with GPU 0's processes that already have energy
    curl -sf "$URL/metrics" -o "$1" &&
        grep -qE '^wattage_process_gpu_energy_joules_total\{gpu="0",[^}]*pid="4001"[^}]*\} [0-9.e+-]*[1-9]' "$1"
}
check "per-process series with energy appear" wait_for 15 scrape "$TMP/m1"
now() { python3 -c 'import time; print("%.3f" % time.time())'; }
T1=$(now)
sleep 4
T2=$(now)
sleep 1 # the store's flush
check "the window from the store answers" \
    test "$(curl -s "$URL/api/v1/attribution?from=$T1&to=$T2" -o "$TMP/w.json" -w '%{http_code}')" = 200
msg=$(python3 - "$TMP/w.json" <<'PY' 2>&1
import json, sys
g = {x["gpu"]: x for x in json.load(open(sys.argv[1]))["gpus"]}
assert set(g) == {"0", "1"}, g.keys()
for x in g.values():
    s = x["idle_joules"] + sum(p["energy_joules"] for p in x["processes"])
    assert x["to"] - x["from"] > 2.5 and x["energy_joules"] > 0, x
    assert abs(s - x["attributed_joules"]) < 1e-6 and abs(s - x["energy_joules"]) < 0.002, ("conservation", x)
e = g["0"]["energy_joules"]
p = {q["pid"]: q["energy_joules"] / e for q in g["0"]["processes"]}
d = (p[4001], p[4002], g["0"]["idle_joules"] / e)
assert abs(d[0] - 0.6) < 0.02 and abs(d[1] - 0.2) < 0.02 and abs(d[2] - 0.2) < 0.02, d
assert not g["1"]["processes"], g["1"]
print("shares %.3f %.3f idle %.3f" % d, file=sys.stderr)
PY
)
check "at 0.2 s: 60/20/20 of GPU 0's energy, every GPU conserved to the mJ ($msg)" \
    grep -q '^shares' <<<"$msg"
# the splits are a second apart, the pages 0.2 s: every page has the series all the same
pages=0
for i in 1 2 3 4 5 6 7 8 9 10; do
    curl -sf "$URL/metrics" | grep -q '^wattage_process_gpu_energy_joules_total{gpu="0",.*pid="4001",owner="slurm",slurm_job="77"' &&
        pages=$((pages + 1))
    sleep 0.1
done
check "the per-process series are on every page between splits ($pages of 10)" test "$pages" -eq 10
check "no warning or error in the log" test -z "$(grep -E ' (warn|error) ' "$TMP/run.log" || true)"
finish
