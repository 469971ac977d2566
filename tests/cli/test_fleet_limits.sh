#!/usr/bin/env bash
# The fleet read path against an engine's limits: VictoriaMetrics started with a small
# -search.maxSamplesPerQuery, fed a simulated fleet (build/bench/fleet_feed: 200 s, 8 GPUs a node
# at 300 W, one job "fleet-job" on every node, with the daemon's remote-write encoder). The
# engine counts the samples of every block it reads, about 1,600 per node here.
#   - 6 nodes, 4,000 samples per query: the job's GPU series are more than one query may read;
#     the engine refuses (422) and wattage asks again in smaller batches of nodes: the job's
#     energy is exact, with every node and full coverage, never a partial sum.
#   - 2 nodes, 1,000 samples per query: one node's GPU series are more than the limit: wattage
#     exits 1 and says so (the engine's message, the node), printing no figure.
# Bad answers from an engine (a fake on loopback): an answer cut short, an answer the engine
# marks partial (isPartial, a VictoriaMetrics cluster that missed a storage node): exit 1, said.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
VM=${VICTORIA_METRICS:-victoria-metrics}
FEED=$(dirname "$BIN")/bench/fleet_feed
if ! command -v "$VM" >/dev/null; then
    skip "the fleet read path against an engine's limits" "$VM is not installed (scripts/deps.sh --test)"
    finish
fi
[[ -x $FEED ]] || { not_ok "$FEED is built (make all)"; finish; }

# start_vm NAME MAX_SAMPLES: a VictoriaMetrics on a free port; its port in $VPORT.
start_vm() {
    VPORT=$(free_port)
    bg "$VM" -storageDataPath="$TMP/$1" -httpListenAddr="127.0.0.1:$VPORT" -retentionPeriod=1y \
        -search.disableCache -search.maxSamplesPerQuery="$2" -loggerLevel=ERROR \
        2>>"$TMP/$1.log"
    check "VictoriaMetrics ($1, $2 samples per query) starts" \
        wait_for 30 curl -sf "http://127.0.0.1:$VPORT/health" -o /dev/null
}

# job_ready PORT NODES: the engine answers the job's start series of every node (samples become
# searchable a moment after they are acknowledged).
job_ready() {
    curl -sf "http://127.0.0.1:$1/api/v1/query" \
        --data-urlencode 'query=count(max_over_time(wattage_job_start_time_seconds{job="fleet-job"}[1h]))' |
        $PY -c "import json,sys; r=json.load(sys.stdin)['data']['result']; sys.exit(not r or int(r[0]['value'][1]) != $2)"
}

# 6 nodes, a limit of 4,000 samples per query: met by batching
start_vm big 4000
P1=$VPORT
"$FEED" "http://127.0.0.1:$P1/api/v1/write" 6 200 >"$TMP/feed6.json" 2>"$TMP/feed6.err"
check "the feed writes 6 nodes" [ -s "$TMP/feed6.json" ]
check "the engine holds the job on 6 nodes" wait_for 30 job_ready "$P1" 6
# the limit is real: the job's GPU series in one query are refused
curl -s "http://127.0.0.1:$P1/api/v1/query" \
    --data-urlencode 'query=wattage_gpu_energy_joules_total[5m]' -o "$TMP/direct.json" \
    -w '%{http_code}' >"$TMP/direct.code"
check "the engine refuses the 6 nodes' GPU series in one query (HTTP 422)" grep -qx 422 "$TMP/direct.code"
# samples become searchable a moment after they are acknowledged: ask until every node is there
for _ in $(seq 50); do
    "$BIN" job show fleet-job --json --source "victoriametrics://127.0.0.1:$P1" \
        >"$TMP/job6.json" 2>"$TMP/job6.err" && grep -q node-005 "$TMP/job6.json" && break
    sleep 0.2
done
check "job show --source answers under the engine's limit" [ -s "$TMP/job6.json" ]
if $PY - "$TMP/feed6.json" "$TMP/job6.json" <<'PY'; then ok "the job's energy is exact over 6 nodes, read in batches the engine accepts"; else not_ok "the job's energy is exact over 6 nodes, read in batches the engine accepts" "$(cat "$TMP/job6.err")"; fi
import json, sys
feed = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][0]
job = json.load(open(sys.argv[2]))
got, want = job["kpi"]["energy_joules"], feed["energy_joules"]
assert len(job["nodes"]) == 6, len(job["nodes"])
assert abs(got - want) <= 1e-6 * want, (got, want)
assert job["kpi"]["coverage"] == 1, job["kpi"]
# the two epochs split the job: their sum is the job's, each from all 6 nodes
assert [p["nodes"] for p in job["phases"]] == [6, 6], job["phases"]
assert abs(sum(p["kpi"]["energy_joules"] for p in job["phases"]) - want) <= 1e-6 * want
for n in job["nodes"]:
    assert abs(n["kpi"]["energy_joules"] - want / 6) <= 1e-6 * want, n
PY

# 2 nodes, a limit of 1,000 samples per query: one node's GPU series are too many
start_vm small 1000
P2=$VPORT
"$FEED" "http://127.0.0.1:$P2/api/v1/write" 2 200 >"$TMP/feed2.json" 2>"$TMP/feed2.err"
check "the engine holds the job on 2 nodes" wait_for 30 job_ready "$P2" 2
rc=0
"$BIN" job show fleet-job --json --source "victoriametrics://127.0.0.1:$P2" \
    >"$TMP/job2.json" 2>"$TMP/job2.err" || rc=$?
check "a node's series over the engine's limit: exit 1" [ "$rc" -eq 1 ]
check "no figure is printed" [ ! -s "$TMP/job2.json" ]
check "the error names the node and the engine's limit" \
    grep -q "node node-00[01] alone is over the engine.s limit on series or samples per query" "$TMP/job2.err"
check "the error carries the engine's message" grep -q "HTTP 422: .*maxSamplesPerQuery" "$TMP/job2.err"

# a fake engine: answers cut short, or marked partial
FPORT=$(free_port)
$PY - "$FPORT" >"$TMP/fake.log" 2>&1 <<'PY' &
import http.server, json, sys, urllib.parse
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        q = form.get("query", [""])[0]
        if "truncated" in self.path:
            body = b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":'
        else:
            body = json.dumps({"status": "success", "isPartial": True,
                               "data": {"resultType": "vector", "result": []}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        print(q, file=sys.stderr)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
T_PIDS="$T_PIDS $!"
check "the fake engine answers" wait_for 10 curl -sf -d "" "http://127.0.0.1:$FPORT/partial/api/v1/query" -o /dev/null
rc=0
"$BIN" job show fleet-job --source "http://127.0.0.1:$FPORT/truncated" >"$TMP/t.out" 2>"$TMP/t.err" || rc=$?
check "an answer cut short: exit 1" [ "$rc" -eq 1 ]
check "an answer cut short: said" grep -q "not a JSON answer of the query API" "$TMP/t.err"
rc=0
"$BIN" job show fleet-job --source "http://127.0.0.1:$FPORT/partial" >"$TMP/p.out" 2>"$TMP/p.err" || rc=$?
check "an answer marked partial: exit 1" [ "$rc" -eq 1 ]
check "an answer marked partial: said" grep -q "answer is partial" "$TMP/p.err"
finish
