#!/usr/bin/env bash
# The real Prometheus scrapes a running wattage (8 fake GPUs) every second; its query API must
# give back what the fake delivered: every power sample one the fake produced around the scrape,
# and increase() of the energy counters within 5% of the exact integral of the fake's power.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/prometheus_lib.sh"

if ! command -v "$PROMETHEUS" >/dev/null; then
    skip "Prometheus scrapes wattage" "prometheus is not installed (scripts/deps.sh --test)"
    finish
fi
mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=8 FAKE_NVML_POWER=300,100,7
FAKE_NVML_T0=$(python3 -c 'import time; print(time.time())')
export FAKE_NVML_T0
INTERVAL=0.5
WINDOW=20

WPORT=$(free_port)
bg "$BIN" run --listen "127.0.0.1:$WPORT" --db "$TMP/w.db" --interval "$INTERVAL" 2>"$TMP/wattage.log"
PPORT=$(free_port)
start_prometheus "$PPORT" "$WPORT"
if ! wait_target_up 20; then
    not_ok "Prometheus scrapes wattage" "target: $(target_health)" "$(tail -5 "$TMP/prom/prometheus.log")" \
        "$(tail -5 "$TMP/wattage.log")"
    finish
fi
ok "Prometheus scrapes wattage (target up)"
t_up=$(python3 -c 'import time; print(time.time())')

# Let a full window of samples gather, then ask about the window that just ended.
sleep "$(python3 -c "print($WINDOW + 1.5)")"
te=$(python3 -c 'import time; print(round(time.time() - 0.5, 3))')

prom_query 'up{job="wattage"}' "$te" >"$TMP/up.json"
check "up{job=\"wattage\"} is 1" python3 -c '
import json, sys; r = json.load(open(sys.argv[1]))["data"]["result"]; assert r and r[0]["value"][1] == "1", r' "$TMP/up.json"

prom_query "wattage_gpu_power_watts[15s]" "$te" >"$TMP/power.json"
check "every power sample is one the fake produced around its scrape, 8 GPUs" \
    check_power_samples "$TMP/power.json" "$INTERVAL" "$TMP/w.db"

prom_query "increase(wattage_gpu_energy_joules_total[${WINDOW}s])" "$te" \
    >"$TMP/energy.json"
check "increase() of the energy counters is within 5% of the exact integral, 8 GPUs" \
    check_increase "$TMP/energy.json" "$te" "$WINDOW" 0.05

prom_query 'sum(wattage_collector_up{collector="nvml"})' "$te" >"$TMP/self.json"
check "the collector self-metrics reach Prometheus" python3 -c '
import json, sys; r = json.load(open(sys.argv[1]))["data"]["result"]; assert r and r[0]["value"][1] == "1", r' "$TMP/self.json"
prom_query 'count(wattage_build_info)' "$te" >"$TMP/build.json"
check "build info reaches Prometheus" python3 -c '
import json, sys; r = json.load(open(sys.argv[1]))["data"]["result"]; assert r and r[0]["value"][1] == "1", r' "$TMP/build.json"
check "Prometheus logged no scrape errors" bash -c '! grep -qi "scrape.*err\|invalid\|duplicate" "$0"' "$TMP/prom/prometheus.log"
echo "# took $(python3 -c "import time; print(round(time.time() - $t_up, 1))") s after the target came up"
finish
