#!/usr/bin/env bash
# Kafka into librdkafka's mock cluster (tests/peers/kafka_mock: the broker implementation shipped
# with librdkafka, idempotent producer included), read back by a consumer: every stored reading
# up to the cursor arrives exactly once with its exact time and value, one message per tick,
# keyed by the node; across a broker outage of KAFKA_OUTAGE_S seconds (default 20) nothing is
# missing or duplicated and the poll loop keeps time; a broker nobody listens on is logged and
# counted; two destinations stream each to its own cluster, and messages one cluster refuses for
# good (MSG_SIZE_TOO_LARGE) are dropped and counted, the only readings missing from its topic;
# check-config names the place of a bad kafka section. librdkafka is mapped only by a daemon with a
# kafka section, and one that cannot be loaded stops the start, naming the section.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
MOCK=${WATTAGE_KAFKA_MOCK:-build/tests/peers/kafka_mock}
OUTAGE=${KAFKA_OUTAGE_S:-20}

# ---- check-config ----
cfgerr() { # cfgerr NAME PATTERN YAML: check-config exits 2 and prints PATTERN
    local name=$1 pat=$2
    printf '%s\n' "$3" >"$TMP/bad.yaml"
    local out rc
    out=$("$BIN" check-config "$TMP/bad.yaml" 2>&1)
    rc=$?
    if [[ $rc -ne 0 ]] && grep -qE "$pat" <<<"$out"; then ok "check-config: $name"
    else not_ok "check-config: $name" "rc=$rc" "$out"; fi
}
cfgerr "a broker without a port, with file:line" "bad.yaml:3: kafka.brokers\[1\]: expected HOST:PORT" \
'kafka:
  brokers: [a:9092,
    b]
  topic: t'
cfgerr "brokers missing" "bad.yaml:2: kafka.brokers: required" \
'kafka:
  topic: t'
cfgerr "a comma string with a bad port" "bad.yaml:2: kafka.brokers: expected HOST:PORT \(got \"b:99999\"\)" \
'kafka:
  brokers: "a:9092,b:99999"
  topic: t'
cfgerr "a topic with a blank" "bad.yaml:3: kafka.topic: a topic name holds" \
'kafka:
  brokers: a:9092
  topic: "my topic"'
cfgerr "an unknown key" "bad.yaml:4: kafka.linger: unknown key" \
'kafka:
  brokers: a:9092
  topic: t
  linger: 5ms'
cfgerr "a SASL mechanism it does not know" "bad.yaml:5: kafka.sasl.mechanism" \
'kafka:
  brokers: a:9092
  topic: t
  sasl:
    mechanism: GSSAPI
    username: u
    password_file: /nonexistent'
cfgerr "a bad selector" "bad.yaml:5: kafka.match\[0\]" \
'kafka:
  brokers: a:9092
  topic: t
  match:
    - "wattage_gpu_*{gpu=0}"'
cfgerr "a deadline of 1ns" "bad.yaml:4: kafka.deadline" \
'kafka:
  brokers: a:9092
  topic: t
  deadline: 1ns'
cfgerr "tls cert without key" "bad.yaml:4: kafka.tls: cert and key go together" \
'kafka:
  brokers: a:9092
  topic: t
  tls: {cert: c.pem}'
printf 'secret\n' >"$TMP/pw"
chmod 600 "$TMP/pw"
printf 'kafka:\n  brokers: [a:9092, b:9093]\n  topic: wattage.gpu\n  sasl: {mechanism: SCRAM-SHA-512, username: u, password_file: %s}\n' "$TMP/pw" >"$TMP/good.yaml"
check "check-config accepts a full kafka section" "$BIN" check-config "$TMP/good.yaml"
chmod 644 "$TMP/pw"
out=$("$BIN" check-config "$TMP/good.yaml" 2>&1)
if [[ $? -ne 0 ]] && grep -q "kafka.sasl.password_file: $TMP/pw is accessible by group or others" <<<"$out"; then
    ok "check-config refuses a group- or world-readable SASL password file"
else
    not_ok "check-config refuses a group- or world-readable SASL password file" "$out"
fi

