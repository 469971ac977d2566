#!/usr/bin/env bash
# Attribution with a poll interval under a second (--interval 0.2): the processes are listed
# and the energy split once a second, whatever the interval, so the gap check must allow for
# that second and not only for 3 intervals (0.6 s), or every joule would go to idle. On the
# fake NVML (2 GPUs), GPU 0 runs 4001 at 60 % SM and 4002 at 20 %: between two scrapes 4001
# gets 60 % of GPU 0's energy, 4002 20 %, idle 20 %, and the parts grow by the GPU's energy to
# the mJ on both GPUs; and /metrics has the series on every page, not only after a split.
. tests/cli/lib.sh
mkdir -p "$TMP/sys" "$TMP/proc"
for p in 4001 4002; do
    mkdir -p "$TMP/proc/$p"
    echo '0::/system.slice/slurmstepd.scope/job_77/step_0/user/task_0' >"$TMP/proc/$p/cgroup"
    echo "$p (worker) R 1 1 1 0 -1 0 0 0 0 0 10 0 0 0 20 0 1 0 $((1000 + p)) 1000 10" \
        >"$TMP/proc/$p/stat"
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
sleep 4
check "a later scrape" wait_for 5 scrape "$TMP/m2"
msg=$(python3 - "$TMP/m1" "$TMP/m2" <<'PY' 2>&1
import re, sys
def read(f):
    e, p = {}, {}
    for line in open(f):
        m = re.match(r'wattage_gpu_energy_joules_total\{gpu="(\d+)"[^}]*\} (\S+)', line)
        if m:
            e[m.group(1)] = float(m.group(2))
        m = re.match(r'wattage_process_gpu_energy_joules_total\{gpu="(\d+)"[^}]*?(pid="\d+"|owner="idle")[^}]*\} (\S+)', line)
        if m:
            p[(m.group(1), m.group(2))] = float(m.group(3))
    return e, p
e1, p1 = read(sys.argv[1]); e2, p2 = read(sys.argv[2])
assert len(e1) == 2, e1
for g in e1:
    de = e2[g] - e1[g]
    dp = sum(v for (gg, _), v in p2.items() if gg == g) - sum(v for (gg, _), v in p1.items() if gg == g)
    assert de > 0 and abs(de - dp) < 0.0015, ("conservation", g, de, dp)
de = e2["0"] - e1["0"]
d = {k: (p2[("0", k)] - p1.get(("0", k), 0)) / de for k in ('pid="4001"', 'pid="4002"', 'owner="idle"')}
# one split of the window may straddle the first scrape: a second in 4 of slack
assert abs(d['pid="4001"'] - 0.6) < 0.05 and abs(d['pid="4002"'] - 0.2) < 0.05 and abs(d['owner="idle"'] - 0.2) < 0.05, d
assert not any(g == "1" and k.startswith("pid") for g, k in p2), p2
print("shares %.3f %.3f idle %.3f" % (d['pid="4001"'], d['pid="4002"'], d['owner="idle"']), file=sys.stderr)
PY
)
check "at 0.2 s: 60/20/20 of GPU 0's energy, every GPU conserved to the mJ ($msg)" \
    grep -q '^shares' <<<"$msg"
# the splits are a second apart, the pages 0.2 s: every page has the series all the same
pages=0
for i in 1 2 3 4 5 6 7 8 9 10; do
    curl -sf "$URL/metrics" | grep -q '^wattage_process_gpu_energy_joules_total{gpu="0",.*pid="4001"' &&
        pages=$((pages + 1))
    sleep 0.1
done
check "the per-process series are on every page between splits ($pages of 10)" test "$pages" -eq 10
check "no warning or error in the log" test -z "$(grep -E ' (warn|error) ' "$TMP/run.log" || true)"
finish
