#!/usr/bin/env bash
# GPU health on the real daemon and the fake NVML, two daemons side by side:
#  - "health": an XID 79 on GPU 0, uncorrectable ECC and a pending row remap on GPU 1, PCIe
#    replays rising on GPU 0, a fan: the series are on /metrics (versions on wattage_gpu_info)
#    and the default alerts fire, the XID's with what it means; then a storm of 10,000 XIDs a
#    second for 5 s on GPU 1: every one is counted, the poll loop keeps its 0.5 s ticks, and the
#    log says it in a handful of lines;
#  - "bare": every health call NOT_SUPPORTED: the series are absent, each is said once, the GPUs
#    stay up and the daemon serves;
#  - "counters": NVLink and PCIe byte counters (the PCIe one wrapping at 2^32), GPM ratios, an
#    S-class unit whose power supply turns abnormal: on /metrics and in the store; and a GPU
#    before Hopper with none of them: absent, said once, the poll goes on.
. tests/cli/lib.sh
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc WATTAGE_NVML_LIBRARY=$FAKE_NVML

# q PORT EXPR: EXPR (Python) over GET /api/v1/alerts (has(name, state, **labels)) and the
# samples of /metrics (m(name, **labels): the value of the one matching sample, or None).
cat >"$TMP/q.py" <<'PY'
import json, re, sys, time, urllib.request
port, expr = sys.argv[1], sys.argv[2]
t_asked = time.time()  # the counters read can be no newer than this
base = f"http://127.0.0.1:{port}"
A = json.load(urllib.request.urlopen(base + "/api/v1/alerts", timeout=10))["alerts"]
M = []
for line in urllib.request.urlopen(base + "/metrics", timeout=10).read().decode().splitlines():
    g = re.match(r'^(\w+)(?:\{(.*)\})? (\S+)', line)
    if g and not line.startswith("#"):
        M.append((g.group(1), dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', g.group(2) or "")),
                  float(g.group(3))))
def has(name, state="firing", **labels):
    return [a for a in A if a["alertname"] == name and a["state"] == state
            and all(a["labels"].get(k) == v for k, v in labels.items())]
def ms(name, **labels):
    return [(l, v) for n, l, v in M if n == name and all(l.get(k) == w for k, w in labels.items())]
def m(name, **labels):
    s = ms(name, **labels)
    return s[0][1] if len(s) == 1 else None
r = eval("(" + expr + ")")
if not r:
    print(json.dumps(A, indent=1), file=sys.stderr)
    print("\n".join(f"{n} {l} {v}" for n, l, v in M if n.startswith("wattage_gpu_")
                    and n not in ("wattage_gpu_throttled",)), file=sys.stderr)
sys.exit(0 if r else 1)
PY
q() { python3 "$TMP/q.py" "$@"; }
now() { python3 -c 'import time; print(repr(time.time()))'; }

# --- health: T0 now; the storm runs from 6 s to 11 s of the fake's time
T0=$(now)
port=$(free_port)
FAKE_NVML_GPUS=2 FAKE_NVML_T0=$T0 FAKE_NVML_FANS=1 FAKE_NVML_XID=0:1:79 \
    FAKE_NVML_ECC=1:0:0:3 FAKE_NVML_REMAP=1:0:0:2:1:0 FAKE_NVML_PCIE_REPLAYS=0:0:1000:5 \
    FAKE_NVML_XID_STORM=1:6:11:48:10000 \
    bg "$BIN" run --db "$TMP/h.db" --interval 0.5 --listen "127.0.0.1:$port" --log-level debug \
    >"$TMP/h.log" 2>&1
pid=$!
check "the daemon answers" wait_for 10 curl -sf "http://127.0.0.1:$port/healthz" -o /dev/null
check "wattage_gpu_info carries the driver, VBIOS and CUDA driver versions" wait_for 5 q "$port" '
[l for l, v in ms("wattage_gpu_info", gpu="0") if l.get("driver_version") == "550.54.15-fake"
 and l.get("vbios_version") == "96.00.89.00.01" and l.get("cuda_driver_version") == "12.4"]'
check "ECC counts: volatile and aggregate, corrected and uncorrected" q "$port" '
m("wattage_gpu_ecc_errors_total", gpu="1", type="uncorrected", counter="volatile") == 3 and
m("wattage_gpu_ecc_errors_total", gpu="1", type="corrected", counter="aggregate") == 12 and
len(ms("wattage_gpu_ecc_errors_total", gpu="0")) == 4'
check "remapped rows by kind, pending as 1" q "$port" '
m("wattage_gpu_remapped_rows", gpu="1", kind="uncorrectable") == 2 and
m("wattage_gpu_remapped_rows", gpu="1", kind="pending") == 1 and
m("wattage_gpu_remapped_rows", gpu="0", kind="failure") == 0'
check "PCIe replays, memory temperature and the fan's ratio" q "$port" '
m("wattage_gpu_pcie_replays_total", gpu="0") > 0 and m("wattage_gpu_pcie_replays_total", gpu="1") == 0
and m("wattage_gpu_memory_temperature_celsius", gpu="1") == 51
and m("wattage_gpu_fan_speed_ratio", gpu="0", fan="0") == 0.3'
check "the XID 79 is counted once on GPU 0" wait_for 5 q "$port" \
    'm("wattage_gpu_xid_errors_total", gpu="0", xid="79") == 1'
