#!/usr/bin/env bash
# `wattage exec` and the Python client against the real daemon on the fake NVML (8 GPUs):
# a wrapped Python program marks 3 epochs with tokens through clients/python/wattage_client.py;
# each epoch's energy (GPUs 0,1 from CUDA_VISIBLE_DEVICES) is within 0.5% of the fake's exact
# energy over the epoch window, tokens/kWh follows; CUDA_VISIBLE_DEVICES=GPU-<uuid> selects by
# UUID; exit codes pass through; SIGTERM to the wrapper reaches the child and the job is ended;
# the CLI's job commands; with the daemon down the client warns once and never raises.
. tests/cli/lib.sh
EXACT=${WATTAGE_BUILD:-build}/tests/fakes/fake_nvml_energy
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
printf 'tok-%s\n' "$RANDOM$RANDOM" >"$TMP/token"
chmod 600 "$TMP/token"
printf 'store:\n  flush_interval: 200ms\ndaemon:\n  auth:\n    token_file: "%s"\n' "$TMP/token" \
    >"$TMP/w.yaml"
t0=$(python3 -c 'import time; print(round(time.time(), 3))')
export FAKE_NVML_T0=$t0 FAKE_NVML_POWER=300,120,5 FAKE_NVML_GPUS=8
PORT=$(free_port)
export WATTAGE_URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.2 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 10 curl -sf "$WATTAGE_URL/healthz" -o /dev/null
export PYTHONPATH=$PWD/clients/python
# the CLI reads the token from the configuration's token file
W() { "$BIN" "$@" -c "$TMP/w.yaml"; }

cat >"$TMP/train.py" <<'PY'
import os, sys, time
import wattage_client as wc
assert wc.enabled(), "WATTAGE_JOB is not set"
print("job", os.environ["WATTAGE_JOB"], "url", os.environ["WATTAGE_URL"])
for epoch in range(1, 4):
    time.sleep(0.8)
    assert wc.mark("epoch", index=epoch, tokens=epoch * 250000, samples=epoch * 100)
with wc.phase("eval", index=3) as p:
    time.sleep(0.3)
    p.counters["accuracy"] = 0.91
sys.exit(0)
PY
CUDA_VISIBLE_DEVICES=0,1 "$BIN" exec -c "$TMP/w.yaml" --job train --tag model=tiny \
    --target accuracy=0.9 -- python3 "$TMP/train.py" >"$TMP/out" 2>"$TMP/err"
rc=$?
check "exec of the training script exits 0" test "$rc" -eq 0
check "the child saw WATTAGE_JOB and WATTAGE_URL" grep -q "^job [0-9]* url $WATTAGE_URL\$" "$TMP/out"
check "exec prints the job's energy at the end" grep -q 'energy .* kWh' "$TMP/err"
check "the summary splits it per GPU" test "$(grep -c '    gpu [01] ' "$TMP/err")" -eq 2
W job show train --json >"$TMP/train.json"
msg=$(python3 - "$TMP/train.json" "$EXACT" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
ex = lambda g, f, t: float(subprocess.check_output([sys.argv[2], str(g), repr(f), repr(t)]))
assert d["state"] == "ended" and d["gpus"] == ["0", "1"] and d["tags"] == {"model": "tiny"}, d
ep = [p for p in d["phases"] if p["kind"] == "epoch"]
assert [p["index"] for p in ep] == [1, 2, 3], ep
for p in ep:
    k = p["kpi"]
    exact = ex(0, p["from_s"], p["to_s"]) + ex(1, p["from_s"], p["to_s"])
    err = abs(k["energy_joules"] - exact) / exact
    assert err < 0.005, f"epoch {p['index']}: {k['energy_joules']} vs {exact} ({err:.3%})"
    tpk = p["counters"]["tokens"] / (exact / 3.6e6)
    assert abs(k["tokens_per_kwh"] - tpk) / tpk < 0.005, (k["tokens_per_kwh"], tpk)
    sps = p["counters"]["samples"] / exact
    assert abs(k["samples_per_s_per_w"] - sps) / sps < 0.005, (k, sps)
ev = [p for p in d["phases"] if p["kind"] == "eval"]
assert len(ev) == 1 and 0.25 < ev[0]["kpi"]["duration_s"] < 1.5, ev
assert ev[0]["from_s"] > ep[2]["to_s"] - 0.01, "the eval phase begins at its begin mark"
t = d["energy_to_target"]
assert t["reached"] and t["metric"] == "accuracy" and abs(t["at_s"] - ev[0]["to_s"]) < 1e-6, t
exact = ex(0, d["start_s"], t["at_s"]) + ex(1, d["start_s"], t["at_s"])
assert abs(t["energy_joules"] - exact) / exact < 0.005, (t, exact)
assert d["counters"]["tokens"] == 1500000, d["counters"]
print("ok")
PY
)
check "per-epoch energy within 0.5% of the exact, tokens/kWh, samples/s/W, energy to target ($msg)" \
    test "$msg" = ok
