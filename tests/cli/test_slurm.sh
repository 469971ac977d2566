#!/usr/bin/env bash
# deploy/slurm's prolog and epilog under a real single-node Slurm (Debian's slurmctld and slurmd,
# munged for their authentication, all on loopback in a temporary directory; run as root, as CI
# does) beside the daemon on the fake NVML (2 GPUs): a batch job given one GPU (gres) becomes the
# wattage job slurm-ID (ID its Slurm job id), tagged slurm_job=ID (on wattage_job_info too), on
# that GPU (SLURM_JOB_GPUS), from its prolog to its epilog; its energy is the fake's exact energy
# of that GPU over that window within 0.5 %; the batch shell, listed on the GPU by the fake for
# 5 s of the job, gets that GPU's energy of the time it was listed (to the split's second at each
# end) and no more than the job's; the bearer token comes from the settings file's token file.
# With a wrong token, a daemon that never answers, or none, the batch jobs still complete (exit
# 0:0, the node back to idle), and the scripts' log says why.
. tests/cli/lib.sh
EXACT=${WATTAGE_BUILD:-build}/tests/fakes/fake_nvml_energy
for b in munged slurmctld slurmd sbatch scontrol; do
    if ! command -v "$b" >/dev/null; then
        skip "Slurm" "$b is not installed (scripts/deps.sh --test: slurm-wlm, munge)"
        finish
    fi
done
if [[ $(id -u) -ne 0 ]]; then
    skip "Slurm" "slurmd runs jobs as their user and must be root"
    finish
fi

# --- the daemon, on the fake NVML; the jobs' process list is a file the batch script writes
printf 'tok-%s\n' "$RANDOM$RANDOM" >"$TMP/token"
chmod 600 "$TMP/token"
printf 'store:\n  flush_interval: 200ms\ndaemon:\n  auth:\n    token_file: "%s"\n' "$TMP/token" \
    >"$TMP/w.yaml"
t0=$(python3 -c 'import time; print(round(time.time(), 3))')
PROCS=$TMP/procs
: >"$PROCS"
chmod 666 "$PROCS"
export FAKE_NVML_T0=$t0 FAKE_NVML_POWER=300,120,20 FAKE_NVML_GPUS=2 FAKE_NVML_PROCS_FILE=$PROCS
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 1 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
WATTAGE_PID=$!
check "the daemon answers" wait_for 10 curl -sf "$URL/healthz" -o /dev/null

# --- the scripts installed as an administrator would: copied, with their settings beside them
S=$TMP/slurm
mkdir -p "$S/etc" "$S/state" "$S/spool" "$S/log" "$S/munge" "$S/dev" "$S/out"
cp deploy/slurm/wattage-prolog.sh deploy/slurm/wattage-epilog.sh deploy/slurm/wattage-slurm-lib.sh \
    "$S/etc/"
printf 'WATTAGE_URL=%s\nWATTAGE_TOKEN_FILE=%s\nWATTAGE_SLURM_LOG=%s\n' "$URL" "$TMP/token" \
    "$S/log/wattage-slurm.log" >"$S/etc/wattage-slurm.conf"

# --- munge: a key of our own, a socket in the temporary directory
dd if=/dev/urandom of="$S/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$S/munge/munge.key"
MSOCK=$S/munge/munge.socket
bg munged -F --force --key-file="$S/munge/munge.key" --socket="$MSOCK" \
    --pid-file="$S/munge/munged.pid" --log-file="$S/log/munged.log" --seed-file="$S/munge/seed" \
    2>>"$S/log/munged.stderr"
check "munged answers" wait_for 10 test -S "$MSOCK"

# --- Slurm: one node of 2 GPUs (gres: slurmd wants character devices, links to /dev/null and
# /dev/zero do; no device is opened under task/none)
ln -s /dev/null "$S/dev/nvidia0"
ln -s /dev/zero "$S/dev/nvidia1"
HOST=$(hostname -s)
CTLD_PORT=$(free_port)
SLURMD_PORT=$(free_port)
cat >"$S/etc/slurm.conf" <<CONF
ClusterName=wattage-test
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MSOCK
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/slurmd-%n
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd-%n.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdParameters=config_overrides
Prolog=$S/etc/wattage-prolog.sh
Epilog=$S/etc/wattage-epilog.sh
PrologFlags=Alloc
GresTypes=gpu
NodeName=wtnode NodeHostname=$HOST NodeAddr=127.0.0.1 CPUs=2 Gres=gpu:2 State=UNKNOWN
PartitionName=wt Nodes=wtnode Default=YES MaxTime=INFINITE State=UP
CONF
printf 'NodeName=wtnode Name=gpu File=%s/dev/nvidia[0-1]\n' "$S" >"$S/etc/gres.conf"
export SLURM_CONF=$S/etc/slurm.conf
bg slurmctld -D -i -f "$SLURM_CONF" 2>>"$S/log/slurmctld.stderr"
bg slurmd -D -N wtnode -f "$SLURM_CONF" 2>>"$S/log/slurmd.stderr"
node_idle() { scontrol show node wtnode 2>/dev/null | grep -q 'State=IDLE'; }
check "slurmctld and slurmd are up, the node idle" wait_for 30 node_idle

