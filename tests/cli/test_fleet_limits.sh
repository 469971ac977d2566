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
# The same with the real Prometheus (--query.max-samples: it counts every sample a query loads,
# about 730 per node here: the job's 80 s and the 5 s wattage looks at first on each side, 8
# GPUs; its edges are close enough for one query):
#   - 6 nodes, 2,000 samples: refused (422) for 6 nodes and for 3, met by the split (2 and 1).
#   - 2 nodes, 500 samples: one node is over it: exit 1, said, no figure.
# Bad answers from an engine (a fake on loopback): an answer cut short, an answer the engine
# marks partial (isPartial, a VictoriaMetrics cluster that missed a storage node), an answer
# with "warnings" (an engine that cut it to a limit): exit 1, said, naming the query.
# A proxy that answers 404 to /api/v1/series (and passes the query API to VictoriaMetrics): the
# job read with the 30 s around each edge at once, exact.
# An engine unavailable for a while (503 twice for every query, a fake in front of the real
# VictoriaMetrics): asked again with a backoff, the answer exact; always 503: exit 1 after 4
# tries (the fake counts them), said with the status.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
VM=${VICTORIA_METRICS:-victoria-metrics}
PROMETHEUS=${PROMETHEUS:-prometheus}
FEED=$(dirname "$BIN")/bench/fleet_feed
for tool in "$VM" "$PROMETHEUS"; do
    if ! command -v "$tool" >/dev/null; then
        skip "the fleet read path against an engine's limits" "$tool is not installed (scripts/deps.sh --test)"
        finish
    fi
done
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
# one_over SCHEME PORT NAME MESSAGE: 2 nodes fed to the engine, one node over its limit: exit 1,
# said (the node, the engine's MESSAGE), no figure
one_over() {
    "$FEED" "http://127.0.0.1:$2/api/v1/write" 2 200 >"$TMP/feed2$3.json" 2>"$TMP/feed2$3.err"
    check "$3: the engine holds the job on 2 nodes" wait_for 30 job_ready "$2" 2
    local rc=0
    "$BIN" job show fleet-job --json --source "$1://127.0.0.1:$2" \
        >"$TMP/job2$3.json" 2>"$TMP/job2$3.err" || rc=$?
    check "$3: a node's series over the engine's limit: exit 1" [ "$rc" -eq 1 ]
    check "$3: no figure is printed" [ ! -s "$TMP/job2$3.json" ]
    check "$3: the error names the node and the engine's limit" grep -q \
        "node node-00[01] alone is over the engine.s limit on series or samples per query" \
        "$TMP/job2$3.err"
    check "$3: the error carries the engine's message" grep -q "HTTP 422: .*$4" "$TMP/job2$3.err"
}
one_over victoriametrics "$P2" VictoriaMetrics maxSamplesPerQuery

# start_prom NAME MAX_SAMPLES: the real Prometheus taking remote write on a free port; its port in
# $PPORT.
start_prom() {
    PPORT=$(free_port)
    mkdir -p "$TMP/$1"
    printf 'global:\n  scrape_interval: 1h\n' >"$TMP/$1/prometheus.yml"
    bg "$PROMETHEUS" --config.file="$TMP/$1/prometheus.yml" --storage.tsdb.path="$TMP/$1/data" \
        --web.listen-address="127.0.0.1:$PPORT" --web.enable-remote-write-receiver \
        --query.max-samples="$2" --log.level=warn 2>>"$TMP/$1.log"
    check "Prometheus ($1, $2 samples per query) starts" \
        wait_for 30 curl -sf "http://127.0.0.1:$PPORT/-/ready" -o /dev/null
}

# exact FEED JOB NODES: the job's energy is the feed's, from every node, fully covered
exact() {
    $PY - "$@" <<'PY'
import json, sys
feed = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][0]
job, nodes = json.load(open(sys.argv[2])), int(sys.argv[3])
got, want = job["kpi"]["energy_joules"], feed["energy_joules"]
assert len(job["nodes"]) == nodes, len(job["nodes"])
assert abs(got - want) <= 1e-6 * want, (got, want)
assert job["kpi"]["coverage"] == 1, job["kpi"]
assert [p["nodes"] for p in job["phases"]] == [nodes, nodes], job["phases"]
PY
}

start_prom prom-big 2000
P3=$PPORT
"$FEED" "http://127.0.0.1:$P3/api/v1/write" 6 200 >"$TMP/pfeed6.json" 2>"$TMP/pfeed6.err"
check "Prometheus holds the job on 6 nodes" wait_for 30 job_ready "$P3" 6
# what wattage asks of 3 nodes (the job's window and 5 s on each side: 90.25 s) is refused, of 2
# answered
at=$($PY -c "import json; print(json.loads(open('$TMP/pfeed6.json').readline())['end_s'] + 5)")
for want in '422 node-00[012]' '200 node-00[01]'; do
    code=$(curl -s "http://127.0.0.1:$P3/api/v1/query" --data-urlencode "time=$at" \
        --data-urlencode "query=wattage_gpu_energy_joules_total{node=~\"${want#* }\"}[90251ms]" \
        -o "$TMP/pdirect.json" -w '%{http_code}')
    check "Prometheus answers HTTP ${want% *} for the GPU series of ${want#* } around the job" \
        [ "$code" = "${want% *}" ]
done
for _ in $(seq 50); do
    "$BIN" job show fleet-job --json --source "prometheus://127.0.0.1:$P3" \
        >"$TMP/pjob6.json" 2>"$TMP/pjob6.err" && grep -q node-005 "$TMP/pjob6.json" && break
    sleep 0.2