# ---- a SASL password file others may read stops the start ----
printf 'kafka:\n  brokers: 127.0.0.1:1\n  topic: t\n  sasl: {mechanism: PLAIN, username: u, password_file: %s}\n' "$TMP/pw" >"$TMP/pw.yaml"
out=$(timeout 20 "$BIN" run -c "$TMP/pw.yaml" --listen "127.0.0.1:$(free_port)" --db "$TMP/pw.db" 2>&1)
if [[ $? -ne 0 ]] && grep -q "kafka.sasl.password_file: $TMP/pw is accessible by group or others" <<<"$out"; then
    ok "a group- or world-readable SASL password file stops the start, named"
else
    not_ok "a group- or world-readable SASL password file stops the start, named" "$out"
fi

if [[ ! -x $MOCK ]]; then
    skip "Kafka against librdkafka's mock cluster" "$MOCK is missing (librdkafka-dev: scripts/deps.sh)"
    finish
fi

mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2

# ---- librdkafka is loaded only for a kafka section (dlopen, serve/kafka_lib.c) ----
maps_rdkafka() { grep -q 'librdkafka' "/proc/$1/maps"; } # maps_rdkafka PID
printf 'topology:\n  node: node-n\n' >"$TMP/none.yaml"
PORT=$(free_port)
bg "$BIN" run -c "$TMP/none.yaml" --listen "127.0.0.1:$PORT" --db "$TMP/none.db" --interval 0.5 \
    2>"$TMP/none.log"
npid=$!
if wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null; then
    if maps_rdkafka "$npid"; then
        not_ok "a daemon without a kafka section does not map librdkafka" \
            "$(grep rdkafka "/proc/$npid/maps" | head -3)"
    else
        ok "a daemon without a kafka section does not map librdkafka"
    fi
else
    not_ok "a daemon without a kafka section does not map librdkafka" "$(tail -5 "$TMP/none.log")"
fi
kill "$npid" 2>/dev/null
wait "$npid" 2>/dev/null
printf 'kafka:\n  brokers: 127.0.0.1:1\n  topic: t\n  name: k0\n' >"$TMP/nolib.yaml"
out=$(WATTAGE_RDKAFKA_LIBRARY=$TMP/missing/librdkafka.so.1 timeout 20 \
    "$BIN" run -c "$TMP/nolib.yaml" --listen "127.0.0.1:$(free_port)" --db "$TMP/nolib.db" 2>&1)
if [[ $? -ne 0 ]] && grep -q "kafka (k0): cannot load librdkafka (.*missing/librdkafka.so.1" <<<"$out"; then
    ok "a librdkafka that cannot be loaded stops the start, naming the section"
else
    not_ok "a librdkafka that cannot be loaded stops the start, naming the section" "$(tail -3 <<<"$out")"
fi

kmetric() { # kmetric PORT NAME ENDPOINT
    curl -s "http://127.0.0.1:$1/metrics" | awk -v n="$2{endpoint=\"$3\"}" '$1 == n { print $2 }'
}
caught_up() {
    local p s
    p=$(kmetric "$1" wattage_kafka_pending_samples "$2")
    s=$(kmetric "$1" wattage_kafka_samples_sent_total "$2")
    [[ $p == 0 && -n $s && $s != 0 ]]
}
stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

bg "$MOCK" "$TMP/boot" wattage "$TMP/topic.jsonl" 2>"$TMP/mock.log"
mock_pid=$!
if ! wait_for 20 test -s "$TMP/boot"; then
    not_ok "the mock cluster starts" "$(tail -5 "$TMP/mock.log")"
    finish
fi
BOOT=$(cat "$TMP/boot")
cat >"$TMP/k.yaml" <<EOF
daemon:
  stop_deadline: 5s
topology:
  node: node-k
store:
  flush_interval: 0.5s
kafka:
  brokers: $BOOT
  topic: wattage
  name: k1
  deadline: 0.5s
  timeout: 120s
  max_backoff: 1s
EOF
PORT=$(free_port)
bg "$BIN" run -c "$TMP/k.yaml" --listen "127.0.0.1:$PORT" --db "$TMP/k.db" --interval 0.5 \
    --log-level debug 2>"$TMP/a.log"
wpid=$!
wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
if wait_for 30 caught_up "$PORT" k1; then
    ok "the daemon streams its readings to the Kafka topic"
    check "a daemon with a kafka section maps librdkafka" maps_rdkafka "$wpid"
else
    not_ok "the daemon streams its readings to the Kafka topic" "$(grep kafka "$TMP/a.log" | tail -5)"
    finish