# job_done ID: the job reached a final state
job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
job_done() { case $(job_state "$1") in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL) return 0 ;; esac; return 1; }

# --- a batch job on one GPU; its shell lists itself on that GPU while it works, from 3 s after it
# starts to 1 s before it ends (each split, once a second, gives the time since the one before
# to the processes listed at it, at most 3 intervals: so the process's share lies inside the
# job's window)
cat >"$S/job.sh" <<JOB
#!/bin/sh
echo "gpus=\$CUDA_VISIBLE_DEVICES pid=\$\$"
sleep 3
python3 -c 'import time; print("%.6f" % time.time())' >"$S/out/\$SLURM_JOB_ID.from"
echo "0 \$\$ sm=100" >>"$PROCS"
sleep 5
: >"$PROCS"
python3 -c 'import time; print("%.6f" % time.time())' >"$S/out/\$SLURM_JOB_ID.to"
sleep 1
JOB
chmod +x "$S/job.sh"
# run_job: submits the batch job on one GPU, waits for it; sets J
run_job() { J=$(sbatch --parsable --gres=gpu:1 -o "$S/out/%j.out" "$S/job.sh") && wait_for 60 job_done "$J"; }
# completed: COMPLETED, exit code 0:0, its output written, the node back to IDLE (a failing
# prolog or epilog would drain it)
completed() {
    scontrol show job "$J" >"$TMP/sj" &&
        grep -q 'JobState=COMPLETED' "$TMP/sj" && grep -q ' ExitCode=0:0' "$TMP/sj" &&
        grep -q '^gpus=0 pid=' "$S/out/$J.out" && wait_for 10 node_idle
}
check "a batch job on one GPU runs" run_job
check "  and completes (COMPLETED 0:0, the node idle again)" completed
W() { "$BIN" "$@" --url "$URL" --token-file "$TMP/token"; }
# ended: the job ended, and its whole window is in the store (coverage 1: the store writes
# every flush_interval)
ended() { W job show "slurm-$J" --json >"$TMP/job.json" 2>/dev/null &&
    python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); sys.exit(d["state"] != "ended" or d["kpi"]["coverage"] < 1)' "$TMP/job.json"; }
check "the wattage job slurm-$J, opened by the prolog and ended by the epilog, its window stored" wait_for 15 ended
curl -sf "$URL/api/v1/attribution" -o "$TMP/attrib.json"
curl -sf "$URL/metrics" -o "$TMP/metrics"
msg=$(python3 - "$TMP/job.json" "$EXACT" "$J" "$S/out" "$TMP/sj" <<'PY' 2>&1
import json, re, subprocess, sys, time
d = json.load(open(sys.argv[1])); J = sys.argv[3]
ex = lambda g, f, t: float(subprocess.check_output([sys.argv[2], str(g), repr(f), repr(t)]))
assert d["name"] == "slurm-" + J and d["tags"].get("slurm_job") == J and d["gpus"] == ["0"], d
t_from = float(open(f"{sys.argv[4]}/{J}.from").read())
t_to = float(open(f"{sys.argv[4]}/{J}.to").read())
assert d["start_s"] < t_from - 1 and t_to + 1 < d["end_s"], ("window", d["start_s"], t_from, t_to, d["end_s"])
# Slurm's own window (scontrol, local time to the second): the prolog runs after its start and
# the epilog after its end, each within seconds
sj = open(sys.argv[5]).read()
st = [time.mktime(time.strptime(re.search(k + r"=(\S+)", sj).group(1), "%Y-%m-%dT%H:%M:%S"))
      for k in ("StartTime", "EndTime")]
assert st[0] <= d["start_s"] < st[0] + 10 and st[1] <= d["end_s"] + 1 and d["end_s"] < st[1] + 10, \
    ("slurm window", st, d["start_s"], d["end_s"])
e, exact = d["kpi"]["energy_joules"], ex(0, d["start_s"], d["end_s"])
assert abs(e - exact) / exact < 0.005, ("job", e, exact, d["kpi"].get("coverage"), d.get("provisional"))
print(f"{e:.1f} J, exact {exact:.1f} J")
PY
)
check "slurm-$J: tags slurm_job=$J, GPU 0 (SLURM_JOB_GPUS), the prolog-to-epilog window; its energy GPU 0's exact over it within 0.5 % ($msg)" test $? -eq 0
check "wattage_job_info carries slurm_job" \
    grep -q "^wattage_job_info{[^}]*job=\"slurm-$J\"[^}]*slurm_job=\"$J\"" "$TMP/metrics"
