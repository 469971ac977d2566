#!/usr/bin/env bash
# End to end: the real daemon on the fake NVML with a rule that flaps five times (firing, then
# resolved, 5 x) while its webhook answers 503 for about 20 s; an exec hook whose first run
# hangs as long runs beside it, so that every later transition waits in its queue. Once the webhook answers again it gets every transition, in order,
# and ends in the engine's state; the exec hook ran each one in order too. Meanwhile /metrics
# shows the failing delivery (failed, queued, the oldest's age) and the built-in alert
# WattageAlertDeliveryFailing fires (log, wattage_alerts, GET /api/v1/alerts); it resolves
# once delivery succeeds, and the counters say so.
source "$(dirname "$0")/lib.sh"

RECORDER=${WATTAGE_BUILD:-build}/tests/peers/notify_recorder
"$RECORDER" 0 "$TMP/webhook.log" >"$TMP/webhook.port" &
REC_PID=$!
T_PIDS="$T_PIDS $REC_PID"
wait_for 10 test -s "$TMP/webhook.port"
WPORT=$(cat "$TMP/webhook.port")
kill -USR1 "$REC_PID" # down: every POST answered 503
sleep 0.2

touch "$TMP/hold" # the exec hook waits while this file exists

# GPU 0 reads 650 W in [2,4), [6,8), [10,12), [14,16), [18,20) s after the fake's origin, its
# nvmlInit in the daemon (no FAKE_NVML_T0: a whole second taken before the daemon started, up to
# a second early and as late as a loaded machine starts it, left the first window before its
# first poll, and the rule flapped four times)
cat >"$TMP/w.yaml" <<EOF
alerts:
  detectors: {throttle_forecast: false, throttling: false, idle_burn: false, impossible: false,
              stuck: false, sibling: false, data_gap: false, delivery_failing: {for: 3s}}
  rules:
    - name: GPUPowerHigh
      metric: wattage_gpu_power_watts
      match: {gpu: "0"}
      op: ">"
      threshold: 600
      for: 0s
  webhook:
    url: http://127.0.0.1:$WPORT/hook
    timeout: 2s
  exec:
    command: "/bin/sh -c 'while [ -e \"\$2\" ]; do sleep 0.1; done; echo \"\$WATTAGE_ALERT_NAME \$WATTAGE_ALERT_STATE\" >>\"\$1\"' hook '$TMP/hook.log' '$TMP/hold'"
    timeout: 120s
  delivery: {queue_limit: 64}
EOF
PORT=$(free_port)
FAKE_NVML_GPUS=2 FAKE_NVML_POWER=300,0,0 \
    FAKE_NVML_POWER_READ=0:2:4:650,0:6:8:650,0:10:12:650,0:14:16:650,0:18:20:650 \
    WATTAGE_NVML_LIBRARY=$FAKE_NVML \
    "$BIN" run -c "$TMP/w.yaml" --db "$TMP/x.db" --listen "127.0.0.1:$PORT" --interval 0.25 \
    >"$TMP/run.log" 2>&1 &
RUN_PID=$!
T_PIDS="$T_PIDS $RUN_PID"

# metric NAME LABELS: the sample's value on /metrics ("" when absent)
metric() {
    curl -sf "http://127.0.0.1:$PORT/metrics" | awk -v want="$1{$2}" '$1 == want { print $2 }'
}
# api_state NAME [LABEL=VALUE]: the state GET /api/v1/alerts gives the alert (its latest entry)
api_state() {
    curl -sf "http://127.0.0.1:$PORT/api/v1/alerts" | /usr/bin/python3 -c '
import json, sys
name = sys.argv[1]
want = dict(kv.split("=", 1) for kv in sys.argv[2:])
for a in json.load(sys.stdin)["alerts"]:
    if a["alertname"] == name and all(a["labels"].get(k) == v for k, v in want.items()):
        print(a["state"]); break' "$@"
}
# wh_states NAME, hook_states NAME: the states the webhook, the exec hook got for NAME (F, R)
wh_states() {
    /usr/bin/python3 -c '
import json, sys
out = ""
for line in open(sys.argv[1]):
    e = json.loads(line.split(" ", 1)[1])
    if e["alertname"] == sys.argv[2]:
        out += e["state"][0].upper()
print(out)' "$TMP/webhook.log" "$1" 2>/dev/null
}
hook_states() { awk -v n="$1" '$1 == n { printf "%s", toupper(substr($2, 1, 1)) }' "$TMP/hook.log"; }

if wait_for 40 bash -c "[[ \$(grep -c 'resolved alertname=GPUPowerHigh' '$TMP/run.log') -ge 5 ]]"; then
    ok "the rule flapped five times while the webhook was down"
else
    not_ok "the rule flapped five times while the webhook was down" "$(grep -E 'GPUPowerHigh|error' "$TMP/run.log" | tail -12)"
