#!/usr/bin/env bash
# The chip-vs-wall gauges of a daemon that just started: its node's wall is a Modbus PDU outlet
# (tests/peers/modbus_meter, 800 W), its chips two fake GPUs at 250 W each, the KPI window 8 s.
# Until the wall and the chips cover the window, wattage_node_unaccounted_power_watts and
# _ratio are absent (they would compare unequal spans: far off, negative too) while the KPI
# exporter runs; once covered they read wall - chips (300 W, 0.375).
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
PEER=$(dirname "$BIN")/tests/peers/modbus_meter
[[ -x $PEER ]] || { not_ok "the peer $PEER is built"; finish; }
mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_POWER=250,0,5

printf 'input 0 float32 big 800\n' >"$TMP/regs"
bg "$PEER" "$TMP/pdu.port" "$TMP/regs"
wait_for 10 test -s "$TMP/pdu.port" || { not_ok "the PDU peer starts"; finish; }
cat >"$TMP/r.yaml" <<Y
topology:
  node: node-r
  meters:
    - {target: pdu, point: outlet, role: pdu_outlet, node: node-r}
facility:
  kpi_window: 8s
  kpi_interval: 1s
store:
  flush_interval: 0.5s
collectors:
  modbus:
    interval: 500ms
    targets:
      - name: pdu
        address: 127.0.0.1:$(cat "$TMP/pdu.port")
        registers:
          - {name: outlet, address: 0, function: input, type: float32, unit: W, metric: power}
Y
check "check-config accepts the PDU and the window" "$BIN" check-config "$TMP/r.yaml"
PORT=$(free_port)
bg "$BIN" run -c "$TMP/r.yaml" --db "$TMP/r.db" --interval 0.5 --listen "127.0.0.1:$PORT" \
    2>"$TMP/run.log"
# the exporter is running once its suspect flags are on /metrics
exporting() {
    curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/m0.txt" &&
        grep -q '^wattage_node_reconciliation_suspect{node="node-r",reason="share_drift"}' "$TMP/m0.txt"
}
if ! wait_for 20 exporting; then
    not_ok "the KPI exporter publishes" "$(tail -5 "$TMP/run.log")"
    finish
fi
t_first=$SECONDS
early=0 samples=0
# the window (8 s) plus the export lag is not covered yet: look several times meanwhile
while ((SECONDS - t_first < 4)); do
    curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/m1.txt"
    samples=$((samples + 1))
    grep -q '^wattage_node_unaccounted_' "$TMP/m1.txt" && early=$((early + 1))
    sleep 0.3
done
check "while the window is not covered, no unaccounted gauges ($early of $samples scrapes had one)" \
    test "$early" = 0
has_gauges() {
    curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/m2.txt" &&
        grep -q '^wattage_node_unaccounted_power_watts{node="node-r"}' "$TMP/m2.txt"
}
check "once the window is covered the gauges appear" wait_for 40 has_gauges
msg=$($PY - "$TMP/m2.txt" <<'PY' 2>&1
import sys
m = {}
for line in open(sys.argv[1]):
    if not line.startswith("#"):
        k, v = line.rsplit(" ", 1)
        m[k] = float(v)
w = m['wattage_node_unaccounted_power_watts{node="node-r"}']
r = m['wattage_node_unaccounted_ratio{node="node-r"}']
assert abs(w - 300) <= 3, w
assert abs(r - 0.375) <= 0.004, r
print(f"{w:.1f} W, ratio {r:.4f}")
PY
)
check "they read wall - chips: 300 W, 0.375 ($msg)" bash -c '[[ $1 == *W,* ]]' _ "$msg"
"$BIN" kpi --from -9s --to -1s -c "$TMP/r.yaml" --db "$TMP/r.db" --json >"$TMP/k.json" 2>"$TMP/k.err"
check "wattage kpi shows the wall's and the chips' coverage beside the figures" $PY -c '
import json, sys
n = json.load(open(sys.argv[1]))["nodes"][0]
assert n["node"] == "node-r" and n["wall_coverage"] > 0.99 and n["chips_coverage"] > 0.99, n' "$TMP/k.json"
finish