check "GPUXidError fires for it, critical, saying what XID 79 means" wait_for 10 q "$port" '
[a for a in has("GPUXidError", gpu="0", xid="79") if a["severity"] == "critical"
 and "GPU has fallen off the bus" in a["summary"]]'
check "GPUUncorrectableECC fires for GPU 1 only" wait_for 5 q "$port" \
    'has("GPUUncorrectableECC", gpu="1") and not has("GPUUncorrectableECC", gpu="0")'
check "GPURowRemapPending fires for GPU 1, a warning" wait_for 5 q "$port" '
[a for a in has("GPURowRemapPending", gpu="1") if a["severity"] == "warning"]'
check "GPUPCIeReplaysRising fires for GPU 0 (5 a second)" wait_for 10 q "$port" \
    'has("GPUPCIeReplaysRising", gpu="0") and not has("GPUPCIeReplaysRising", gpu="1")'
# The storm: 50,000 XID 48 on GPU 1 from 6 s to 11 s.
check "the storm's XID 48 fires GPUXidError for GPU 1, critical" wait_for 20 q "$port" \
    '[a for a in has("GPUXidError", gpu="1", xid="48") if a["severity"] == "critical"]'
check "after it every one of the 50,000 is counted" wait_for 20 q "$port" \
    'm("wattage_gpu_xid_errors_total", gpu="1", xid="48") == 50000'
sleep 1
kill -TERM "$pid"
wait "$pid"
check "the daemon stopped cleanly" test $? -eq 0
check_ticks "the poll loop kept its 0.5 s ticks through the storm" "$TMP/h.log" 20
nxid=$(grep -c ' nvml: XID' "$TMP/h.log")
nlines=$(grep -vc ' debug ' "$TMP/h.log")
check "50,000 XIDs are 2 log lines of the collector ($nxid), first of each code with its meaning" \
    bash -c "[[ $nxid -eq 2 ]] && grep -q 'nvml: XID 48 gpu=1 uuid=GPU-fake-0000-1: Double Bit ECC Error' '$TMP/h.log'"
check "and the whole log stays short ($nlines lines above debug)" test "$nlines" -le 40

# --- bare: every health call NOT_SUPPORTED
port=$(free_port)
FAKE_NVML_GPUS=3 FAKE_NVML_FANS=1 FAKE_NVML_XID=0:0.5:79 \
    FAKE_NVML_NOT_SUPPORTED=ecc,remap,pcie_replay,mem_temp,fan,vbios,events \
    bg "$BIN" run --db "$TMP/b.db" --interval 0.5 --listen "127.0.0.1:$port" >"$TMP/b.log" 2>&1
pid=$!
check "the bare daemon answers" wait_for 10 curl -sf "http://127.0.0.1:$port/healthz" -o /dev/null
sleep 2.5
check "its GPUs are up with power, and no health series at all" q "$port" '
all(m("wattage_gpu_up", gpu=str(g)) == 1 and m("wattage_gpu_power_watts", gpu=str(g)) for g in range(3))
and not any(ms(n) for n in ("wattage_gpu_ecc_errors_total", "wattage_gpu_remapped_rows",
  "wattage_gpu_pcie_replays_total", "wattage_gpu_memory_temperature_celsius",
  "wattage_gpu_fan_speed_ratio", "wattage_gpu_xid_errors_total"))
and not [l for l, v in ms("wattage_gpu_info") if "vbios_version" in l]
and not has("GPUXidError")'
kill -TERM "$pid"
wait "$pid"
check "the bare daemon stopped cleanly" test $? -eq 0
for what in "volatile ECC counts" "aggregate ECC counts" "remapped rows" "PCIe replay counter" \
    "memory temperature" "fan speed" "VBIOS version" "XID events"; do
    n=$(grep -c " info  nvml: $what: Not Supported" "$TMP/b.log")
    check "\"$what: Not Supported\" is said once for 3 GPUs and 5 polls ($n)" test "$n" -eq 1
done
check "and nothing about them above info" bash -c "! grep -E ' (warn|error) ' '$TMP/b.log' | grep -qi 'nvml'"

