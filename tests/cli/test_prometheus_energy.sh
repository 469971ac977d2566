#!/usr/bin/env bash
# One metric name, one quantity, as a Prometheus user reads it: with 4 fake GPUs at a constant
# 250 W, the obvious sum(rate(wattage_gpu_energy_joules_total[1m])) is the summed power (1000 W)
# within 2%, and the integrated estimate, under its own name, says the same.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/prometheus_lib.sh"

if ! command -v "$PROMETHEUS" >/dev/null; then
    skip "Prometheus reads GPU energy" "prometheus is not installed (scripts/deps.sh --test)"
    finish
fi
mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=4 FAKE_NVML_POWER=250,0,7
WANT_W=1000

WPORT=$(free_port)
# A 1-s poll: a poll delayed on a loaded machine stays within the 3-interval gap rule, so the
# integrated series is not cut by gaps the GPU never had.
bg "$BIN" run --listen "127.0.0.1:$WPORT" --db "$TMP/w.db" --interval 1 2>"$TMP/wattage.log"
PPORT=$(free_port)
start_prometheus "$PPORT" "$WPORT"
if ! wait_target_up 20; then
    not_ok "Prometheus scrapes wattage" "target: $(target_health)" "$(tail -5 "$TMP/prom/prometheus.log")" \
        "$(tail -5 "$TMP/wattage.log")"
    finish
fi
ok "Prometheus scrapes wattage (target up)"

# rate(...[1m]) needs a full minute of samples: wait until the oldest scrape Prometheus holds is
# 62 s old (a loaded machine scrapes late: wait for the condition, up to 150 s).
held_s() {
    prom_query 'up{job="wattage"}[10m]' | python3 -c '
import json, sys, time
r = json.load(sys.stdin)["data"]["result"]
print(int(time.time() - float(r[0]["values"][0][0])) if r else 0)'
}
end=$((SECONDS + 150))
until [[ $(held_s) -ge 62 ]]; do
    [[ $SECONDS -ge $end ]] && break
    sleep 1
done
te=$(python3 -c 'import time; print(round(time.time() - 0.5, 3))')

value() { prom_query "$1" "$te" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if len(r) == 1 else "none")'; }
near() { python3 -c '
import sys
got, want, tol = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
if got == "none" or abs(float(got) - want) > tol * want:
    sys.exit(f"got {got}, want {want} within {tol:.0%}")
print(f"# {float(got):.2f} vs {want:.2f}", file=sys.stderr)' "$@"; }

power=$(value 'sum(avg_over_time(wattage_gpu_power_watts[1m]))')
counter=$(value 'sum(rate(wattage_gpu_energy_joules_total[1m]))')
integrated=$(value 'sum(rate(wattage_gpu_energy_integrated_joules_total[1m]))')
check "summed GPU power is the fake's constant 4 x 250 W" near "$power" "$WANT_W" 0.005
check "sum(rate(wattage_gpu_energy_joules_total[1m])) is the summed power within 2%" \
    near "$counter" "${power/none/0}" 0.02
check "sum(rate(wattage_gpu_energy_integrated_joules_total[1m])) is the summed power within 2%" \
    near "$integrated" "${power/none/0}" 0.02
check "wattage_gpu_energy_joules_total is one series per GPU, no method label" \
    test "$(value 'count(wattage_gpu_energy_joules_total)')/$(value 'count(wattage_gpu_energy_joules_total{method!=""})')" = "4/none"
# The daemon's own rolling means, after a minute: each GPU's 1-min mean is its 250 W, the node's
# is their sum (no RAPL here), and the 15-min mean is not there yet (under half covered).
check "wattage_gpu_power_average_watts{window=\"1m\"} is 250 W per GPU" \
    near "$(value 'max(wattage_gpu_power_average_watts{window="1m"}) + min(wattage_gpu_power_average_watts{window="1m"})')" 500 0.005
check "  one series per GPU" test "$(value 'count(wattage_gpu_power_average_watts{window="1m"})')" = 4
check "wattage_node_power_average_watts{window=\"1m\"} is the summed power" \
    near "$(value 'wattage_node_power_average_watts{window="1m"}')" "$WANT_W" 0.005
check "  no 15-min mean after a minute" test "$(value 'count(wattage_node_power_average_watts{window="15m"})')" = none
finish
