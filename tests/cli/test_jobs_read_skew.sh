#!/usr/bin/env bash
# A poll stamps every GPU's readings with one time, but reads their counters one after another:
# each later counter lies after the stamp. On the fake NVML (2 GPUs swinging 435 +- 265 W every
# 2.1 s, 1-s polls) GPU 1's counter read waits 3 ms (FAKE_NVML_READ_DELAY_US=0,3000): at every
# job edge (an edge sample, where the edge's error bar was only the counter's 1 mJ) its reading
# is 0.5-2.1 J past the energy at its stamp (more when the wait oversleeps). The daemon stores each counter's read skew
# (wattage_gpu_energy_read_skew_seconds) and the bar counts skew x power at such an edge: every
# phase, 3.15 s apart (half-periods of the wave: its edges mostly on different levels, where the
# two edges' errors do not cancel), is inside its bar, and the error is really there.
. tests/cli/lib.sh
EXACT=${WATTAGE_BUILD:-build}/tests/fakes/fake_nvml_energy
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/w.yaml"
export FAKE_NVML_T0=$(python3 -c 'import time; print(round(time.time(), 3))')
export FAKE_NVML_POWER=435,265,2.1 FAKE_NVML_WAVE=square FAKE_NVML_GPUS=2
export FAKE_NVML_READ_DELAY_US=0,3000
PORT=$(free_port)
export WATTAGE_URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 1 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 10 curl -sf "$WATTAGE_URL/healthz" -o /dev/null
sleep 1.37
"$BIN" job start skew --gpus 0,1 >/dev/null
for i in 1 2 3; do
    sleep 3.15
    "$BIN" job mark skew --index "$i" >/dev/null
done
sleep 3.15
"$BIN" job end skew --wait 5 >/dev/null
"$BIN" job show skew --json >"$TMP/skew.json"
stored "$TMP/w.db" 'wattage_gpu_energy_joules_total{gpu="1"}' >"$TMP/counter.csv"
stored "$TMP/w.db" 'wattage_gpu_energy_read_skew_seconds{gpu="1"}' >"$TMP/skew.csv"
msg=$(python3 - "$TMP/skew.json" "$EXACT" "$TMP/counter.csv" "$TMP/skew.csv" "$FAKE_NVML_T0" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
ex = lambda g, f, t: float(subprocess.check_output([sys.argv[2], str(g), repr(f), repr(t)]))
t0 = float(sys.argv[5])
counter = {float(l.split(",")[0]): float(l.rsplit(",", 1)[1]) for l in open(sys.argv[3])}
skew = {float(l.split(",")[0]): float(l.rsplit(",", 1)[1]) for l in open(sys.argv[4])}
ep = [p for p in d["phases"] if p["kind"] == "epoch"]
assert len(ep) >= 3, d["phases"]
edges = sorted({p["from_s"] for p in ep} | {p["to_s"] for p in ep})
for e in edges:
    # the edge's reading of GPU 1: its counter past the energy at its stamp, its skew stored
    t = min(counter, key=lambda x: abs(x - e))
    assert abs(t - e) < 1e-5, (e, t)
    late = counter[t] - 1e6 - ex(1, t0, t)  # the fake's counter starts at 1e9 mJ
    s = skew[min(skew, key=lambda x: abs(x - t))]
    # read at least 3 ms after the stamp, at 170 W or more; the skew stored is when the read
    # returned, no earlier than the counter's time (at 700 W at most; 1 mJ the counter's unit)
    assert 0.4 < late <= 700 * s + 0.002, (e, late, s)
    assert 0.003 <= s < 0.5, (e, s)
worst = 0
for p in ep:
    want = ex(0, p["from_s"], p["to_s"]) + ex(1, p["from_s"], p["to_s"])
    err = abs(p["kpi"]["energy_joules"] - want)
    worst = max(worst, err)
    assert err <= p["kpi"]["uncertainty_joules"], (p["index"], err, p["kpi"])
assert worst > 0.1, worst  # the skew's error is there, far past the counter's 1 mJ
print(f"every edge over 0.4 J late, worst phase {worst:.3f} J inside its bar")
PY
)
check "GPU 1's counter read 3 ms late: every phase inside its bar ($msg)" bash -c '[[ $1 == every* ]]' _ "$msg"
finish