W job show train >"$TMP/show.txt"
check "job show prints a table of phases" test "$(grep -cE '^  epoch +[123] ' "$TMP/show.txt")" -eq 3

# GPUs by UUID from CUDA_VISIBLE_DEVICES
CUDA_VISIBLE_DEVICES=GPU-fake-0000-6 "$BIN" exec -c "$TMP/w.yaml" --job byuuid --json \
    -- sleep 1 2>"$TMP/uuid.json"
check "exec by UUID exits 0" test $? -eq 0
msg=$(python3 - "$TMP/uuid.json" "$EXACT" <<'PY' 2>&1
import json, subprocess, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
exact = float(subprocess.check_output([sys.argv[2], "6", repr(d["start_s"]), repr(d["end_s"])]))
assert d["gpus"] == ["GPU-fake-0000-6"], d["gpus"]
assert [g["gpu"] for g in d["gpu_energy"]] == ["6"], d["gpu_energy"]
assert abs(d["kpi"]["energy_joules"] - exact) / exact < 0.005, (d["kpi"], exact)
print("ok")
PY
)
check "CUDA_VISIBLE_DEVICES=GPU-<uuid> counts that GPU only ($msg)" test "$msg" = ok

# exit codes
"$BIN" exec -c "$TMP/w.yaml" --quiet -- sh -c 'exit 7' 2>/dev/null
check "exec passes the exit code through (7)" test $? -eq 7
"$BIN" exec -c "$TMP/w.yaml" --quiet -- sh -c 'kill -USR1 $$' 2>/dev/null
check "a child killed by SIGUSR1 gives 128+10" test $? -eq 138
"$BIN" exec -c "$TMP/w.yaml" --quiet -- /no/such/program 2>"$TMP/nf.err"
check "a missing program gives 127 and says so" bash -c '[[ $0 == 127 ]] && grep -q "/no/such/program" "$1"' $? "$TMP/nf.err"

# SIGTERM to the wrapper reaches the child; the job is ended
"$BIN" exec -c "$TMP/w.yaml" --job sig --wait 0 -- sh -c \
    "trap 'echo got-term >\"$TMP/got\"; exit 143' TERM; echo \$\$ >\"$TMP/child.pid\"; while :; do sleep 0.05; done" \
    2>/dev/null &
WRAP=$!
check "the wrapped child started" wait_for 10 test -s "$TMP/child.pid"
sleep 0.3
kill -TERM "$WRAP"
wait "$WRAP"
rc=$?
check "the wrapper exits with the child's status (143)" test "$rc" -eq 143
check "the child got SIGTERM" grep -q got-term "$TMP/got"
check "the child is gone" bash -c '! kill -0 "$(cat "$1")" 2>/dev/null' _ "$TMP/child.pid"
check "the job was ended" bash -c "$BIN job show sig -c '$TMP/w.yaml' | grep -q '(ended)'"

# the CLI's job commands
id=$(W job start cli-job --tag precision=fp8 --gpus 2,3)
check "job start prints the id" bash -c '[[ $0 =~ ^[0-9]+$ ]]' "$id"
W job mark cli-job --kind epoch --index 0 --tokens 1000 --latency-p99-s 0.25 --requests 10
check "job mark exits 0" test $? -eq 0
msg=$(W job mark cli-job --tokens -3 2>&1); rc=$?
check "a negative counter: exit 2, the field named" bash -c '[[ $0 == 2 && $1 == *tokens* ]]' "$rc" "$msg"
msg=$(W job mark no-such-job --tokens 3 2>&1); rc=$?
check "an unknown job: exit 2 and says so" bash -c '[[ $0 == 2 && $1 == *"no job no-such-job"* ]]' "$rc" "$msg"
W job end cli-job >/dev/null
check "job end exits 0" test $? -eq 0
msg=$(W job end cli-job 2>&1); rc=$?
check "ending it again: exit 2, it has ended" bash -c '[[ $0 == 2 && $1 == *ended* ]]' "$rc" "$msg"
W jobs --json >"$TMP/jobs.json"
check "jobs --json lists every job" python3 -c "
import json; d=json.load(open('$TMP/jobs.json'))
names=[j['name'] for j in d['jobs']]
assert {'train', 'byuuid', 'sig', 'cli-job'} <= set(names), names"
check "jobs prints one line per job" bash -c "$BIN jobs -c '$TMP/w.yaml' | grep -c ' ended ' | grep -qx '[5-9]'"
W jobs compare train cli-job >"$TMP/cmp.txt"
check "jobs compare shows both jobs' energy" grep -q '^  energy kWh ' "$TMP/cmp.txt"
check "jobs compare names the tags that differ" \
    bash -c 'grep -q "^  tag model .*tiny .*(none)" "$1" && grep -q "^  tag precision .*(none) .*fp8" "$1"' _ "$TMP/cmp.txt"