fi
sleep 3
kill -USR1 "$mock_pid"
sleep "$OUTAGE"
pending=$(kmetric "$PORT" wattage_kafka_pending_samples k1)
lag=$(kmetric "$PORT" wattage_kafka_lag_seconds k1)
check "while the broker is down readings stay pending ($pending, lag ${lag}s)" \
    $PY -c 'import sys; p, l, o = map(float, sys.argv[1:4]); sys.exit(0 if p > 0 and l >= o - 5 else 1)' \
    "${pending:-0}" "${lag:-0}" "$OUTAGE"
kill -USR2 "$mock_pid"
if wait_for 60 caught_up "$PORT" k1; then
    ok "after $OUTAGE s down the backlog is delivered"
else
    not_ok "after $OUTAGE s down the backlog is delivered" "$(grep kafka "$TMP/a.log" | tail -5)"
fi
check "the broker outage was logged" grep -q "kafka: destination k1: brokers=$BOOT" "$TMP/a.log"
stop_pid "$wpid"
sleep 2 # the consumer's last fetch
stop_pid "$mock_pid"
# at SIGTERM the store's last flush is produced before the daemon exits (daemon.stop_deadline)
check "the stop produced what the last flush stored, nothing left" \
    grep -Eq "info  kafka: at stop: sent [0-9]+ samples in [0-9.]+ s, 0 left for the next start" "$TMP/a.log"

# check_topic DB JSONL NODE CURSOR MAX_UNSENT [MAX_TWICE] [DROPPED]: every stored reading up to
# the cursor is on the topic with its exact time and value (but exactly DROPPED of them, default
# 0: those the brokers refused for good), nothing else is; at most MAX_UNSENT readings of a series
# lie after its cursor; at most MAX_TWICE readings (default 0) are on the topic twice.
check_topic() {
    $PY - "$@" <<'PY'
import collections, json, re, sqlite3, sys
sys.path.insert(0, "tests/cli")
from stored import readings as stored_readings
db, path, node, endpoint, max_unsent = sys.argv[1:6]
max_twice = int(sys.argv[6]) if len(sys.argv) > 6 else 0
dropped = int(sys.argv[7]) if len(sys.argv) > 7 else 0
pair = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
def unescape(v):
    return re.sub(r'\\(.)', lambda m: "\n" if m.group(1) == "n" else m.group(1), v)
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
since = con.execute("SELECT since_ns FROM remote_write_endpoints WHERE name=?", (endpoint,)).fetchone()
assert since, f"no cursor {endpoint} in the store"
since = since[0]
cursors = dict(con.execute("SELECT series, t FROM remote_write_cursors WHERE endpoint=?", (endpoint,)))
readings = stored_readings(db, since)
stored, unsent = {}, {}
for sid, metric, labels in con.execute("SELECT id, metric, labels FROM series WHERE node=''"):
    lab = tuple(sorted((k, unescape(v)) for k, v in pair.findall(labels)))
    cur = cursors.get(sid, since)
    for t, v in readings[sid]:
        (stored if t <= cur else unsent)[(metric, lab, t)] = v
problems, seen_off, got, times = [], set(), {}, []
nmsg = twice = 0
for line in open(path):
    m = json.loads(line)
    off = (m["partition"], m["offset"])
    if off in seen_off:
        continue  # the consumer read it twice; the topic holds it once
    seen_off.add(off)
    nmsg += 1
    v = m["value"]
    if m["key"] != node or v["node"] != node:
        problems.append(f"message {off}: key {m['key']!r}, node {v['node']!r}, expected {node!r}")
    sec, _, frac = v["time"].partition(".")
    if len(frac) != 9:
        problems.append(f"message {off}: time {v['time']!r} is not seconds with 9 decimals")
    t = int(sec) * 1000000000 + int(frac)
    times.append(t)
    for r in v["readings"]:
        k = (r["metric"], tuple(sorted(r["labels"].items())), t)
        if k in got:
            twice += 1
            if twice > max_twice:
                problems.append(f"twice on the topic: {k}")
        got[k] = r["value"]
if len(set(times)) != len(times) and not max_twice:
    problems.append(f"{len(times) - len(set(times))} ticks went out in more than one message")
missing = [k for k in stored if k not in got]
wrong = [k for k in stored if k in got and got[k] != stored[k]]
extra = [k for k in got if k not in stored and k not in unsent]
if len(missing) != dropped:
    problems.append(f"{len(missing)} stored readings up to the cursor are not on the topic "
                    f"({dropped} dropped): {missing[:3]}")
if wrong:
    problems.append(f"{len(wrong)} readings arrived with another value: {wrong[:3]}")
if extra:
    problems.append(f"{len(extra)} readings on the topic the store does not have: {extra[:3]}")
ticks = {k[2] for k in stored}
per_series = collections.Counter(k[:2] for k in unsent)
if per_series and max(per_series.values()) > int(max_unsent):
    problems.append(f"{max(per_series.values())} readings of a series were never acknowledged "
                    f"(at most {max_unsent})")
if not stored:
    problems.append("nothing was sent")
if problems:
    sys.exit("\n".join(problems[:10]))
print(f"# {nmsg} messages, {len(stored) - len(missing)} readings of {len(ticks)} ticks arrived "
      f"as stored, {len(missing)} dropped, {twice} twice, {len(unsent)} after the cursor",
      file=sys.stderr)
PY
}
if check_topic "$TMP/k.db" "$TMP/topic.jsonl" node-k kafka:k1 0 2>"$TMP/check.txt"; then
    ok "every stored reading is on the topic exactly once, none left after the stop, one message per tick keyed by the node ($(cat "$TMP/check.txt"))"
