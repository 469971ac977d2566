#!/usr/bin/env bash
# End to end: the real daemon on the fake NVML, with an alert rule, delivering to the real
# Prometheus Alertmanager (Debian's prometheus-alertmanager, on a free loopback port, its own
# config and storage, no clustering), to a webhook and to an exec hook. Alertmanager is stopped
# while one alert resolves and another fires, then started again: both transitions arrive.
# Alertmanager's own receiver is a recording server (tests/peers/notify_recorder), so what it
# notifies (firing, resolved) is checked besides its API.
source "$(dirname "$0")/lib.sh"

AM=/usr/bin/prometheus-alertmanager
RECORDER=${WATTAGE_BUILD:-build}/tests/peers/notify_recorder
if [[ ! -x $AM ]]; then
    skip "alertmanager end to end" "$AM not installed (Debian package prometheus-alertmanager)"
    finish
fi

# The recorder prints the port it listens on.
start_recorder() { # OUT_FILE PORT_FILE [FAIL_FIRST]
    "$RECORDER" 0 "$1" ${3:-} >"$2" &
    T_PIDS="$T_PIDS $!"
    wait_for 10 test -s "$2"
}
start_recorder "$TMP/am-receiver.log" "$TMP/am-receiver.port"
RPORT=$(cat "$TMP/am-receiver.port")
start_recorder "$TMP/webhook.log" "$TMP/webhook.port" 1 # refuses the first request
WPORT=$(cat "$TMP/webhook.port")

APORT=$(free_port)
cat >"$TMP/am.yml" <<EOF
route:
  receiver: rec
  group_by: [alertname, gpu]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
- name: rec
  webhook_configs:
  - url: http://127.0.0.1:$RPORT/am-receiver
    send_resolved: true
EOF
AM_PID=
start_am() {
    "$AM" --config.file="$TMP/am.yml" --storage.path="$TMP/am-data" \
        --web.listen-address="127.0.0.1:$APORT" --cluster.listen-address= >>"$TMP/am.log" 2>&1 &
    AM_PID=$!
    T_PIDS="$T_PIDS $AM_PID"
    wait_for 30 curl -sf "http://127.0.0.1:$APORT/-/ready" -o /dev/null
}
stop_am() { kill "$AM_PID"; wait "$AM_PID" 2>/dev/null; }

# active ALERTNAME GPU: Alertmanager's API lists it as active
active() {
    curl -sf "http://127.0.0.1:$APORT/api/v2/alerts" | /usr/bin/python3 -c '
import json, sys
name, gpu = sys.argv[1], sys.argv[2]
alerts = json.load(sys.stdin)
sys.exit(0 if any(a["labels"].get("alertname") == name and a["labels"].get("gpu") == gpu
                  and a["status"]["state"] == "active" for a in alerts) else 1)' "$1" "$2"
}
# notified ALERTNAME GPU STATUS: Alertmanager told its receiver
notified() {
    /usr/bin/python3 -c '
import json, sys
name, gpu, status = sys.argv[1:4]
for line in open(sys.argv[4]):
    body = json.loads(line.split(" ", 1)[1])
    for a in body["alerts"]:
        if a["labels"].get("alertname") == name and a["labels"].get("gpu") == gpu \
           and a["status"] == status:
            sys.exit(0)
sys.exit(1)' "$1" "$2" "$3" "$TMP/am-receiver.log" 2>/dev/null
}

start_am
check "alertmanager is up on 127.0.0.1:$APORT" curl -sf "http://127.0.0.1:$APORT/-/ready" -o /dev/null

# GPU 0 reads 650 W from 3 s to 20 s after the fake's origin, GPU 1 from 23 s on.
T0=$(date +%s)
cat >"$TMP/w.yaml" <<EOF
alerts:
  detectors: {throttle_forecast: false, throttling: false, idle_burn: false, impossible: false,
              stuck: false, sibling: false, data_gap: false}
  rules:
    - name: GPUPowerHigh
      metric: wattage_gpu_power_watts
      op: ">"
      threshold: 600
      for: 1s
      severity: critical
      summary: "GPU {{labels.gpu}} draws {{value}} W"
  alertmanager:
    url: http://127.0.0.1:$APORT
    resend_interval: 2s
    timeout: 1s
  webhook:
    url: http://127.0.0.1:$WPORT/hook
  exec:
    command: "$PWD/tests/peers/notify_hook.sh '$TMP/hook.log'"
    timeout: 5s