W jobs compare train cli-job --json >"$TMP/cmp.json"
check "jobs compare --json: tags_differ" python3 -c "
import json; d=json.load(open('$TMP/cmp.json'))
assert d['tags_differ'] == {'model': ['tiny', None], 'precision': [None, 'fp8']}, d['tags_differ']"
msg=$("$BIN" jobs --url "$WATTAGE_URL" 2>&1); rc=$?
check "reads need no token (protect_reads is off): jobs exits 0" test "$rc" -eq 0
msg=$(WATTAGE_TOKEN=wrong "$BIN" job start nope --url "$WATTAGE_URL" 2>&1); rc=$?
check "a wrong token: exit 2, 401" bash -c '[[ $0 == 2 && $1 == *401* ]]' "$rc" "$msg"

# measure(): a with block measured through the daemon when it answers, else in this process
# through NVML (ctypes on the fake); the same Result either way, its source saying which path
DOWN=http://127.0.0.1:$(free_port)
cat >"$TMP/measure.py" <<'PY'
import json, sys, time
import wattage_client as wc
with wc.measure(sys.argv[1], gpus=sys.argv[2] or None, mode=sys.argv[3]) as m:
    time.sleep(1.0)
print(json.dumps(m.result.as_dict()))
PY
# within FILE [GPUS]: prints "ok SOURCE" when every counted GPU is within 0.5% of the fake's exact energy over the
# result's window, the total their sum; GPUS the indices expected
within() {
    python3 - "$EXACT" "$@" <<'PY'
import json, subprocess, sys
exact, f = sys.argv[1], sys.argv[2]
r = json.loads(open(f).read().strip().splitlines()[-1])
want = sys.argv[3].split(",") if len(sys.argv) > 3 else [str(i) for i in range(8)]
assert [g["gpu"] for g in r["gpus"]] == want, r["gpus"]
tot = 0
for g in r["gpus"]:
    ex = float(subprocess.check_output([exact, g["gpu"], repr(r["start_s"]), repr(r["end_s"])]))
    assert abs(g["energy_j"] - ex) / ex < 0.005, (g, ex)
    tot += ex
assert abs(r["energy_j"] - tot) / tot < 0.005, (r["energy_j"], tot)
assert 0.9 < r["duration_s"] < 2.5 and r["coverage"] >= 0.999 and not r["provisional"], r
print("ok", r["source"])
PY
}
WATTAGE_TOKEN=$(cat "$TMP/token") python3 "$TMP/measure.py" blk 0,1 auto >"$TMP/m-daemon.json" \
    2>"$TMP/m-daemon.err"
msg=$(within "$TMP/m-daemon.json" 0,1 2>&1)
check "measure with the daemon up: source daemon, GPUs 0,1 within 0.5% ($msg)" test "$msg" = "ok daemon"
check "its job id, no error" python3 -c "
import json, sys; r = json.load(open(sys.argv[1])); assert isinstance(r['job_id'], int) and r['error'] is None, r" \
    "$TMP/m-daemon.json"
check "the block is a job in the daemon's store, ended" bash -c "$BIN job show blk -c '$TMP/w.yaml' | grep -q '(ended)'"
WATTAGE_URL=$DOWN WATTAGE_NVML_LIBRARY=$FAKE_NVML python3 "$TMP/measure.py" nb "" auto \
    >"$TMP/m-nvml.json" 2>"$TMP/m-nvml.err"
msg=$(within "$TMP/m-nvml.json" 2>&1)
check "measure with no daemon: source nvml, every GPU's counter within 0.5% ($msg)" test "$msg" = "ok nvml"
check "the same result object on both paths (the same fields)" python3 -c "
import json, sys
a, b = (json.loads(open(f).read().strip().splitlines()[-1]) for f in sys.argv[1:])
assert a.keys() == b.keys() and a['source'] == 'daemon' and b['source'] == 'nvml', (a.keys(), b.keys())
assert b['job_id'] is None and all(g['method'] == 'counter' and g['uuid'].startswith('GPU-fake') for g in b['gpus'])" \
    "$TMP/m-daemon.json" "$TMP/m-nvml.json"
