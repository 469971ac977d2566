#!/usr/bin/env bash
# OTLP/HTTP metrics export into a receiver on loopback (tests/peers/otlp_peer.py: it decodes each
# request with message definitions it builds itself from the OTLP specification, with
# python3-protobuf) that demands a bearer token and a header. A daemon on the fake NVML streams
# its readings; the receiver is stopped for OTLP_OUTAGE_S seconds (default 15) and started again
# on the same port. Then every stored reading up to the cursor must have arrived exactly once,
# with its exact time and value, under its OpenTelemetry name and unit, as a gauge or a
# cumulative monotonic sum (its start constant), with its labels and the hw.* attributes as
# attributes and the resource naming the host and node; nothing else may have arrived, and the
# poll loop must have kept time. A wrong token is retried, counted and logged, never dropped.
# A partial success counts the rejected points as dropped. Over TLS the receiver's certificate
# is checked against tls.ca; another CA's is refused.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
PEER=tests/peers/otlp_peer.py
OUTAGE=${OTLP_OUTAGE_S:-15}

if ! $PY -c 'import google.protobuf' 2>/dev/null; then
    skip "OTLP export into the receiver" "python3-protobuf is not installed (scripts/deps.sh --test)"
    finish
fi

# ---- check-config ----
cfgerr() { # cfgerr NAME PATTERN YAML: check-config exits 2 and prints PATTERN
    local name=$1 pat=$2
    printf '%s\n' "$3" >"$TMP/bad.yaml"
    local out rc
    out=$("$BIN" check-config "$TMP/bad.yaml" 2>&1)
    rc=$?
    if [[ $rc -eq 2 ]] && grep -qE "$pat" <<<"$out"; then ok "check-config: $name"
    else not_ok "check-config: $name" "rc=$rc" "$out"; fi
}
cfgerr "otlp is a list of endpoints" 'bad.yaml:2: otlp: expected a list' \
    'otlp:
  url: http://127.0.0.1:4318/v1/metrics'
cfgerr "a header wattage sets itself is refused, named" \
    'bad.yaml:4: otlp\[0\]\.headers\.Content-Encoding: set by wattage' \
    'otlp:
  - url: http://127.0.0.1:4318/v1/metrics
    headers:
      Content-Encoding: br'
cfgerr "an unknown compression is named" 'bad.yaml:3: otlp\[0\]\.compression' \
    'otlp:
  - url: http://127.0.0.1:4318/v1/metrics
    compression: zstd'

mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2
echo "token-$RANDOM$RANDOM" >"$TMP/token"
echo "not-the-token" >"$TMP/wrong"
chmod 600 "$TMP/token" "$TMP/wrong"

omet() { # omet PORT NAME ENDPOINT
    curl -s "http://127.0.0.1:$1/metrics" | awk -v n="$2{endpoint=\"$3\"}" '$1 == n { print $2 }'
}
caught_up() {
    local p s
    p=$(omet "$1" wattage_otlp_samples_pending "$2")
    s=$(omet "$1" wattage_otlp_samples_sent_total "$2")
    [[ $p == 0 && -n $s && $s != 0 ]]
}
stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
peer_pid=
start_peer() { # start_peer [PORT]
    rm -f "$TMP/peer.port"
    bg $PY "$PEER" "$TMP/peer.port" "$TMP/points.jsonl" --token "$TMP/token" \
        --header "X-Scope-OrgID: fleet-7" ${1:+--port "$1"} 2>>"$TMP/peer.log"
    peer_pid=$!
    wait_for 20 test -s "$TMP/peer.port"
}

if ! start_peer; then
    not_ok "the receiver starts" "$(tail -5 "$TMP/peer.log")"
    finish
fi
OPORT=$(cat "$TMP/peer.port")
cat >"$TMP/o.yaml" <<EOF
daemon:
  stop_deadline: 5s
topology:
  node: node-o
store:
  flush_interval: 0.5s