msg=$(python3 - "$TMP/job.json" "$EXACT" "$J" "$S/out" "$TMP/attrib.json" <<'PY' 2>&1
import json, re, subprocess, sys
d = json.load(open(sys.argv[1])); J = sys.argv[3]; out = sys.argv[4]
ex = lambda g, f, t: float(subprocess.check_output([sys.argv[2], str(g), repr(f), repr(t)]))
pid = int(re.search(r"pid=(\d+)", open(f"{out}/{J}.out").read()).group(1))
t_from, t_to = float(open(f"{out}/{J}.from").read()), float(open(f"{out}/{J}.to").read())
a = {g["gpu"]: g for g in json.load(open(sys.argv[5]))["gpus"]}
p = [x for x in a["0"]["processes"] if x["pid"] == pid]
assert len(p) == 1 and not any(x["pid"] == pid for x in a["1"]["processes"]), a
pe, je = p[0]["energy_joules"], d["kpi"]["energy_joules"]
# each split gives the time since the one before (at most 3 intervals, else idle's) to the
# processes listed at it: the process's share covers [t_from, t_to - 2] at least (2: a split a
# second, late by up to a second on a loaded machine) and [t_from - 3, t_to] at most
lo, hi = ex(0, t_from, t_to - 2), ex(0, t_from - 3, t_to)
assert lo <= pe <= min(hi, je), (lo, pe, hi, je)
print(f"process {pe:.1f} J in [{lo:.1f}, {hi:.1f}], job {je:.1f} J")
PY
)
check "the batch script's process (its pid on GPU 0 only) has GPU 0's energy of the time it was listed, within the job's ($msg)" test $? -eq 0

# --- wattage refusing, hanging, or down: the Slurm job runs and completes all the same
printf 'WATTAGE_URL=%s\nWATTAGE_TOKEN=wrong\nWATTAGE_SLURM_LOG=%s\n' "$URL" "$S/log/wattage-slurm.log" \
    >"$S/etc/wattage-slurm.conf"
check "with a wrong token, a batch job runs" run_job
check "  and completes" completed
check "  the prolog says the daemon refused (401)" \
    grep -q "prolog: wattage job slurm-$J not opened (.*HTTP 401" "$S/log/wattage-slurm.log"
check "  and no job slurm-$J in wattage" bash -c "! curl -sf '$URL/api/v1/jobs/slurm-$J' -o /dev/null"
HANG_PORT=$(free_port)
bg python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
open(sys.argv[2], "w").close(); time.sleep(600)' "$HANG_PORT" "$TMP/hang.ready"
check "a listener that never answers" wait_for 10 test -e "$TMP/hang.ready"
printf 'WATTAGE_URL=http://127.0.0.1:%s\nWATTAGE_SLURM_TIMEOUT=1\nWATTAGE_SLURM_LOG=%s\n' "$HANG_PORT" \
    "$S/log/wattage-slurm.log" >"$S/etc/wattage-slurm.conf"
check "with a daemon that never answers, a batch job runs" run_job
check "  and completes" completed
check "  the prolog gave up after WATTAGE_SLURM_TIMEOUT (curl's 28: timed out)" \
    grep -q "prolog: wattage job slurm-$J not opened (.*curl exit 28" "$S/log/wattage-slurm.log"
kill "$WATTAGE_PID"
wait "$WATTAGE_PID" 2>/dev/null
printf 'WATTAGE_URL=%s\nWATTAGE_SLURM_LOG=%s\n' "$URL" "$S/log/wattage-slurm.log" >"$S/etc/wattage-slurm.conf"
check "with the daemon stopped, a batch job runs" run_job
check "  and completes" completed
check "  the prolog and the epilog log that they could not reach it" \
    grep -q "epilog: wattage job slurm-$J not ended (.*curl exit 7" "$S/log/wattage-slurm.log"
rm -f "$S/etc/wattage-slurm.conf"
check "with no settings at all (the default URL, nobody there), a batch job runs and completes" \
    eval 'run_job && completed'
if [[ $T_FAILED -gt 0 ]]; then
    for f in "$S"/log/*.log; do echo "# --- $f"; tail -n 15 "$f" | sed 's/^/# /'; done
fi
finish