fi
check "the engine says it is resolved now" test "$(api_state GPUPowerHigh)" = resolved
check "the webhook received nothing yet" test ! -s "$TMP/webhook.log"

# Delivery health while the webhook is down.
failed=$(metric wattage_alert_notifications_failed_total 'channel="webhook"')
queued=$(metric wattage_alert_notifications_queued 'channel="webhook"')
oldest=$(metric wattage_alert_notification_oldest_pending_seconds 'channel="webhook"')
sent=$(metric wattage_alert_notifications_sent_total 'channel="webhook"')
if [[ -n $failed && $failed -ge 3 && -n $queued && $queued -ge 10 && $sent == 0 ]] &&
    /usr/bin/python3 -c "import sys; sys.exit(0 if float('$oldest') >= 15 else 1)"; then
    ok "/metrics: the webhook failing, transitions queued, the oldest waiting for long"
else
    not_ok "/metrics: the webhook failing, transitions queued, the oldest waiting for long" \
        "failed=$failed queued=$queued oldest=$oldest sent=$sent"
fi
check "/metrics: the exec hook is delivering" \
    test "$(metric wattage_alert_notifications_failed_total 'channel="exec"')" = 0
check "/metrics: nothing dropped" \
    test "$(metric wattage_alert_notifications_dropped_total 'channel="webhook"')" = 0

# The built-in alert, visible where it can be while the webhook fails.
check "WattageAlertDeliveryFailing fired (log)" \
    grep -q 'firing alertname=WattageAlertDeliveryFailing severity=critical labels={channel="webhook"}' "$TMP/run.log"
check "WattageAlertDeliveryFailing firing in GET /api/v1/alerts" \
    test "$(api_state WattageAlertDeliveryFailing channel=webhook)" = firing
check "WattageAlertDeliveryFailing on /metrics" \
    test "$(metric wattage_alerts 'alertname="WattageAlertDeliveryFailing",severity="critical",channel="webhook"')" = 1
check "the exec channel is not reported failing" \
    bash -c "! grep -q 'alertname=WattageAlertDeliveryFailing.*channel=\"exec\"' '$TMP/run.log'"
check "/metrics: the exec hook's transitions wait behind the hung one" \
    test "$(metric wattage_alert_notifications_queued 'channel="exec"')" -ge 10

kill -USR2 "$REC_PID" # the webhook answers again
rm -f "$TMP/hold"    # and the exec hook goes on
if wait_for 60 bash -c "[[ \$(grep -c GPUPowerHigh '$TMP/webhook.log') -ge 10 ]]"; then
    ok "after the outage the webhook got every transition"
else not_ok "after the outage the webhook got every transition" "$(cat "$TMP/webhook.log" 2>&1)"; fi
got=$(wh_states GPUPowerHigh)
check "in order: firing, resolved, five times (got $got)" test "$got" = FRFRFRFRFR
check "its final state is the engine's" test "${got: -1}" = R -a "$(api_state GPUPowerHigh)" = resolved

if wait_for 30 grep -q 'resolved alertname=WattageAlertDeliveryFailing' "$TMP/run.log"; then
    ok "WattageAlertDeliveryFailing resolved once delivery succeeded"
else not_ok "WattageAlertDeliveryFailing resolved once delivery succeeded"; fi
wait_for 20 bash -c "[[ \$(grep -c WattageAlertDeliveryFailing '$TMP/webhook.log') -ge 2 ]]"
check "the webhook got the built-in alert firing then resolved" \
    test "$(wh_states WattageAlertDeliveryFailing)" = FR
wait_for 20 bash -c "[[ \$(curl -sf 'http://127.0.0.1:$PORT/metrics' | awk '\$1 == \"wattage_alert_notifications_queued{channel=\\\"webhook\\\"}\" {print \$2}') == 0 ]]"
check "/metrics after recovery: nothing queued" \
    test "$(metric wattage_alert_notifications_queued 'channel="webhook"')" = 0
check "/metrics after recovery: the oldest pending is 0" \
    test "$(metric wattage_alert_notification_oldest_pending_seconds 'channel="webhook"')" = 0
check "/metrics after recovery: 12 sent (10 transitions, the built-in alert's 2)" \
    test "$(metric wattage_alert_notifications_sent_total 'channel="webhook"')" = 12

# The exec hook, slower than the flapping, ran every transition in order.
wait_for 30 bash -c "[[ \$(grep -c GPUPowerHigh '$TMP/hook.log') -ge 10 ]]"
got=$(hook_states GPUPowerHigh)
check "the exec hook ran every transition in order (got $got)" test "$got" = FRFRFRFRFR

kill -TERM "$RUN_PID"
wait "$RUN_PID"
check "the daemon stops cleanly (exit 0)" test $? -eq 0
finish