otlp:
  - url: http://127.0.0.1:$OPORT/v1/metrics
    name: col
    bearer_token_file: $TMP/token
    headers: {X-Scope-OrgID: fleet-7}
    batch_size: 500
    deadline: 0.5s
    timeout: 2s
    max_backoff: 1s
EOF
PORT=$(free_port)
bg "$BIN" run -c "$TMP/o.yaml" --listen "127.0.0.1:$PORT" --db "$TMP/o.db" --interval 0.5 \
    --log-level debug 2>"$TMP/a.log"
wpid=$!
wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
if wait_for 30 caught_up "$PORT" col; then
    ok "the daemon exports its readings to the receiver (token and header accepted)"
else
    not_ok "the daemon exports its readings to the receiver" "$(grep otlp "$TMP/a.log" | tail -5)" \
        "$(tail -3 "$TMP/points.jsonl")"
    finish
fi
sleep 2
stop_pid "$peer_pid"
sleep "$OUTAGE"
pending=$(omet "$PORT" wattage_otlp_samples_pending col)
failed=$(omet "$PORT" wattage_otlp_samples_failed_total col)
lag=$(omet "$PORT" wattage_otlp_lag_seconds col)
check "while the receiver is down readings stay pending ($pending, lag ${lag}s) and attempts fail ($failed)" \
    $PY -c 'import sys; p, f, l, o = map(float, sys.argv[1:5]); sys.exit(0 if p > 0 and f > 0 and l >= o - 5 else 1)' \
    "${pending:-0}" "${failed:-0}" "${lag:-0}" "$OUTAGE"
if start_peer "$OPORT" && wait_for 60 caught_up "$PORT" col; then
    ok "after $OUTAGE s down the backlog is delivered"
else
    not_ok "after $OUTAGE s down the backlog is delivered" "$(grep otlp "$TMP/a.log" | tail -5)"
fi
check "the outage was logged with the url" \
    grep -q "otlp: endpoint col: cannot send .* url=http://127.0.0.1:$OPORT/v1/metrics" "$TMP/a.log"
check "and the recovery" grep -q "otlp: endpoint col: delivering again after" "$TMP/a.log"
stop_pid "$wpid"
stop_pid "$peer_pid"
# at SIGTERM the store's last flush goes out before the daemon exits (daemon.stop_deadline)
check "the stop sent what the last flush stored, nothing left" \
    grep -Eq "info  otlp: at stop: sent [0-9]+ samples in [0-9.]+ s, 0 left for the next start" "$TMP/a.log"

