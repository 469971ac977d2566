#!/usr/bin/env bash
# The alert engine in the real daemon on the fake NVML, four daemons side by side:
#  - a GPU heating at 1 °C/s fires GPUThrottleForecast at least 30 s of the fake's time before
#    it reaches its slowdown threshold, and before the fake reports a thermal throttle reason
#    (which then fires GPUThrottling, naming it);
#  - an idle GPU drawing 400 W fires GPUIdleBurn (wattage_alerts on /metrics, kWh in the
#    summary) and resolves when its load returns;
#  - a stuck power sensor and an impossible power reading fire, the other GPUs stay quiet;
#  - a lost GPU fires WattageDataGap while the others stay quiet; a SIGHUP adds a rule and keeps
#    the data gap firing;
# and check-config names file:line for a bad rule.
. tests/cli/lib.sh
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc WATTAGE_NVML_LIBRARY=$FAKE_NVML

# q PORT EXPR: EXPR (Python) over the alerts of GET /api/v1/alerts; has(name, state, **labels)
# lists the matching alerts.
cat >"$TMP/q.py" <<'PY'
import json, sys, urllib.request
port, expr = sys.argv[1], sys.argv[2]
d = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/alerts", timeout=2))
A = d["alerts"]
def has(name, state="firing", **labels):
    return [a for a in A if a["alertname"] == name and a["state"] == state
            and all(a["labels"].get(k) == v for k, v in labels.items())]
def ts(s):  # RFC 3339 with milliseconds, UTC
    import datetime
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
r = eval(expr)
if not r:
    print(json.dumps(A, indent=1), file=sys.stderr)
sys.exit(0 if r else 1)
PY
q() { python3 "$TMP/q.py" "$@"; }
now() { python3 -c 'import time; print(repr(time.time()))'; }

# start NAME CONFIG ENV...: a daemon at 0.2 s with its own store, port and log; PORT_NAME set
start() {
    local name=$1 conf=$2
    shift 2
    local port
    port=$(free_port)
    printf -v "PORT_$name" %s "$port"
    printf '%s' "$conf" >"$TMP/$name.yaml"
    # shellcheck disable=SC2086 # RUN_ARGS: extra options, split on purpose
    env "$@" "$BIN" run -c "$TMP/$name.yaml" --db "$TMP/$name.db" --interval 0.2 \
        --listen "127.0.0.1:$port" ${RUN_ARGS:-} 2>"$TMP/$name.log" &
    T_PIDS="$T_PIDS $!"
    printf -v "PID_$name" %s "$!"
}

# --- the daemons
# heat's GPU starts heating at the daemon's first temperature read (FAKE_NVML_TEMP_T0=read), not
# at its nvmlInit, so a daemon slow to start polling on a loaded machine does not eat the lead:
# its time origin is its first stored reading (T0_HEAT below)
start heat $'alerts:\n  detectors:\n    throttle_forecast: {window: 4s, lead: 45s}\n    throttling: {for: 1s}\n' \
    FAKE_NVML_GPUS=1 FAKE_NVML_TEMP=48,1 FAKE_NVML_THERMAL=1 FAKE_NVML_TEMP_T0=read
# idle also has a rule that goes pending while GPU 0 idles and clears, never firing, when its load
# returns: at info (the default level) neither is logged, both are counted on /metrics and in the
# summary line
RUN_ARGS="--summary-interval 1s" start idle $'alerts:\n  detectors:\n    idle_burn: {for: 2s}\n  rules:\n    - name: QuietLong\n      metric: wattage_gpu_utilization_ratio\n      op: "<"\n      threshold: 0.05\n      for: 1h\n' \
    FAKE_NVML_GPUS=2 FAKE_NVML_POWER=400,5,3 FAKE_NVML_UTIL=0:0:20:1 FAKE_NVML_T0="$(now)"
start sensor $'alerts:\n  detectors:\n    stuck: {ticks: 10}\n' \
    FAKE_NVML_GPUS=4 FAKE_NVML_STUCK=1:0:1000 FAKE_NVML_POWER_READ=2:0:1000:950 FAKE_NVML_T0="$(now)"