WATTAGE_NVML_LIBRARY=$FAKE_NVML python3 "$TMP/measure.py" forced "" nvml >"$TMP/m-forced.json" 2>/dev/null
msg=$(within "$TMP/m-forced.json" 2>&1)
check "mode nvml with the daemon up: measured in process ($msg)" test "$msg" = "ok nvml"
check "and no job of that name in the daemon" bash -c '! "$0" job show forced -c "$1" >/dev/null 2>&1' \
    "$BIN" "$TMP/w.yaml"
CUDA_VISIBLE_DEVICES=GPU-fake-0000-6,2 WATTAGE_URL=$DOWN WATTAGE_NVML_LIBRARY=$FAKE_NVML \
    python3 "$TMP/measure.py" cvd "" auto >"$TMP/m-cvd.json" 2>/dev/null
msg=$(within "$TMP/m-cvd.json" 2,6 2>&1)
check "in process, CUDA_VISIBLE_DEVICES picks the GPUs (a UUID and an index: $msg)" test "$msg" = "ok nvml"
FAKE_NVML_NOT_SUPPORTED=energy WATTAGE_URL=$DOWN WATTAGE_NVML_LIBRARY=$FAKE_NVML \
    python3 "$TMP/measure.py" nos 0 auto >"$TMP/m-nos.json" 2>"$TMP/m-nos.err"
check "a GPU without the counter: no energy, the error says so, nothing raised, one warning" \
    bash -c 'python3 -c "
import json, sys; r = json.load(open(sys.argv[1]))
assert r[\"source\"] == \"nvml\" and r[\"energy_j\"] is None and r[\"coverage\"] == 0, r
assert \"no energy counter\" in r[\"error\"] and r[\"gpus\"][0][\"energy_j\"] is None, r" "$0" &&
             [[ $(grep -c wattage_client: "$1") == 1 ]]' "$TMP/m-nos.json" "$TMP/m-nos.err"
WATTAGE_URL=$DOWN WATTAGE_NVML_LIBRARY=$(dirname "$FAKE_NVML")/minimal/libnvidia-ml.so.1 \
    python3 "$TMP/measure.py" old 0 auto >"$TMP/m-old.json" 2>/dev/null
check "a library with only the oldest names: the fallbacks open it, no counter is said" python3 -c "
import json, sys; r = json.load(open(sys.argv[1]))
assert r['source'] == 'nvml' and r['energy_j'] is None and 'no energy counter' in r['error'], r" \
    "$TMP/m-old.json"
WATTAGE_URL=$DOWN WATTAGE_NVML_LIBRARY=$TMP/no-such-libnvidia-ml.so python3 -c "
import json, time, wattage_client as wc
try:
    with wc.measure('none') as m:
        raise KeyError('from the block')
except KeyError:
    print(json.dumps(m.result.as_dict()))" >"$TMP/m-none.json" 2>"$TMP/m-none.err"
check "neither path: the block's exception propagates, the result says why" python3 -c "
import json, sys; r = json.load(open(sys.argv[1]))
assert r['source'] is None and r['energy_j'] is None, r
assert 'no daemon at' in r['error'] and 'no-such-libnvidia-ml' in r['error'], r" "$TMP/m-none.json"

# the daemon down: the client warns once and never raises; exec still runs the command
WATTAGE_JOB=1 WATTAGE_URL=$DOWN python3 -c "
import wattage_client as wc
r = [wc.mark('epoch', index=i, tokens=1) for i in range(3)]
with wc.phase('eval'):
    pass
r.append(wc.mark('epoch', tokens=float('nan')))
print(r)" >"$TMP/down.out" 2>"$TMP/down.err"
check "with the daemon down the client returns False and does not raise" \
    test "$(cat "$TMP/down.out")" = "[False, False, False, False]"
check "it warns once" test "$(grep -c 'wattage_client:' "$TMP/down.err")" -eq 1
env -u WATTAGE_JOB python3 -c "import wattage_client as wc; assert wc.mark('epoch') is False" \
    2>"$TMP/nojob.err"
rc=$?
check "without WATTAGE_JOB a mark does nothing, silently" bash -c '[[ $0 == 0 && ! -s $1 ]]' "$rc" "$TMP/nojob.err"
"$BIN" exec --url "$DOWN" -- sh -c 'exit 5' 2>"$TMP/x.err"
check "exec with the daemon down still runs the command (exit 5)" test $? -eq 5
check "and says the daemon is not reachable" grep -q 'cannot reach the daemon' "$TMP/x.err"
finish