# check_points DB JSONL NODE CURSOR MAX_UNSENT: every stored reading up to the cursor arrived once
# as the OTLP point it maps to; nothing else arrived; every point is well-formed.
check_points() {
    $PY - "$@" <<'PY'
import collections, json, math, re, socket, sqlite3, sys
sys.path.insert(0, "tests/cli")
from stored import readings as stored_readings
db, path, node, endpoint, max_unsent = sys.argv[1:6]
pair = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
def unescape(v):
    return re.sub(r'\\(.)', lambda m: "\n" if m.group(1) == "n" else m.group(1), v)
# the semantic conventions' names, units and hardware types (the specification, not the code)
SEMCONV = {
    "wattage_gpu_power_watts": ("hw.power", "W", "gpu"),
    "wattage_gpu_energy_joules_total": ("hw.energy", "J", "gpu"),
    "wattage_cpu_energy_joules_total": ("hw.energy", "J", "cpu"),
    "wattage_gpu_utilization_ratio": ("hw.gpu.utilization", "1", "gpu"),
    "wattage_gpu_memory_utilization_ratio": ("hw.gpu.memory.utilization", "1", "gpu"),
    "wattage_gpu_memory_used_bytes": ("hw.gpu.memory.usage", "By", "gpu"),
    "wattage_gpu_memory_total_bytes": ("hw.gpu.memory.limit", "By", "gpu"),
}
UNITS = [("_watts", "W"), ("_joules", "J"), ("_seconds", "s"), ("_bytes", "By"), ("_ratio", "1"),
         ("_celsius", "Cel"), ("_hertz", "Hz"), ("_info", "1")]
def expect(metric, labels):
    attrs = {k: v for k, v in labels if v}
    if metric in SEMCONV:
        name, unit, hw = SEMCONV[metric]
        attrs["hw.type"] = hw
        attrs["hw.id"] = ("cpu" + attrs.get("package", "0")) if hw == "cpu" else \
            attrs.get("uuid") or attrs.get("gpu")
    else:
        name, base = metric, metric[:-6] if metric.endswith("_total") else metric
        unit = next((u for s, u in UNITS if base.endswith(s)), "")
    return name, unit, metric.endswith("_total"), tuple(sorted(attrs.items()))
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
since = con.execute("SELECT since_ns FROM remote_write_endpoints WHERE name=?", (endpoint,)).fetchone()
assert since, f"no cursor {endpoint} in the store"
since = since[0]
cursors = dict(con.execute("SELECT series, t FROM remote_write_cursors WHERE endpoint=?", (endpoint,)))
readings = stored_readings(db, since)
stored, unsent, kinds = {}, {}, {}
for sid, metric, labels in con.execute("SELECT id, metric, labels FROM series WHERE node=''"):
    name, unit, is_sum, attrs = expect(metric, [(k, unescape(v)) for k, v in pair.findall(labels)])
    kinds[(name, attrs)] = (unit, is_sum)
    cur = cursors.get(sid, since)
    for t, v in readings[sid]:
        (stored if t <= cur else unsent)[(name, attrs, t)] = v
problems, got, starts = [], {}, collections.defaultdict(set)
twice = npts = 0
host = socket.gethostname()
for line in open(path):
    p = json.loads(line)
    if "error" in p:
        problems.append(f"the receiver could not take a request: {p['error']}")
        continue
    if "refused" in p:
        problems.append(f"the receiver refused a request: {p['refused']}")
        continue
    npts += 1
    r = p["resource"]
    if r.get("host.name") != host or r.get("wattage.node") != node or r.get("service.name") != "wattage":
        problems.append(f"resource {r}")
    if p["scope"] != "wattage" or p["value_case"] != "as_double":
        problems.append(f"scope {p['scope']!r}, value {p['value_case']!r}")
    attrs = tuple(sorted(p["attributes"].items()))
    k = (p["metric"], attrs, p["time"])
    if k in got:
        twice += 1
        problems.append(f"arrived twice: {k}")
    got[k] = p["value"]
    unit, is_sum = kinds.get((p["metric"], attrs), (None, None))
    if unit is not None and p["unit"] != unit:
        problems.append(f"{p['metric']}: unit {p['unit']!r}, expected {unit!r}")
    if is_sum is not None and (p["kind"] == "sum") != is_sum:
        problems.append(f"{p['metric']}: a {p['kind']}, expected {'a sum' if is_sum else 'a gauge'}")
    if p["kind"] == "sum":
        if p["temporality"] != 2 or p["monotonic"] is not True:
            problems.append(f"{p['metric']}: temporality {p['temporality']}, monotonic {p['monotonic']}")
        if not 0 < p["start"] <= p["time"]:
            problems.append(f"{p['metric']}: start {p['start']} after time {p['time']}")
        starts[(p["metric"], attrs)].add(p["start"])
    elif p["start"]:
        problems.append(f"{p['metric']}: a gauge with a start time")
same = lambda a, b: a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
missing = [k for k in stored if k not in got]
wrong = [k for k in stored if k in got and not same(got[k], stored[k])]
extra = [k for k in got if k not in stored and k not in unsent]
if missing:
    problems.append(f"{len(missing)} stored readings up to the cursor did not arrive: {missing[:3]}")
if wrong:
    problems.append(f"{len(wrong)} readings arrived with another value: {wrong[:3]}")
if extra:
    problems.append(f"{len(extra)} points the store does not have: {extra[:3]}")
moved = [s for s, v in starts.items() if len(v) != 1]
if moved:
    problems.append(f"{len(moved)} sums changed their start time (a reset to a receiver): {moved[:3]}")
per_series = collections.Counter(k[:2] for k in unsent)
if per_series and max(per_series.values()) > int(max_unsent):
    problems.append(f"{max(per_series.values())} readings of a series were never acknowledged")
names = {k[0] for k in stored}
for n in ("hw.power", "hw.energy", "hw.gpu.utilization", "wattage_gpu_temperature_celsius"):
    if n not in names:
        problems.append(f"no {n} among the stored readings sent")
if not stored:
    problems.append("nothing was sent")
if problems:
    sys.exit("\n".join(problems[:10]))
print(f"# {npts} points, {len(stored)} readings of {len({k[2] for k in stored})} ticks arrived "
      f"as stored, {len(names)} metrics, {len(unsent)} after the cursor", file=sys.stderr)
PY
}
if check_points "$TMP/o.db" "$TMP/points.jsonl" node-o otlp:col 0 2>"$TMP/check.txt"; then
    ok "every stored reading arrived exactly once, as its OTLP point, none left after the stop ($(cat "$TMP/check.txt"))"