done
if exact "$TMP/pfeed6.json" "$TMP/pjob6.json" 6 2>"$TMP/pexact.err"; then
    ok "Prometheus: the job's energy is exact over 6 nodes, read in batches it accepts"
else
    not_ok "Prometheus: the job's energy is exact over 6 nodes, read in batches it accepts" \
        "$(cat "$TMP/pjob6.err" "$TMP/pexact.err")"
fi

start_prom prom-small 500
P4=$PPORT
one_over prometheus "$P4" Prometheus "too many samples"

# a fake engine: answers cut short, or marked partial; 503 twice for each query, then the real
# VictoriaMetrics' answer (/flaky), or always (/down)
FPORT=$(free_port)
$PY - "$FPORT" "http://127.0.0.1:$P1" "$TMP/tries" >"$TMP/fake.log" 2>&1 <<'PY' &
import http.server, json, sys, urllib.error, urllib.parse, urllib.request
seen = {}
def forward(path, raw):
    """the real VictoriaMetrics' answer to the same endpoint"""
    try:
        with urllib.request.urlopen(sys.argv[2] + "/api/" + path.split("/api/", 1)[1], raw) as r:
            return 200, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        form = urllib.parse.parse_qs(raw.decode())
        q = form.get("query", [""])[0]
        code = 200
        if "/flaky/" in self.path or "/down/" in self.path:
            key = (self.path, raw)
            seen[key] = seen.get(key, 0) + 1
            with open(sys.argv[3], "a") as f:
                print(self.path.split("/")[1], seen[key], file=f)
        if "/flaky/" in self.path and seen[key] > 2:
            code, body = forward(self.path, raw)
        elif "/flaky/" in self.path or "/down/" in self.path:
            code = 503
            body = b"<html>no backend</html>" if "/down/" in self.path else json.dumps(
                {"status": "error", "errorType": "unavailable", "error": "starting"}).encode()
        elif "/nolist/" in self.path and self.path.endswith("/series"):
            code, body = 404, b"404 page not found"
        elif "/nolist/" in self.path:
            code, body = forward(self.path, raw)
        elif "warned" in self.path:
            body = json.dumps({"status": "success", "warnings": ["results truncated due to limit"],
                               "data": {"resultType": "vector", "result": []}}).encode()
        elif "truncated" in self.path:
            body = b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":'
        else:
            body = json.dumps({"status": "success", "isPartial": True,
                               "data": {"resultType": "vector", "result": []}}).encode()
        self.send_response(code)
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
check "an answer cut short: said, naming the query" grep -q \
    "query max_over_time(wattage_job_start_time_seconds{job=\"fleet-job\"}\\[31d\\]): HTTP 200, not a JSON answer of the query API" \
    "$TMP/t.err"
rc=0
"$BIN" job show fleet-job --source "http://127.0.0.1:$FPORT/partial" >"$TMP/p.out" 2>"$TMP/p.err" || rc=$?
check "an answer marked partial: exit 1" [ "$rc" -eq 1 ]
check "an answer marked partial: said" grep -q "answer is partial" "$TMP/p.err"
# fake_exact PATH NAME WHAT: job show through the fake at PATH exits 0 and is exact over the 6
# nodes (NAME: the case, WHAT: how)
fake_exact() {
    local rc=0
    "$BIN" job show fleet-job --json --source "http://127.0.0.1:$FPORT/$1" >"$TMP/$1.json" \
        2>"$TMP/$1.err" || rc=$?
    check "$2: exit 0" [ "$rc" -eq 0 ]
    if exact "$TMP/feed6.json" "$TMP/$1.json" 6 2>"$TMP/$1.exact"; then
        ok "  the job's energy is exact, $3"
    else
        not_ok "  the job's energy is exact, $3" "$(cat "$TMP/$1.err" "$TMP/$1.exact")"
    fi
}
fake_exact nolist "a proxy that does not let /api/v1/series through" \
    "read with the 30 s around each edge"
rc=0
"$BIN" job show fleet-job --source "http://127.0.0.1:$FPORT/warned" >"$TMP/w.out" 2>"$TMP/w.err" || rc=$?
check "an answer with a warning (cut to a limit): exit 1" [ "$rc" -eq 1 ]
check "  said, with the query and the engine's warning" grep -q \
    "query max_over_time(wattage_job_start_time_seconds{job=\"fleet-job\"}\[31d\]): the engine warns that its answer may be incomplete, so no figure is made from it: results truncated due to limit" \
    "$TMP/w.err"
check "  no figure is printed" [ ! -s "$TMP/w.out" ]
fake_exact flaky "an engine unavailable twice for each query" "each query asked 3 times"
check "  no query was asked a 4th time" sh -c "! grep -q '^flaky [4-9]' '$TMP/tries'"
check "  every query was asked a 3rd time" \
    [ "$(grep -c '^flaky 1' "$TMP/tries")" -eq "$(grep -c '^flaky 3' "$TMP/tries")" ]
rc=0
"$BIN" job show fleet-job --source "http://127.0.0.1:$FPORT/down" >"$TMP/d.out" 2>"$TMP/d.err" || rc=$?
check "an engine always unavailable: exit 1" [ "$rc" -eq 1 ]
check "  asked 4 times, no more" [ "$(grep -c '^down' "$TMP/tries")" -eq 4 ]
check "  said with the status and the tries" \
    grep -q "HTTP 503: the engine was unavailable at each of 4 tries over 1.75 s" "$TMP/d.err"
check "  no figure is printed" [ ! -s "$TMP/d.out" ]
finish
