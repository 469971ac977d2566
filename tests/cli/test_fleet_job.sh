#!/usr/bin/env bash
# A job's energy from VictoriaMetrics when readings are not where wattage first looks for them:
# wattage reads the engine's energy readings within 5 s of each edge of a job first and reads again,
# with the whole pad (30 s), the nodes where that was not enough. A simulated fleet
# (build/bench/fleet_feed: 4 nodes x 8 GPUs at 300 W, 200 s, one job "fleet-job" with two epochs):
#   - node-000's GPUs are read every 20 s (sparse): no reading within 5 s after the job's start;
#     its energy is still exact (the readings around each edge come from the second read), with
#     full coverage.
#   - node-001 goes away 30 s after the first epoch's mark (leave): no readings after that, no end
#     and no second mark; its energy is what it used up to its last reading, the node and the job
#     say they are not fully covered (and still running: no end), never a figure that hides it.
# The others are exact, each epoch counts the nodes that marked it.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
VM=${VICTORIA_METRICS:-victoria-metrics}
FEED=$(dirname "$BIN")/bench/fleet_feed
if ! command -v "$VM" >/dev/null; then
    skip "a job's energy from VictoriaMetrics" "$VM is not installed (scripts/deps.sh --test)"
    finish
fi
[[ -x $FEED ]] || { not_ok "$FEED is built (make all)"; finish; }

VPORT=$(free_port)
bg "$VM" -storageDataPath="$TMP/vm" -httpListenAddr="127.0.0.1:$VPORT" -retentionPeriod=1y \
    -search.disableCache -loggerLevel=ERROR 2>>"$TMP/vm.log"
check "VictoriaMetrics starts" wait_for 30 curl -sf "http://127.0.0.1:$VPORT/health" -o /dev/null
"$FEED" "http://127.0.0.1:$VPORT/api/v1/write" 4 200 sparse leave >"$TMP/feed.json" 2>"$TMP/feed.err"
check "the feed writes 4 nodes, one sparse, one leaving" grep -q left_node "$TMP/feed.json"

# samples become searchable a moment after they are acknowledged: ask until every node is there
job_ready() {
    "$BIN" job show fleet-job --json --source "victoriametrics://127.0.0.1:$VPORT" \
        >"$TMP/job.json" 2>"$TMP/job.err" &&
        $PY -c "import json,sys; j=json.load(open('$TMP/job.json')); sys.exit(len(j['nodes']) != 4 or len(j['phases']) != 2 or j['phases'][0]['nodes'] != 4)"
}
check "job show --source answers for the 4 nodes" wait_for 30 job_ready
# the engine really holds no reading of node-000 within 5 s after the job's start
at=$($PY -c "import json; print(json.loads(open('$TMP/feed.json').readline())['start_s'] + 5)")
curl -s "http://127.0.0.1:$VPORT/api/v1/query" --data-urlencode "time=$at" \
    --data-urlencode 'query=count_over_time(wattage_gpu_energy_joules_total{node="node-000",gpu="0"}[5s])' \
    -o "$TMP/near.json"
check "node-000 has no reading within 5 s after the job's start" \
    $PY -c "import json,sys; r=json.load(open('$TMP/near.json'))['data']['result']; sys.exit(bool(r) and float(r[0]['value'][1]) > 0)"

check_job() {
    $PY - "$TMP/feed.json" "$TMP/job.json" "$1" <<'PY'
import json, sys
feed = json.loads(open(sys.argv[1]).readline())
job = json.load(open(sys.argv[2]))
what = sys.argv[3]
nodes = {n["node"]: n for n in job["nodes"]}
each = 8 * 300 * (feed["end_s"] - feed["start_s"])
close = lambda a, b: abs(a - b) <= 1e-6 * b
if what == "sparse":
    k = nodes["node-000"]["kpi"]
    assert close(k["energy_joules"], each) and k["coverage"] == 1, k
elif what == "others":
    for n in ("node-002", "node-003"):
        k = nodes[n]["kpi"]
        assert close(k["energy_joules"], each) and k["coverage"] == 1, (n, k)
elif what == "left":
    n = nodes[feed["left_node"]]
    assert close(n["kpi"]["energy_joules"], feed["left_energy_joules"]), n
    assert n["end"] is None and 0 < n["kpi"]["coverage"] < 0.9, n
elif what == "job":
    assert close(job["kpi"]["energy_joules"], feed["energy_joules"]), (job["kpi"], feed)
    assert job["state"] == "running" and job["kpi"]["coverage"] < 0.9, job["kpi"]
elif what == "phases":
    assert [p["nodes"] for p in job["phases"]] == [4, 3], job["phases"]
    # the first epoch: every node fully read up to its mark (the leaving node left after it)
    assert close(job["phases"][0]["kpi"]["energy_joules"], 4 * each / 2), job["phases"][0]
PY
}
check "node-000 (readings every 20 s): its energy is exact, fully covered" check_job sparse
check "node-002 and node-003: exact, fully covered" check_job others
check "node-001 (left): its energy up to its last reading, its coverage says the rest is missing" check_job left
check "the job: the sum of them, still running, not fully covered" check_job job
check "the epochs: 4 nodes marked the first (exact), 3 the second" check_job phases
finish