else
    not_ok "every stored reading arrived exactly once, none left after the stop" "$(head -8 "$TMP/check.txt")"
fi
check_ticks "the poll loop kept time across the receiver's outage" "$TMP/a.log" 20

# ---- a wrong token: refused, counted, retried (never dropped), logged once ----
: >"$TMP/points.jsonl"
start_peer
OPORT=$(cat "$TMP/peer.port")
sed -e "s|127.0.0.1:[0-9]*/v1|127.0.0.1:$OPORT/v1|" -e "s|$TMP/token|$TMP/wrong|" \
    "$TMP/o.yaml" >"$TMP/w.yaml"
PORT=$(free_port)
bg "$BIN" run -c "$TMP/w.yaml" --listen "127.0.0.1:$PORT" --db "$TMP/w.db" --interval 0.5 \
    2>"$TMP/b.log"
wpid=$!
wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
refused() { local a; a=$(omet "$PORT" wattage_otlp_auth_failures_total col); [[ -n $a && $a -ge 3 ]]; }
if wait_for 30 refused; then
    ok "a wrong token is refused and counted ($(omet "$PORT" wattage_otlp_auth_failures_total col) requests)"
else
    not_ok "a wrong token is refused and counted" "$(grep otlp "$TMP/b.log" | tail -3)"
fi
sent=$(omet "$PORT" wattage_otlp_samples_sent_total col)
dropped=$(omet "$PORT" wattage_otlp_samples_dropped_total col)
pending=$(omet "$PORT" wattage_otlp_samples_pending col)
check "nothing is sent or dropped, the samples stay pending (sent $sent, dropped $dropped, pending $pending)" \
    test "$sent" = 0 -a "$dropped" = 0 -a "${pending:-0}" != 0
check "the refusal is logged once, with the token's file" \
    test "$(grep -c "endpoint col: the receiver refuses the credentials with HTTP 401.*bearer_token_file $TMP/wrong" "$TMP/b.log")" = 1
stop_pid "$wpid"
stop_pid "$peer_pid"

# ---- a partial success: the rejected points are counted as dropped and logged, not retried ----
: >"$TMP/points.jsonl"
rm -f "$TMP/peer.port"
bg $PY "$PEER" "$TMP/peer.port" "$TMP/points.jsonl" --reject 3 2>>"$TMP/peer.log"
peer_pid=$!
wait_for 20 test -s "$TMP/peer.port"
sed -e "s|127.0.0.1:[0-9]*/v1|127.0.0.1:$(cat "$TMP/peer.port")/v1|" -e '/bearer_token_file/d' \
    -e '/headers:/d' "$TMP/o.yaml" >"$TMP/p.yaml"