else
    not_ok "every stored reading up to the cursor is on the topic exactly once" "$(head -5 "$TMP/check.txt")"
fi
check_ticks "the poll loop kept time across the broker outage" "$TMP/a.log" 20

# ---- a daemon killed (SIGKILL) while streaming: the next start resends at most the batch in
# flight (delivered, cursor not yet committed); nothing is lost ----
bg "$MOCK" "$TMP/boot2" wattage "$TMP/topic2.jsonl" 2>"$TMP/mock2.log"
mock_pid=$!
wait_for 20 test -s "$TMP/boot2"
sed "s/brokers: .*/brokers: $(cat "$TMP/boot2")/; s/name: k1/name: k2/" "$TMP/k.yaml" >"$TMP/k2.yaml"
PORT=$(free_port)
bg "$BIN" run -c "$TMP/k2.yaml" --listen "127.0.0.1:$PORT" --db "$TMP/k2.db" --interval 0.5 \
    --log-level debug 2>"$TMP/c.log"
wpid=$!
wait_for 30 caught_up "$PORT" k2
sleep 2.3
kill -KILL "$wpid"
wait "$wpid" 2>/dev/null
bg "$BIN" run -c "$TMP/k2.yaml" --listen "127.0.0.1:$PORT" --db "$TMP/k2.db" --interval 0.5 \
    --log-level debug 2>"$TMP/d.log"
wpid=$!
wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
wait_for 30 caught_up "$PORT" k2
sleep 1
stop_pid "$wpid"
sleep 2
stop_pid "$mock_pid"
if check_topic "$TMP/k2.db" "$TMP/topic2.jsonl" node-k kafka:k2 8 5000 2>"$TMP/check2.txt"; then
    ok "after a SIGKILL nothing is lost, at most one batch twice ($(cat "$TMP/check2.txt"))"
else
    not_ok "after a SIGKILL nothing is lost, at most one batch twice" "$(head -5 "$TMP/check2.txt")"
fi

# ---- an outage longer than timeout: the deliveries fail, are counted, and the sender produces
# the same readings again from the store once the broker is back; nothing is lost ----
bg "$MOCK" "$TMP/boot3" wattage "$TMP/topic3.jsonl" 2>"$TMP/mock3.log"
mock_pid=$!
wait_for 20 test -s "$TMP/boot3"
sed "s/brokers: .*/brokers: $(cat "$TMP/boot3")/; s/name: k1/name: k3/; s/timeout: .*/timeout: 2s/" \
    "$TMP/k.yaml" >"$TMP/k3.yaml"
PORT=$(free_port)
bg "$BIN" run -c "$TMP/k3.yaml" --listen "127.0.0.1:$PORT" --db "$TMP/k3.db" --interval 0.5 \
    --log-level debug 2>"$TMP/e.log"
wpid=$!
wait_for 30 caught_up "$PORT" k3
kill -USR1 "$mock_pid"
sleep 8
failed=$(kmetric "$PORT" wattage_kafka_messages_failed_total k3)
check "deliveries that outlast timeout fail and are counted ($failed)" test "${failed:-0}" != 0
kill -USR2 "$mock_pid"
wait_for 60 caught_up "$PORT" k3
check "the failed readings are produced again once the broker is back" \
    grep -q "kafka: destination k3: delivering again after" "$TMP/e.log"