# --- counters: NVLink, PCIe (32-bit, wrapping every ~2 s), GPM, one S-class unit
T0=$(now)
port=$(free_port)
FAKE_NVML_GPUS=2 FAKE_NVML_T0=$T0 FAKE_NVML_NVLINK=2000,1000 FAKE_NVML_PCIE=2e9,5e8 \
    FAKE_NVML_PCIE_OFFSET=4194967296 FAKE_NVML_GPM=1 FAKE_NVML_UTIL=0:0:1000:80,1:0:1000:40 \
    FAKE_NVML_UNITS=1 FAKE_NVML_PSU_ABNORMAL=0:15 \
    bg "$BIN" run --db "$TMP/c.db" --interval 0.5 --listen "127.0.0.1:$port" >"$TMP/c.log" 2>&1
pid=$!
check "the counters daemon answers" wait_for 10 curl -sf "http://127.0.0.1:$port/healthz" -o /dev/null
check "GPM ratios on /metrics: SM 0.8 and 0.4, tensor a quarter, DRAM 0.6 of it" wait_for 5 q "$port" '
m("wattage_gpu_sm_active_ratio", gpu="0") == 0.8 and m("wattage_gpu_sm_active_ratio", gpu="1") == 0.4
and m("wattage_gpu_tensor_active_ratio", gpu="0") == 0.2
and abs(m("wattage_gpu_dram_bandwidth_utilization_ratio", gpu="1") - 0.24) < 1e-9
and m("wattage_gpu_sm_occupancy_ratio", gpu="0") == 0.4'
# The last tick's count: from a second and a half before now to the moment /metrics is asked
# (starting python takes a while on a loaded machine).
n=$(now)
check "NVLink bytes on /metrics: 2000 and 1000 KiB a second since T0" q "$port" "
2000 * ($n - $T0 - 1.5) <= m('wattage_gpu_nvlink_transmit_bytes_total', gpu='1') / 1024 <= 2000 * (t_asked - $T0 + 0.5)
and 1000 * ($n - $T0 - 1.5) <= m('wattage_gpu_nvlink_receive_bytes_total', gpu='0') / 1024 <= 1000 * (t_asked - $T0 + 0.5)"
check "the unit's power supply is Normal, 480 W at 12 V, 40 A" q "$port" '
m("wattage_psu_state_info", unit="0", state="Normal") == 1 and m("wattage_psu_power_watts", unit="0") == 480
and m("wattage_psu_voltage_volts", unit="0") == 12 and m("wattage_psu_current_amperes", unit="0") == 40
and m("wattage_unit_fan_rpm", unit="0", fan="1") == 5100'
check "then Abnormal (from 15 s), with its fan 1 failed" wait_for 20 q "$port" '
m("wattage_psu_state_info", unit="0", state="Abnormal High voltage") == 1
and not ms("wattage_psu_state_info", state="Normal") and m("wattage_unit_fan_failed", unit="0", fan="1") == 1'
# PCIe at 2 GB/s from 100 MB under 2^32: past 4.5 s it wrapped at least twice.
check "the PCIe counter passes 2^32 twice, unwrapped" wait_for 10 q "$port" \
    'm("wattage_gpu_pcie_transmit_bytes_total", gpu="0") > 2 * 4294967296'
sleep 1.5 # a store flush
kill -TERM "$pid"
wait "$pid"
check "the counters daemon stopped cleanly" test $? -eq 0
out=$("$BIN" query --db "$TMP/c.db" --from -5m --csv 'wattage_gpu_pcie_transmit_bytes_total{gpu="0"}' 2>&1)
check "the store holds the PCIe counter, rising through every wrap at about 2 GB/s" python3 -c '
import sys
rows = [l.split(",") for l in sys.argv[1].splitlines()[1:] if l]
v = [float(r[-1]) for r in rows]
assert len(v) >= 8 and v == sorted(v) and v[-1] > 2 * 2**32, sys.argv[1]
steps = [b - a for a, b in zip(v, v[1:])]
assert all(0.2e9 < d < 3.5e9 for d in steps), steps' "$out"
out=$("$BIN" query --db "$TMP/c.db" --from -5m --csv 'wattage_gpu_sm_active_ratio{gpu="1"}' 2>&1)
check "and the GPM ratios" python3 -c '
import sys
v = [float(l.rsplit(",", 1)[1]) for l in sys.argv[1].splitlines()[1:] if l]
assert len(v) >= 5 and all(abs(x - 0.4) < 1e-9 for x in v), sys.argv[1]' "$out"
check "and nothing above info about them" bash -c "! grep -E ' (warn|error) ' '$TMP/c.log' | grep -qiE 'GPM|NVLink|PCIe|unit'"

# The report's activity view over that store: GPM means beside utilization, interconnect rates.
"$BIN" report --db "$TMP/c.db" --from -5m --format json -o "$TMP/c.json" 2>"$TMP/c.err"
check "the report (json) has each GPU's activity: SM, tensor and DRAM means, NVLink and PCIe rates" \
    python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
