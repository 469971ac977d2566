#!/usr/bin/env bash
# The Grafana dashboard (deploy/grafana/wattage.json) against a real Prometheus scraping a test
# daemon: the file is a well-formed dashboard (unique ids, panels on the 24-column grid without
# overlaps, every panel with a title, a one-line description, a unit and the datasource
# variable), and every panel's and annotation's PromQL, with Grafana's variables filled in,
# returns data. The daemon has the fake NVML's GPUs (with a fan and an XID), RAPL and network trees, a Modbus meter
# peer, a firing alert rule, a running job and a store holding a small site over the last hour
# (tests/unit/test_kpi.c's, for the facility KPIs). The Inference serving row reads the recording
# rules of deploy/prometheus/wattage-inference-rules.yml, which this Prometheus loads: every
# record a panel names is one of its rules, and its queries must succeed, but they may be empty
# (the rules' figures are test_prometheus_inference_rules.sh's); its per-model panels read the
# counters themselves and must return data: a vLLM test peer serves on the GPU node's GPUs.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/prometheus_lib.sh"
DASH=$WATTAGE_SRCDIR/deploy/grafana/wattage.json
PEER=$(dirname "$BIN")/tests/peers/modbus_meter

out=$(python3 - "$DASH" "$WATTAGE_SRCDIR/deploy/prometheus" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["uid"] and d["title"] and d["schemaVersion"] >= 36, "uid, title, schemaVersion"
names = [v["name"] for v in d["templating"]["list"]]
assert names == ["datasource", "instance"], names
ids, cells = set(), {}
for p in d["panels"]:
    assert p["id"] not in ids, f"duplicate id {p['id']}"
    ids.add(p["id"])
    g = p["gridPos"]
    assert g["x"] >= 0 and g["w"] > 0 and g["x"] + g["w"] <= 24, (p["title"], g)
    for x in range(g["x"], g["x"] + g["w"]):
        for y in range(g["y"], g["y"] + g["h"]):
            assert (x, y) not in cells, f"{p['title']} overlaps {cells[(x, y)]}"
            cells[(x, y)] = p["title"]
    if p["type"] == "row":
        continue
    assert p["title"] and p["description"].endswith("."), p["title"]
    assert p["fieldConfig"]["defaults"]["unit"], f"{p['title']}: no unit"
    assert p["datasource"]["uid"] == "${datasource}", p["title"]
    assert p["targets"] and all(t["expr"] and t["refId"] for t in p["targets"]), p["title"]
# every recording rule a panel names is recorded in a shipped rule file
import glob, re
recorded = set()
for f in glob.glob(sys.argv[2] + "/*.yml"):
    recorded |= set(re.findall(r"^\s*- record: (\S+)", open(f).read(), re.M))
for p in d["panels"]:
    for t in p.get("targets", []):
        for r in re.findall(r"\b[a-z_]+:[a-z_0-9]+:[a-z_0-9]+\b", t["expr"]):
            assert r in recorded, f"{p['title']}: {r} is recorded by no rule in deploy/prometheus"
print("ok")
PY
)
check "the dashboard is well formed ($out)" test "$out" = ok

if ! command -v "$PROMETHEUS" >/dev/null; then
    not_ok "Prometheus is installed" "prometheus is missing (scripts/deps.sh --test)"
    finish
fi
[[ -x $PEER ]] || { not_ok "the peer $PEER is built"; finish; }

# Trees: the two-package RAPL fixture, a NIC and an InfiniBand port, a static /proc.
mkdir -p "$TMP/sysfs" "$TMP/live"
cp -r "$WATTAGE_SRCDIR/tests/fixtures/sysfs-2pkg/sys" "$TMP/sysfs/"
cp -r "$WATTAGE_SRCDIR/tests/fixtures/procfs-sample1" "$TMP/procfs"
net=$TMP/sysfs/sys/class/net/eth0
ib=$TMP/sysfs/sys/class/infiniband/mlx5_0/ports/1/counters
mkdir -p "$net/device" "$net/statistics" "$ib"
for f in rx_bytes tx_bytes rx_packets tx_packets; do echo 1000 >"$net/statistics/$f"; done
for f in port_rcv_data port_xmit_data port_rcv_packets port_xmit_packets; do echo 250 >"$ib/$f"; done

WATTAGE_KPI_SITE_DIR=$TMP/live WATTAGE_KPI_SITE_T0=$(($(date +%s) - 3600)) \
    "$(dirname "$BIN")/tests/unit/test_kpi" write_site >"$TMP/site.log" 2>&1
check "a site over the last hour is written into the store" grep -q '^1 passed' "$TMP/site.log"
echo 'input 0 float32 big 412.5' >"$TMP/regs"
echo ok >"$TMP/meter.mode"
bg "$PEER" "$TMP/meter.port" "$TMP/regs" "$TMP/meter.mode"
wait_for 10 test -s "$TMP/meter.port" || { not_ok "the Modbus meter started"; finish; }
bg python3 "$WATTAGE_SRCDIR/tests/peers/inference_server.py" --engine vllm --port-file "$TMP/llm.port" \
    --t0 "$(python3 -c 'import time; print(time.time() - 60)')"