stop_pid "$wpid"
sleep 2
stop_pid "$mock_pid"
if check_topic "$TMP/k3.db" "$TMP/topic3.jsonl" node-k kafka:k3 8 5000 2>"$TMP/check3.txt"; then
    ok "after failed deliveries nothing is lost ($(cat "$TMP/check3.txt"))"
else
    not_ok "after failed deliveries nothing is lost" "$(head -5 "$TMP/check3.txt")"
fi
check_ticks "the poll loop kept time while deliveries failed" "$TMP/e.log" 16

# ---- two destinations (two clusters), each with its own cursor; the brokers of one refuse two
# produce requests for good: those messages are dropped (logged, counted), the rest go on ----
bg "$MOCK" "$TMP/boot4" wattage "$TMP/topic4.jsonl" 2>"$TMP/mock4.log"
mock4=$!
bg "$MOCK" "$TMP/boot5" wattage "$TMP/topic5.jsonl" 2>"$TMP/mock5.log"
mock5=$!
wait_for 20 test -s "$TMP/boot4" && wait_for 20 test -s "$TMP/boot5"
cat >"$TMP/k4.yaml" <<EOF
topology:
  node: node-k
store:
  flush_interval: 0.5s
kafka:
  - brokers: $(cat "$TMP/boot4")
    topic: wattage
    name: k4a
    deadline: 0.5s
    max_backoff: 1s
  - brokers: $(cat "$TMP/boot5")
    topic: wattage
    name: k4b
    deadline: 0.5s
    max_backoff: 1s
EOF
PORT=$(free_port)
bg "$BIN" run -c "$TMP/k4.yaml" --listen "127.0.0.1:$PORT" --db "$TMP/k4.db" --interval 0.5 \
    --log-level debug 2>"$TMP/f.log"
wpid=$!
wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
if wait_for 30 caught_up "$PORT" k4a && wait_for 30 caught_up "$PORT" k4b; then
    ok "a list of destinations: each streams to its own cluster"
else
    not_ok "a list of destinations: each streams to its own cluster" "$(grep kafka "$TMP/f.log" | tail -5)"
fi
kill -HUP "$mock4"
dropped_some() { local d; d=$(kmetric "$PORT" wattage_kafka_messages_dropped_total k4a); [[ -n $d && $d != 0 ]]; }
if wait_for 20 dropped_some; then
    ok "messages the brokers refuse for good are dropped and counted ($(kmetric "$PORT" wattage_kafka_messages_dropped_total k4a) messages, $(kmetric "$PORT" wattage_kafka_samples_dropped_total k4a) readings)"
else
    not_ok "messages the brokers refuse for good are dropped and counted" "$(grep kafka "$TMP/f.log" | tail -5)"