g = {x["gpu"]: x["activity"] for x in r["gpus"]}
a0, a1 = g["0"], g["1"]
assert abs(a0["sm_active_ratio"] - 0.8) < 1e-9 and abs(a1["sm_active_ratio"] - 0.4) < 1e-9, g
assert abs(a0["tensor_active_ratio"] - 0.2) < 1e-9 and abs(a1["dram_bandwidth_utilization_ratio"] - 0.24) < 1e-9, g
assert abs(a0["utilization_ratio"] - 0.8) < 1e-9, g
# 2000 KiB/s of NVLink, 2 GB/s of PCIe (through the 2^32 wraps), within 5 %
assert abs(a1["nvlink_transmit_bytes_per_second"] / 2048000 - 1) < 0.05, g
assert abs(a0["nvlink_receive_bytes_per_second"] / 1024000 - 1) < 0.05, g
assert abs(a0["pcie_transmit_bytes_per_second"] / 2e9 - 1) < 0.05, g
assert abs(a1["pcie_receive_bytes_per_second"] / 5e8 - 1) < 0.05, g
assert not [f for f in r["findings"] if f["kind"] == "underfilled"], r["findings"]' "$TMP/c.json"
"$BIN" report --db "$TMP/c.db" --from -5m --format md -o "$TMP/c.md" 2>>"$TMP/c.err"
check "the Markdown report has the activity table, 80 % SM active on GPU 0" \
    grep -qE '^\| 0 \| [^|]+\| 80\.0 % \| 80\.0 % \| 40\.0 % \| 20\.0 % \| 48\.0 % \|' "$TMP/c.md"
"$BIN" report --db "$TMP/c.db" --from -5m -o "$TMP/c.html" 2>>"$TMP/c.err"
check "and so does the HTML one" grep -q "<table id='activity'>" "$TMP/c.html"

# A GPU whose kernels run all the time on a third of its SMs: the report says it is underfilled.
port=$(free_port)
FAKE_NVML_GPUS=1 FAKE_NVML_GPM=1 FAKE_NVML_GPM_SM_SCALE=0.3 FAKE_NVML_UTIL=0:0:1000:90 \
    bg "$BIN" run --db "$TMP/u.db" --interval 0.5 --listen "127.0.0.1:$port" >"$TMP/u.log" 2>&1
pid=$!
check "the underfilled daemon answers" wait_for 10 curl -sf "http://127.0.0.1:$port/healthz" -o /dev/null
sleep 3 # a few GPM intervals and a store flush
kill -TERM "$pid"
wait "$pid"
"$BIN" report --db "$TMP/u.db" --from -5m --format json -o "$TMP/u.json" 2>>"$TMP/c.err"
check "the report finds GPU 0 busy 90 % but its SMs 27 % active" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
f = [x for x in r["findings"] if x["kind"] == "underfilled"]
assert len(f) == 1 and "busy 90%" in f[0]["title"] and "SMs only 27% active" in f[0]["title"], r["findings"]
assert "DRAM bandwidth 54%" in f[0]["evidence"], f' "$TMP/u.json"
check "no report said it could not read the store" bash -c "! grep -iE 'cannot|no store' '$TMP/c.err'"

# --- before Hopper, without NVLink, PCIe counters or units: absent, said once, polls go on
port=$(free_port)
FAKE_NVML_GPUS=3 FAKE_NVML_MODEL="NVIDIA A100-SXM4-80GB" \
    bg "$BIN" run --db "$TMP/p.db" --interval 0.5 --listen "127.0.0.1:$port" >"$TMP/p.log" 2>&1
pid=$!
check "the pre-Hopper daemon answers" wait_for 10 curl -sf "http://127.0.0.1:$port/healthz" -o /dev/null
sleep 2.5
check "its GPUs are up, with none of the counter, GPM or unit series" q "$port" '
all(m("wattage_gpu_up", gpu=str(g)) == 1 for g in range(3))
and not any(ms(n) for n in ("wattage_gpu_nvlink_transmit_bytes_total",
  "wattage_gpu_pcie_receive_bytes_total", "wattage_gpu_sm_active_ratio",
  "wattage_gpu_tensor_active_ratio", "wattage_psu_state_info", "wattage_unit_fan_rpm"))'
kill -TERM "$pid"
wait "$pid"
check "the pre-Hopper daemon stopped cleanly" test $? -eq 0
for what in "GPM metrics: not supported (GPM needs Hopper or newer)" "NVLink transmit counter: Not Supported" \
    "PCIe receive counter: Not Supported" "no S-class unit"; do
    n=$(grep -cF " info  nvml: $what" "$TMP/p.log")
    check "\"$what\" is said once for 3 GPUs and 5 polls ($n)" test "$n" -eq 1
done
finish
