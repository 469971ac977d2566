#!/usr/bin/env bash
# Token counters, both forms, against the real daemon on the fake NVML (2 GPUs): one job marks
# each epoch's own tokens (`job mark --tokens N`), another the running total (`--tokens-total N`,
# and the Python client's tokens_total=); per epoch and per job both give tokens/kWh within
# 0.5% of the tokens over the fake's exact energy. A running total sent as --tokens is warned
# about on stderr (and in the API's reply); both forms in one mark, or a total that goes down,
# are refused naming the field.
. tests/cli/lib.sh
EXACT=${WATTAGE_BUILD:-build}/tests/fakes/fake_nvml_energy
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/w.yaml"
export FAKE_NVML_T0=$(python3 -c 'import time; print(round(time.time(), 3))')
export FAKE_NVML_POWER=300,120,5 FAKE_NVML_GPUS=2
PORT=$(free_port)
export WATTAGE_URL=http://127.0.0.1:$PORT PYTHONPATH=$PWD/clients/python
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.2 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 10 curl -sf "$WATTAGE_URL/healthz" -o /dev/null

for j in delta total cum py; do "$BIN" job start "$j" --gpus 0,1 >/dev/null; done
: >"$TMP/delta.err" >"$TMP/total.err" >"$TMP/cum.err"
for i in 1 2 3; do
    sleep 0.7
    "$BIN" job mark delta --index "$i" --tokens 250000 2>>"$TMP/delta.err"
    "$BIN" job mark total --index "$i" --tokens-total $((i * 250000)) 2>>"$TMP/total.err"
    "$BIN" job mark cum --index "$i" --tokens $((i * 250000)) 2>"$TMP/cum$i.err"
    WATTAGE_JOB=py python3 -c "import wattage_client as wc, sys; sys.exit(not wc.mark('epoch', index=$i, tokens_total=$i * 250000))"
done
check "marks with --tokens and --tokens-total exit 0, without warnings" \
    bash -c '[[ ! -s $0 && ! -s $1 ]]' "$TMP/delta.err" "$TMP/total.err"
for j in delta total cum py; do "$BIN" job end "$j" --wait 3 >/dev/null; done
for j in delta total py; do
    "$BIN" job show "$j" --json >"$TMP/$j.json"
    msg=$(python3 - "$TMP/$j.json" "$EXACT" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
ex = lambda f, t: sum(float(subprocess.check_output([sys.argv[2], str(g), repr(f), repr(t)])) for g in (0, 1))
ep = [p for p in d["phases"] if p["kind"] == "epoch"]
assert len(ep) == 3, ep
for p in ep:
    assert p["counters"]["tokens"] == 250000, p["counters"]
    want = 250000 / (ex(p["from_s"], p["to_s"]) / 3.6e6)
    got = p["kpi"]["tokens_per_kwh"]
    assert abs(got - want) / want < 0.005, (p["index"], got, want)
assert d["counters"]["tokens"] == 750000, d["counters"]
# the job's tokens/kWh is over its whole window (start to end); the last epoch ends earlier
want_job = 750000 / (ex(d["start_s"], d["end_s"]) / 3.6e6)
got = d["kpi"]["tokens_per_kwh"]
assert abs(got - want_job) / want_job < 0.005, (got, want_job)
print("ok")
PY
    )
    check "$j: tokens per epoch 250000, tokens/kWh within 0.5% of the exact, job total 750000 ($msg)" test "$msg" = ok
done

check "running totals sent as --tokens: the first two marks say nothing" \
    bash -c '[[ ! -s $0 && ! -s $1 ]]' "$TMP/cum1.err" "$TMP/cum2.err"
check "... the third warns on stderr, naming --tokens-total's field ($(cat "$TMP/cum3.err"))" \
    grep -q '^wattage job mark: warning: tokens: 750000 has risen at every epoch mark.*tokens_total' "$TMP/cum3.err"
"$BIN" job start cum2 >/dev/null
for i in 1 2 3; do
    r=$(curl -s -X POST -H 'Content-Type: application/json' -d "{\"tokens\": $((i * 100))}" \
        "$WATTAGE_URL/api/v1/jobs/cum2/marks")
done
check "the API's reply carries the warning ($r)" \
    python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert 'tokens_total' in d['warnings'][0], d" "$r"
out=$(WATTAGE_JOB=cum2 python3 -c "
import wattage_client as wc
print([wc.mark('epoch', tokens=400), wc.mark('epoch', tokens=500)])" 2>"$TMP/pywarn.err")
check "the Python client stores the marks ($out)" test "$out" = "[True, True]"
check "... and prints the daemon's warning once" \
    test "$(grep -c 'wattage_client: the daemon warns: tokens' "$TMP/pywarn.err")" -eq 1

"$BIN" job start bad >/dev/null
"$BIN" job mark bad --tokens-total 500 2>/dev/null
msg=$("$BIN" job mark bad --tokens-total 400 2>&1)
rc=$?
check "a running total that goes down: exit 2, says so ($msg)" \
    bash -c '[[ $0 == 2 && $1 == *"tokens_total: 400 is below the running total"* ]]' "$rc" "$msg"
msg=$("$BIN" job mark bad --tokens 5 --tokens-total 600 2>&1)
rc=$?
check "both forms in one mark: exit 2, names both ($msg)" \
    bash -c '[[ $0 == 2 && $1 == *"tokens and tokens_total: give one of them"* ]]' "$rc" "$msg"
finish