PORT=$(free_port)
bg "$BIN" run -c "$TMP/p.yaml" --listen "127.0.0.1:$PORT" --db "$TMP/p.db" --interval 0.5 \
    2>"$TMP/p.log"
wpid=$!
wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
some_dropped() { local x; x=$(omet "$PORT" wattage_otlp_samples_dropped_total col); [[ -n $x && $x != 0 ]]; }
if wait_for 30 some_dropped; then
    ok "points a receiver rejects in a partial success count as dropped ($(omet "$PORT" wattage_otlp_samples_dropped_total col), sent $(omet "$PORT" wattage_otlp_samples_sent_total col))"
else
    not_ok "points a receiver rejects in a partial success count as dropped" "$(grep otlp "$TMP/p.log" | tail -3)"
fi
check "the rejection is logged with the receiver's reason" \
    grep -q "otlp: endpoint col: the receiver accepted the request but rejected 3 of its .* samples (not retried): the test rejects 3" "$TMP/p.log"
check "the dropped count is 3 per request" \
    $PY -c 'import sys, re; d = int(float(sys.argv[1])); sys.exit(0 if d > 0 and d % 3 == 0 else 1)' \
    "$(omet "$PORT" wattage_otlp_samples_dropped_total col)"
stop_pid "$wpid"
stop_pid "$peer_pid"

# ---- TLS: the receiver's certificate checked against tls.ca; another CA is refused ----
source "$(dirname "$0")/pki_lib.sh"
K=$TMP/pki
mkdir -p "$K"
if mkca ca "wattage test CA" && mkca other "another CA" &&
    mkcert server ca 127.0.0.1 "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth"; then
    : >"$TMP/points.jsonl"
    rm -f "$TMP/peer.port"
    bg $PY "$PEER" "$TMP/peer.port" "$TMP/points.jsonl" --tls "$K/server.pem" "$K/server.key" \
        2>>"$TMP/peer.log"
    peer_pid=$!
    wait_for 20 test -s "$TMP/peer.port"
    OPORT=$(cat "$TMP/peer.port")
    for ca in ca other; do
        cat >"$TMP/t-$ca.yaml" <<EOF
topology:
  node: node-o
store:
  flush_interval: 0.5s
otlp:
  - url: https://127.0.0.1:$OPORT/v1/metrics
    name: tls
    tls: {ca: $K/$ca.pem}
    deadline: 0.5s
    timeout: 2s
    max_backoff: 1s
EOF
        PORT=$(free_port)
        bg "$BIN" run -c "$TMP/t-$ca.yaml" --listen "127.0.0.1:$PORT" --db "$TMP/t-$ca.db" \
            --interval 0.5 2>"$TMP/t-$ca.log"
        wpid=$!
        wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
        if [[ $ca == ca ]]; then
            if wait_for 30 caught_up "$PORT" tls && grep -q '"metric": "hw.power"' "$TMP/points.jsonl"; then
                ok "over TLS, the receiver's certificate checked against tls.ca, the readings arrive"
            else
                not_ok "over TLS the readings arrive" "$(grep otlp "$TMP/t-$ca.log" | tail -3)"
            fi
        else
            failing() { local f; f=$(omet "$PORT" wattage_otlp_samples_failed_total tls); [[ -n $f && $f != 0 ]]; }
            if wait_for 20 failing && test "$(omet "$PORT" wattage_otlp_samples_sent_total tls)" = 0; then
                ok "a receiver whose certificate another CA signed is refused: attempts fail, nothing is sent"
            else
                not_ok "a receiver whose certificate another CA signed is refused" "$(grep otlp "$TMP/t-$ca.log" | tail -3)"
            fi
        fi
        stop_pid "$wpid"
    done
    stop_pid "$peer_pid"
else
    not_ok "openssl makes the test certificates"
fi
finish