fi
sleep 2
wait_for 30 caught_up "$PORT" k4a
wait_for 30 caught_up "$PORT" k4b
ndrop=$(kmetric "$PORT" wattage_kafka_samples_dropped_total k4a)
check "the other destination dropped nothing" test "$(kmetric "$PORT" wattage_kafka_messages_dropped_total k4b)" = 0
check "the drop is logged once, with the broker's reason" \
    test "$(grep -c "kafka: destination k4a: the brokers refused .* for good (MSG_SIZE_TOO_LARGE" "$TMP/f.log")" = 1
stop_pid "$wpid"
sleep 2
stop_pid "$mock4"
stop_pid "$mock5"
if check_topic "$TMP/k4.db" "$TMP/topic4.jsonl" node-k kafka:k4a 8 0 "${ndrop:-0}" 2>"$TMP/check4.txt"; then
    ok "after the drop every other reading is on the topic exactly once, the dropped ones not at all ($(cat "$TMP/check4.txt"))"
else
    not_ok "after the drop every other reading is on the topic exactly once" "$(head -5 "$TMP/check4.txt")"
fi
if check_topic "$TMP/k4.db" "$TMP/topic5.jsonl" node-k kafka:k4b 8 2>"$TMP/check5.txt"; then
    ok "the second destination's topic holds every reading up to its cursor once ($(cat "$TMP/check5.txt"))"
else
    not_ok "the second destination's topic holds every reading up to its cursor once" "$(head -5 "$TMP/check5.txt")"
fi

# ---- a broker nobody listens on ----
DEAD=$(free_port)
cat >"$TMP/bad.yaml" <<EOF
topology:
  node: node-k
store:
  flush_interval: 0.5s
kafka:
  brokers: 127.0.0.1:$DEAD
  topic: wattage
  name: dead
  deadline: 0.5s
  timeout: 2s
  max_backoff: 1s
EOF
PORT=$(free_port)
bg "$BIN" run -c "$TMP/bad.yaml" --listen "127.0.0.1:$PORT" --db "$TMP/bad.db" --interval 0.5 \
    --log-level debug 2>"$TMP/b.log"
wpid=$!
wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
failed_some() { local f; f=$(kmetric "$PORT" wattage_kafka_messages_failed_total dead); [[ -n $f && $f != 0 ]]; }
if wait_for 20 failed_some; then
    ok "messages to a broker nobody listens on fail and are counted ($(kmetric "$PORT" wattage_kafka_messages_failed_total dead))"
else
    not_ok "messages to a broker nobody listens on fail and are counted" "$(grep kafka "$TMP/b.log" | tail -5)"
fi
sleep 3
check "the dead broker is named in a log line" \
    grep -qE "kafka: destination dead: brokers=127.0.0.1:$DEAD: .*(refused|down)" "$TMP/b.log"
check "the undelivered messages are logged, to be sent again" \
    grep -q "kafka: destination dead: .* messages not delivered (_MSG_TIMED_OUT" "$TMP/b.log"
check "nothing was acknowledged: sent is 0" test "$(kmetric "$PORT" wattage_kafka_messages_sent_total dead)" = 0
stop_pid "$wpid"
check_ticks "the poll loop kept time with a dead broker" "$TMP/b.log" 10

# ---- the broker goes down before a stop: the reports never come, yet the daemon stops within
# daemon.stop_deadline (2 s) and a margin, by its own log; the next start produces the rest ----
bg "$MOCK" "$TMP/boot6" wattage "$TMP/topic6.jsonl" 2>"$TMP/mock6.log"
mock_pid=$!
wait_for 20 test -s "$TMP/boot6"
sed "s/brokers: .*/brokers: $(cat "$TMP/boot6")/; s/name: k1/name: k6/; s/stop_deadline: 5s/stop_deadline: 2s/" \
    "$TMP/k.yaml" >"$TMP/k6.yaml"
PORT=$(free_port)
bg "$BIN" run -c "$TMP/k6.yaml" --listen "127.0.0.1:$PORT" --db "$TMP/k6.db" --interval 0.5 \
    --log-level debug 2>"$TMP/g.log"
wpid=$!
wait_for 30 caught_up "$PORT" k6
kill -USR1 "$mock_pid"
sleep 3
stop_pid "$wpid"
took=$($PY - "$TMP/g.log" <<'PY'
import datetime, re, sys
t = {}
for line in open(sys.argv[1]):
    m = re.match(r'(\S+)Z info  run: (stopping on SIGTERM|stopped)$', line.rstrip())
    if m:
        t[m.group(2)] = datetime.datetime.fromisoformat(m.group(1)).timestamp()
print(round(t["stopped"] - t["stopping on SIGTERM"], 3))
PY
)
check "with the broker down the stop takes the 2-s deadline and a margin at most (${took:-?} s by its log)" \
    $PY -c 'import sys; sys.exit(0 if 0 <= float(sys.argv[1]) <= 2 + 3 else 1)' "${took:--1}"
check "the stop logs what is left for the next start" \
    grep -Eq "info  kafka: at stop: sent [0-9]+ samples in [0-9.]+ s, [1-9][0-9]* left for the next start \(daemon.stop_deadline 2 s\)" "$TMP/g.log"
kill -USR2 "$mock_pid"
bg "$BIN" run -c "$TMP/k6.yaml" --listen "127.0.0.1:$PORT" --db "$TMP/k6.db" --interval 0.5 \
    --log-level debug 2>"$TMP/h.log"
wpid=$!
wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
wait_for 60 caught_up "$PORT" k6
stop_pid "$wpid"
sleep 2 # the consumer's last fetch
stop_pid "$mock_pid"
if check_topic "$TMP/k6.db" "$TMP/topic6.jsonl" node-k kafka:k6 0 5000 2>"$TMP/check6.txt"; then
    ok "the next start produced what the stop left, nothing lost ($(cat "$TMP/check6.txt"))"
else
    not_ok "the next start produced what the stop left, nothing lost" "$(head -5 "$TMP/check6.txt")"
fi
finish