start lost $'alerts:\n  detectors:\n    data_gap: {intervals: 3}\n' \
    FAKE_NVML_GPUS=4 FAKE_NVML_LOST=2:3:1000 FAKE_NVML_T0="$(now)"
for d in heat idle sensor lost; do
    p=PORT_$d
    check "the $d daemon answers" wait_for 10 curl -sf "http://127.0.0.1:${!p}/healthz" -o /dev/null
done

# --- the throttle forecast: at least 30 s of fake time ahead, before the throttle reason (first:
# the fake reaches the threshold 38.5 s after it starts, whatever the load)
check "a GPU heating at 1 °C/s fires GPUThrottleForecast" \
    wait_for 20 q "$PORT_heat" 'has("GPUThrottleForecast", gpu="0")'
# The fake's temperature is 48 + (t - T0) °C, reported rounded: 87 from t - T0 = 38.5 s. T0 is
# the daemon's first temperature read, stamped on its first stored reading (48 °C); START_HEAT,
# the collector's first log line, follows nvmlInit within a few ms (the start delay is only said)
first_heat=$(stored "$TMP/heat.db" wattage_gpu_temperature_celsius | sort -t, -k1,1g | head -n 1)
T0_HEAT=${first_heat%%,*}
START_HEAT=$(python3 -c '
import datetime, re, sys
for line in open(sys.argv[1]):
    m = re.match(r"(\S+)Z info +nvml: ", line)
    if m:
        print(datetime.datetime.fromisoformat(m.group(1)).replace(tzinfo=datetime.timezone.utc).timestamp())
        break' "$TMP/heat.log")
check "the first stored reading is the fake's origin, 48 °C ($first_heat, $(python3 -c "print(f'{$T0_HEAT - $START_HEAT:.1f}')") s after the daemon started)" \
    test "${first_heat##*,}" = 48
check "it fired at least 30 s of fake time before the slowdown threshold" \
    q "$PORT_heat" "(38.5 - (ts(has('GPUThrottleForecast', gpu='0')[0]['fired_at']) - $T0_HEAT)) >= 30"
check "its summary says how long is left" \
    q "$PORT_heat" '"reaches its slowdown temperature 87 °C in" in has("GPUThrottleForecast", gpu="0")[0]["summary"]'
check "no thermal throttle reason is reported yet" \
    bash -c "! curl -s http://127.0.0.1:$PORT_heat/metrics | grep -q 'wattage_gpu_throttled{.*reason=\"[sh]w_thermal_slowdown\"} 1'"

# --- idle burn: fires, is exported, says the kWh, resolves when the load returns
check "an idle GPU at 400 W fires GPUIdleBurn" \
    wait_for 10 q "$PORT_idle" 'has("GPUIdleBurn", gpu="0")'
check "its summary says the utilization, the power and the kWh so far" \
    q "$PORT_idle" 'all(("1% utilization" in a["summary"] and "kWh so far" in a["summary"] and a["severity"] == "warning") for a in has("GPUIdleBurn", gpu="0"))'
# A scrape on a loaded machine may time out: ask again for a few seconds.
idle_alert_exported() {
    curl -s --max-time 5 "http://127.0.0.1:$PORT_idle/metrics" >"$TMP/alerts.prom" &&
        grep -qE '^wattage_alerts\{alertname="GPUIdleBurn",severity="warning",gpu="0",uuid="GPU-fake-0000-0",model=[^}]*\} 1$' "$TMP/alerts.prom"
}
wait_for 10 idle_alert_exported
check "wattage_alerts{alertname,severity,...} 1 on /metrics ($(grep '^wattage_alerts{' "$TMP/alerts.prom"))" \
    idle_alert_exported
check "the busy GPU does not" q "$PORT_idle" 'not has("GPUIdleBurn", gpu="1") and not has("GPUIdleBurn", "pending", gpu="1")'
check "it resolves when the load returns" \
    wait_for 30 q "$PORT_idle" 'any(a["resolved_at"] for a in has("GPUIdleBurn", "resolved", gpu="0"))'
check "and leaves /metrics" bash -c "! curl -s http://127.0.0.1:$PORT_idle/metrics | grep -q '^wattage_alerts{'"
# transitions per alertname on /metrics; pending and cleared ones not in the info log (issue 48)
transitions() {
    curl -s --max-time 5 "http://127.0.0.1:$PORT_idle/metrics" |
        sed -n "s/^wattage_alert_transitions_total{alertname=\"$1\",to=\"$2\"} //p"
}
check "wattage_alert_transitions_total counts GPUIdleBurn's pending, firing and resolved ($(transitions GPUIdleBurn pending), $(transitions GPUIdleBurn firing), $(transitions GPUIdleBurn resolved))" \
    bash -c '(( ${0:-0} >= 1 && ${1:-0} >= 1 && ${2:-0} >= 1 ))' \
    "$(transitions GPUIdleBurn pending)" "$(transitions GPUIdleBurn firing)" "$(transitions GPUIdleBurn resolved)"
check "and QuietLong went pending and cleared, never firing ($(transitions QuietLong pending), $(transitions QuietLong cleared), $(transitions QuietLong firing))" \
    wait_for 10 bash -c '(( $(curl -s --max-time 5 http://127.0.0.1:'"$PORT_idle"'/metrics | sed -n "s/^wattage_alert_transitions_total{alertname=\"QuietLong\",to=\"cleared\"} //p") >= 1 ))'
check "  (QuietLong: pending >= 1, firing 0)" \
    bash -c '(( ${0:-0} >= 1 )) && [[ $1 == 0 ]]' "$(transitions QuietLong pending)" "$(transitions QuietLong firing)"
check "the info log holds no pending and no cleared-before-firing line" \
    bash -c '! grep -E "alert: (pending|cleared before firing)" "$0"' "$TMP/idle.log"
check "the summary line counts the transitions ($(grep -o 'alert_transitions=[^ ]*' "$TMP/idle.log" | tail -1))" \
    wait_for 5 bash -c 'grep "run: summary " "$0" | grep -qE "alert_transitions=pending:[0-9]+,cleared:[1-9]"' "$TMP/idle.log"
check "firing and resolved are logged with alertname, labels, value and summary" \
    bash -c "grep -q 'warn  alert: firing alertname=GPUIdleBurn severity=warning labels={gpu=\"0\",.*} value=[0-9.]* summary=\".*kWh so far\"' $TMP/idle.log &&
             grep -q 'info  alert: resolved alertname=GPUIdleBurn' $TMP/idle.log"

# --- stuck sensor and impossible reading; GPUs 0 and 3 quiet
check "a stuck power sensor fires GPUSensorStuck" \
    wait_for 10 q "$PORT_sensor" 'has("GPUSensorStuck", gpu="1")'
check "a 950 W reading on a 700 W GPU fires GPUImpossibleReading" \
    wait_for 10 q "$PORT_sensor" 'has("GPUImpossibleReading", gpu="2", reading="power")'
check "the other GPUs stay quiet" \
    q "$PORT_sensor" 'not [a for a in A if a["labels"].get("gpu") in ("0", "3")]'
check "the impossible reading's summary names the max limit" \
    q "$PORT_sensor" '"over its max power limit 700 W" in has("GPUImpossibleReading", gpu="2")[0]["summary"]'

# --- a lost GPU: the data gap, the others quiet
check "a lost GPU fires WattageDataGap" wait_for 10 q "$PORT_lost" 'has("WattageDataGap", gpu="2")'
sleep 1
check "and nothing else fires or is pending" \
    q "$PORT_lost" 'all(a["labels"].get("gpu") == "2" and a["alertname"] == "WattageDataGap" for a in A)'
check "its summary says the GPU is down" \
    q "$PORT_lost" '"the GPU is down" in has("WattageDataGap", gpu="2")[0]["summary"]'
# SIGHUP: a new rule applies, the firing data gap stays firing (not re-fired)
printf 'alerts:\n  detectors:\n    data_gap: {intervals: 3}\n  rules:\n    - name: PowerSeen\n      metric: wattage_gpu_power_watts\n      op: ">"\n      threshold: 1\n      labels: {team: ml}\n' \
    >"$TMP/lost.yaml"
kill -HUP "$PID_lost"
check "after SIGHUP the new rule fires for the three live GPUs" \
    wait_for 10 q "$PORT_lost" 'len(has("PowerSeen", team="ml")) == 3 and not has("PowerSeen", gpu="2")'
check "the data gap stayed firing through the reload, fired once" \
    bash -c "q() { python3 $TMP/q.py \"\$@\"; }; q $PORT_lost 'has(\"WattageDataGap\", gpu=\"2\")' && test \$(grep -c 'firing alertname=WattageDataGap' $TMP/lost.log) -eq 1"
printf 'alerts:\n  rules:\n    - name: Bad\n      metric: wattage_gpu_power_wats\n      op: ">"\n      threshold: 1\n' >"$TMP/lost.yaml"
kill -HUP "$PID_lost"
check "a bad rule on SIGHUP is refused with file:line, the running rules stay" \
    wait_for 5 grep -q "lost.yaml:4: alerts.rules\[0\].metric: unknown metric \"wattage_gpu_power_wats\"; did you mean wattage_gpu_power_watts?" "$TMP/lost.log"
sleep 0.5
check "  (PowerSeen still firing)" q "$PORT_lost" 'len(has("PowerSeen")) == 3'

# --- check-config
printf 'alerts:\n  rules:\n    - name: Hot\n      metric: wattage_gpu_temperature_celsius\n      op: ">"\n      threshold: 80\n      for: soon\n' >"$TMP/bad.yaml"
msg=$("$BIN" check-config "$TMP/bad.yaml" 2>&1)
rc=$?
check "check-config refuses a bad rule with exit 2 and file:line ($msg)" \
    bash -c '[[ $0 == 2 && $1 == *"bad.yaml:7: alerts.rules[0].for: expected a duration"* ]]' "$rc" "$msg"

# --- the throttle forecast, continued: the slowdown itself
check "at the threshold the fake reports thermal slowdown and GPUThrottling fires, naming it" \
    wait_for 45 q "$PORT_heat" 'has("GPUThrottling", reason="hw_thermal_slowdown") and has("GPUThrottling", reason="sw_thermal_slowdown")'
# what the daemon measured, in the check's message: the lead, and the forecast's and the throttle's
# times after the first stored reading (T0) and after the daemon's start
lead_info() {
    python3 - "$PORT_heat" "$T0_HEAT" "$START_HEAT" <<'PY'
import datetime, json, sys, urllib.request
port, t0, start = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
A = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/alerts", timeout=2))["alerts"]
ts = lambda s: datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
f = [ts(a["fired_at"]) for a in A if a["alertname"] == "GPUThrottleForecast" and a["fired_at"]]
t = [ts(a["active_since"]) for a in A if a["alertname"] == "GPUThrottling"]
if f and t:
    print(f"lead {min(t) - f[0]:.1f} s: fired at T0 + {f[0] - t0:.1f} s, throttled at T0 + "
          f"{min(t) - t0:.1f} s, T0 = start + {t0 - start:.1f} s")
PY
}
check "the forecast fired at least 30 s before the throttle reason appeared ($(lead_info))" \
    q "$PORT_heat" "min(ts(a['active_since']) for a in has('GPUThrottling')) - ts(has('GPUThrottleForecast', gpu='0')[0]['fired_at']) >= 30"
# one firing, from its first window to the throttle: a forecast that resolves on the way and fires
# again (as a plateau read into polls missed on a loaded machine did) says its lead twice
check "the forecast fired once and stayed firing ($(grep -c 'alert: firing alertname=GPUThrottleForecast' "$TMP/heat.log") firing, $(grep -c 'alert: resolved alertname=GPUThrottleForecast' "$TMP/heat.log") resolved in the log)" \
    bash -c '[[ $(grep -c "alert: firing alertname=GPUThrottleForecast" "$0") == 1 &&
                $(grep -c "alert: resolved alertname=GPUThrottleForecast" "$0") == 0 ]]' "$TMP/heat.log"
check "GPUThrottling says the reason in its summary" \
    q "$PORT_heat" '"throttled by hw_thermal_slowdown" in has("GPUThrottling", reason="hw_thermal_slowdown")[0]["summary"]'
finish