wait_for 10 test -s "$TMP/llm.port" || { not_ok "the vLLM peer started"; finish; }
cat >"$TMP/w.yaml" <<Y
inference:
  targets:
    - {name: llm, url: "http://127.0.0.1:$(cat "$TMP/llm.port")/metrics", gpus: [0, 1]}
collectors:
  modbus:
    interval: 500ms
    targets:
      - name: hall-meter
        address: 127.0.0.1:$(cat "$TMP/meter.port")
        registers:
          - {name: it_power, address: 0, function: input, type: float32, unit: kW, metric: power}
alerts:
  rules:
    - {name: PowerSeen, metric: wattage_gpu_power_watts, op: ">", threshold: 1}
Y
# Two daemons, as a site has them: a GPU node, and the head node whose store holds the site's
# meters (its KPIs would not be measured over a window the GPU node's few seconds only begin).
WPORT=$(free_port)
WATTAGE_SYSFS_ROOT=$TMP/sysfs WATTAGE_PROCFS_ROOT=$TMP/procfs WATTAGE_NVML_LIBRARY=$FAKE_NVML \
    FAKE_NVML_GPUS=2 FAKE_NVML_FANS=1 FAKE_NVML_XID=1:1:79 bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.5 \
    --listen "127.0.0.1:$WPORT" 2>"$TMP/wattage.log"
SPORT=$(free_port)
mkdir -p "$TMP/empty"
WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty WATTAGE_NVML_LIBRARY=$TMP/none.so \
    bg "$BIN" run -c "$TMP/live/site.yaml" --db "$TMP/live/site.db" \
    --listen "127.0.0.1:$SPORT" 2>"$TMP/site-run.log"
wait_for 15 curl -sf "http://127.0.0.1:$WPORT/healthz" >/dev/null
"$BIN" job start --url "http://127.0.0.1:$WPORT" demo >"$TMP/job.id" 2>"$TMP/job.err"
check "a job runs on the daemon" test -s "$TMP/job.id"
PPORT=$(free_port)
start_prometheus "$PPORT" "$WPORT" "  - job_name: site
    static_configs:
      - targets: [\"127.0.0.1:$SPORT\"]
rule_files:
  - $WATTAGE_SRCDIR/deploy/prometheus/wattage-inference-rules.yml"
if ! wait_target_up 30 || ! wait_target_up 30 site; then
    not_ok "Prometheus scrapes both daemons" "target: $(target_health) $(target_health site)" \
        "$(tail -5 "$TMP/wattage.log")" "$(tail -5 "$TMP/site-run.log")"
    finish
fi
# Enough scrapes for increase() and rate() (two samples in the window) and for the alert's
# for-less rule and the KPI gauges to be exported.
has() { [[ $(prom_query "count($1)" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]["result"]))') == 1 ]]; }
wait_for 60 bash -c "$(declare -f has prom_query); PROM_URL=$PROM_URL; has 'wattage_pue_ratio' && has 'wattage_alerts' && has 'wattage_facility_power_watts' && has 'wattage_job_info' && has 'wattage_inference_energy_joules_total'"
sleep 5

out=$(python3 - "$DASH" "$PROM_URL" <<'PY' 2>&1
import json, sys, urllib.parse, urllib.request
d = json.load(open(sys.argv[1]))
url = sys.argv[2]
fill = {"$__rate_interval": "10s", "$__range": "10m", "$__interval": "1s", "$instance": ".*"}
exprs = [(p["title"], t["expr"]) for p in d["panels"] if p["type"] != "row" for t in p["targets"]]
exprs += [("annotation " + a["name"], a["expr"]) for a in d["annotations"]["list"] if "expr" in a]
import re
for v in d["templating"]["list"]:
    if v["type"] == "query":
        m = re.fullmatch(r"label_values\((\w+), (\w+)\)", v["definition"])
        assert m, v["definition"]
        exprs.append((f"variable {v['name']}", f"count by ({m[2]}) ({m[1]})"))
rules = json.load(urllib.request.urlopen(f"{url}/api/v1/rules", timeout=10))
loaded = {r["name"] for g in rules["data"]["groups"] for r in g["rules"]}
empty = []
for title, e in exprs:
    records = re.findall(r"\b[a-z_]+:[a-z_0-9]+:[a-z_0-9]+\b", e)
    assert all(r in loaded for r in records), (title, e, "not loaded", sorted(loaded))
    for k, v in fill.items():
        e = e.replace(k, v)
    assert "$" not in e, f"{title}: an unknown variable in {e}"
    q = urllib.parse.urlencode({"query": e})
    r = json.load(urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=10))
    assert r["status"] == "success", (title, e, r)
    if not r["data"]["result"] and not any(r.startswith("wattage:inference_") for r in records):
        empty.append(f"{title}: {e}")
if empty:
    sys.exit("no data: " + "; ".join(empty))
print(f"{len(exprs)} queries")
PY
)
check "every panel's query returns data, the Inference serving row's succeeds on its loaded rules ($out)" bash -c '[[ $1 == *" queries" ]]' _ "$out"
finish