EOF
PORT=$(free_port)
FAKE_NVML_T0=$T0 FAKE_NVML_GPUS=4 FAKE_NVML_POWER=300,0,0 \
    FAKE_NVML_POWER_READ=0:3:20:650,1:23:600:650 WATTAGE_NVML_LIBRARY=$FAKE_NVML \
    "$BIN" run -c "$TMP/w.yaml" --db "$TMP/x.db" --listen "127.0.0.1:$PORT" \
    >"$TMP/run.log" 2>&1 &
RUN_PID=$!
T_PIDS="$T_PIDS $RUN_PID"

if wait_for 30 active GPUPowerHigh 0; then ok "the firing alert is in Alertmanager's API"
else not_ok "the firing alert is in Alertmanager's API" "$(tail -5 "$TMP/run.log")"; fi
if wait_for 20 notified GPUPowerHigh 0 firing; then ok "Alertmanager notified it as firing"
else not_ok "Alertmanager notified it as firing"; fi
check "GPU 1 is not firing yet" bash -c "! grep -q 'firing alertname=GPUPowerHigh.*gpu=\"1\"' '$TMP/run.log'"

# Alertmanager goes away; meanwhile GPU 0's alert resolves and GPU 1's fires.
stop_am
if wait_for 40 grep -q 'resolved alertname=GPUPowerHigh.*gpu="0"' "$TMP/run.log" &&
    wait_for 20 grep -q 'firing alertname=GPUPowerHigh.*gpu="1"' "$TMP/run.log"; then
    ok "both transitions happened while Alertmanager was down"
else
    not_ok "both transitions happened while Alertmanager was down" "$(grep GPUPowerHigh "$TMP/run.log")"
fi
check "the daemon retried and said so" grep -q 'alertmanager: POST .* failed' "$TMP/run.log"
sleep 3 # a few more failed retries under backoff

start_am
if wait_for 30 notified GPUPowerHigh 0 resolved; then ok "after the restart Alertmanager got the resolution"
else not_ok "after the restart Alertmanager got the resolution" "$(cat "$TMP/am-receiver.log")"; fi
if wait_for 30 active GPUPowerHigh 1; then ok "and the alert that fired while it was down"
else not_ok "and the alert that fired while it was down"; fi
if ! active GPUPowerHigh 0 && active GPUPowerHigh 1; then ok "the resolved alert is not active"
else not_ok "the resolved alert is not active"; fi

# The webhook got each transition, in order, after refusing the first request.
wh_states() {
    /usr/bin/python3 -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line.split(" ", 1)[1])
    print(e["alertname"], e["labels"]["gpu"], e["state"])' "$TMP/webhook.log"
}
if wait_for 20 bash -c "[[ \$(wc -l <'$TMP/webhook.log') -ge 3 ]]"; then
    got=$(wh_states | tr '\n' ';')
    if [[ $got == "GPUPowerHigh 0 firing;GPUPowerHigh 0 resolved;GPUPowerHigh 1 firing;" ]]; then
        ok "the webhook got every transition in order"
    else not_ok "the webhook got every transition in order" "got: $got"; fi
else not_ok "the webhook got every transition in order" "$(cat "$TMP/webhook.log")"; fi

# The exec hook ran once per transition with the alert in its environment and on stdin.
if wait_for 10 bash -c "[[ \$(grep -c -- '--- call' '$TMP/hook.log') -ge 3 ]]"; then
    ok "the exec hook ran for each transition"
else not_ok "the exec hook ran for each transition" "$(cat "$TMP/hook.log" 2>&1)"; fi
check "the hook saw the alert's name, state and labels" bash -c \
    "grep -q '^WATTAGE_ALERT_NAME=GPUPowerHigh$' '$TMP/hook.log' &&
     grep -q '^WATTAGE_ALERT_STATE=resolved$' '$TMP/hook.log' &&
     grep -q '^WATTAGE_ALERT_SEVERITY=critical$' '$TMP/hook.log' &&
     grep -q '^WATTAGE_ALERT_LABELS=.*gpu=\"1\"' '$TMP/hook.log' &&
     grep -q '^WATTAGE_ALERT_SUMMARY=GPU 0 draws 650 W$' '$TMP/hook.log' &&
     grep -q '^stdin={\"alertname\":\"GPUPowerHigh\"' '$TMP/hook.log'"

kill -TERM "$RUN_PID"
wait "$RUN_PID"
check "the daemon stops cleanly (exit 0)" test $? -eq 0
check "no hook process is left behind" bash -c "! pgrep -f 'notify_hoo[k].sh' >/dev/null"
stop_am
finish
