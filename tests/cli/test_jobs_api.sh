#!/usr/bin/env bash
# The jobs API against the real daemon on the fake NVML (8 GPUs): a job on GPUs 0,1 with three
# epoch marks carrying tokens; each epoch's energy is within 0.5% of the fake's exact energy over
# the epoch window on those GPUs only, tokens/kWh follows from it; a job selected by UUID counts
# that GPU only; bad inputs get their 4xx naming the field and change nothing stored.
. tests/cli/lib.sh
EXACT=${WATTAGE_BUILD:-build}/tests/fakes/fake_nvml_energy
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
printf 'tok-%s\n' "$RANDOM$RANDOM" >"$TMP/token"
chmod 600 "$TMP/token"
TOKEN=$(cat "$TMP/token")
printf 'store:\n  flush_interval: 200ms\ndaemon:\n  auth:\n    token_file: "%s"\n' "$TMP/token" \
    >"$TMP/w.yaml"
t0=$(python3 -c 'import time; print(round(time.time(), 3))')
export FAKE_NVML_T0=$t0 FAKE_NVML_POWER=300,120,5 FAKE_NVML_GPUS=8
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.2 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
DAEMON=$!
check "the daemon answers" wait_for 10 curl -sf "$URL/healthz" -o /dev/null

# api METHOD PATH [BODY]: prints the status on the first line, the body after it
api() {
    local args=(-s -o "$TMP/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $TOKEN")
    [[ $# -ge 3 ]] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
    curl "${args[@]}" "$URL$2"
}
jq_() { python3 -c "import json,sys; d=json.load(open('$TMP/body')); print($1)"; }

c=$(api POST /api/v1/jobs '{"name": "train-a", "tags": {"model": "llama3-8b", "batch": "32"}, "gpus": [0, "1"]}')
check "POST /api/v1/jobs is 201" test "$c" = 201
JOB=$(jq_ "d['id']")
check "it returns the job id" test "$JOB" -ge 1
sleep 0.7
for i in 1 2 3; do
    c=$(api POST "/api/v1/jobs/$JOB/marks" "{\"kind\": \"epoch\", \"index\": $i, \"tokens\": $((i * 1000000))}")
    check "epoch mark $i is 201" test "$c" = 201
    sleep 0.9
done
c=$(api POST /api/v1/jobs/train-a/end)
check "end by name is 200" test "$c" = 200
# a job on one GPU named by its UUID, beside it
c=$(api POST /api/v1/jobs '{"name": "by-uuid", "gpus": ["GPU-fake-0000-5"]}')
check "a job by UUID starts" test "$c" = 201
UJOB=$(jq_ "d['id']")
sleep 1.2
c=$(api POST "/api/v1/jobs/$UJOB/end" '{}')
check "it ends" test "$c" = 200
sleep 1 # the store flushes every 200 ms; the windows are covered by then

api GET "/api/v1/jobs/$JOB" >/dev/null
cp "$TMP/body" "$TMP/job.json"
msg=$(python3 - "$TMP/job.json" "$EXACT" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
ex = lambda g, f, t: float(subprocess.check_output([sys.argv[2], str(g), repr(f), repr(t)]))
assert d["state"] == "ended" and d["gpus"] == ["0", "1"], d
assert d["tags"] == {"model": "llama3-8b", "batch": "32"}, d["tags"]
ph = [p for p in d["phases"] if p["kind"] == "epoch"]
assert [p["index"] for p in ph] == [1, 2, 3], ph
for p in ph:
    k = p["kpi"]
    exact = ex(0, p["from_s"], p["to_s"]) + ex(1, p["from_s"], p["to_s"])
    err = abs(k["energy_joules"] - exact) / exact
    assert err < 0.005, f"epoch {p['index']}: {k['energy_joules']} vs {exact} ({err:.3%})"
    assert abs(k["coverage"] - 1) < 1e-9, k
    assert abs(k["energy_kwh"] - k["energy_joules"] / 3.6e6) < 1e-12, k
    tpk = p["counters"]["tokens"] / (k["energy_joules"] / 3.6e6)
    assert abs(k["tokens_per_kwh"] - tpk) < 1e-6 * tpk, (k, tpk)
    assert abs(k["joules_per_token"] * p["counters"]["tokens"] - k["energy_joules"]) < 1e-6, k
    dur = p["to_s"] - p["from_s"]
    assert abs(k["mean_power_w"] - k["energy_joules"] / dur) < 1e-6 * k["mean_power_w"], k
assert abs(ph[0]["from_s"] - d["start_s"]) < 1e-6 and ph[1]["from_s"] == ph[0]["to_s"], ph
k = d["kpi"]
exact = ex(0, d["start_s"], d["end_s"]) + ex(1, d["start_s"], d["end_s"])
assert abs(k["energy_joules"] - exact) / exact < 0.005, (k, exact)
allg = sum(ex(g, d["start_s"], d["end_s"]) for g in range(8))
assert k["energy_joules"] < 0.4 * allg, "other GPUs' energy is counted"
assert sorted(g["gpu"] for g in d["gpu_energy"]) == ["0", "1"], d["gpu_energy"]
assert d["counters"]["tokens"] == 6000000, d["counters"]
assert 150 < k["peak_power_w"] < 900, k
print("ok")
PY
)
check "per-epoch energy of GPUs 0,1 within 0.5% of the exact, tokens/kWh, job totals ($msg)" test "$msg" = ok

api GET "/api/v1/jobs/$UJOB" >/dev/null
msg=$(python3 - "$TMP/body" "$EXACT" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
exact = float(subprocess.check_output([sys.argv[2], "5", repr(d["start_s"]), repr(d["end_s"])]))
assert [g["uuid"] for g in d["gpu_energy"]] == ["GPU-fake-0000-5"], d["gpu_energy"]
assert abs(d["kpi"]["energy_joules"] - exact) / exact < 0.005, (d["kpi"], exact)
print("ok")
PY
)
check "a job selected by UUID counts that GPU only ($msg)" test "$msg" = ok

c=$(api GET /api/v1/jobs)
check "GET /api/v1/jobs lists both" python3 -c "
import json; d=json.load(open('$TMP/body'))
assert [j['name'] for j in d['jobs']] == ['train-a', 'by-uuid'] and $c == 200, d"

# --- bad inputs: each a 4xx naming the field; nothing stored changes
dump() { sqlite3 "$TMP/w.db" 'SELECT * FROM jobs; SELECT * FROM marks;' | md5sum; }
before=$(dump)
# expect STATUS FIELD METHOD PATH [BODY]
expect() {
    local want=$1 field=$2; shift 2
    local c; c=$(api "$@")
    local f; f=$(python3 -c "import json; print(json.load(open('$TMP/body')).get('field'))" 2>/dev/null)
    if [[ $c == "$want" && $f == "$field" ]]; then ok "$1 $2 ${3:-}: $want, field $field"
    else not_ok "$1 $2 ${3:-}: want $want field $field" "got $c: $(cat "$TMP/body")"; fi
}
expect 404 job POST /api/v1/jobs/999/marks '{"kind": "epoch"}'
expect 404 job POST /api/v1/jobs/no-such-job/end
expect 404 job GET /api/v1/jobs/no-such-job
expect 409 job POST "/api/v1/jobs/$JOB/marks" '{"kind": "epoch", "tokens": 5}'
expect 409 job POST "/api/v1/jobs/$JOB/end"
expect 400 body POST /api/v1/jobs '{"name": "x", '
expect 400 body POST "/api/v1/jobs/$UJOB/marks" 'not json'
expect 400 body POST /api/v1/jobs '[1, 2]'
expect 400 tokens POST "/api/v1/jobs/$UJOB/marks" '{"kind": "epoch", "tokens": -5}'
expect 400 samples POST "/api/v1/jobs/$UJOB/marks" '{"samples": "many"}'
expect 400 index POST "/api/v1/jobs/$UJOB/marks" '{"kind": "epoch", "index": 1.5}'
expect 400 kind POST "/api/v1/jobs/$UJOB/marks" '{"kind": "Epoch!"}'
expect 400 name POST /api/v1/jobs '{"tags": {}}'
expect 400 name POST /api/v1/jobs '{"name": "a b"}'
expect 400 'gpus[1]' POST /api/v1/jobs '{"name": "g", "gpus": [0, 99]}'
expect 400 'gpus[0]' POST /api/v1/jobs '{"name": "g", "gpus": ["GPU-nope"]}'
expect 400 'tags.model' POST /api/v1/jobs '{"name": "g", "tags": {"model": ["x"]}}'
expect 400 colour POST /api/v1/jobs '{"name": "g", "colour": "red"}'
python3 -c "print('{\"name\": \"big\", \"tags\": {\"x\": \"' + 'a' * 70000 + '\"}}')" >"$TMP/big.json"
c=$(curl -s -o "$TMP/body" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
    --data-binary @"$TMP/big.json" "$URL/api/v1/jobs")
check "an oversize body is 413" test "$c" = 413
c=$(curl -s -o "$TMP/body" -w '%{http_code}' --data-binary '{"name": "sneaky"}' "$URL/api/v1/jobs")
check "a write without the token is 401" test "$c" = 401
c=$(curl -s -o "$TMP/body" -w '%{http_code}' -H 'Authorization: Bearer wrong' \
    --data-binary '{"kind": "epoch"}' "$URL/api/v1/jobs/$UJOB/marks")
check "a mark with a wrong token is 401" test "$c" = 401
check "nothing stored changed" test "$(dump)" = "$before"
c=$(api POST /api/v1/jobs '{"name": "dup"}')
c=$(api POST /api/v1/jobs '{"name": "dup"}')
f=$(jq_ "d['field']")
check "a second running job of the same name is 409 (name)" test "$c:$f" = 409:name

kill -TERM "$DAEMON"
wait "$DAEMON"
check "the daemon stops cleanly" test $? -eq 0
check "the store passes integrity_check" test "$(sqlite3 "$TMP/w.db" 'PRAGMA integrity_check')" = ok
finish
