#!/usr/bin/env bash
# `wattage doctor` on the fake NVML and fake sysfs trees: a healthy node exits 0 and its JSON
# names the driver, each GPU's energy counter, the RAPL zones, the clock, a reachable Modbus
# meter (tests/peers/modbus_meter) and the store's integrity, size and newest reading; then
# each way a node falls short: a GPU without the counter (a warning), RAPL closed by
# CVE-2020-8694 (a warning with the udev fix), an unsynchronised clock, an unreachable meter
# and a broken store (failures: exit 1), nothing to measure at all (exit 1), and an exposed
# listen address (a warning).
source "$(dirname "$0")/lib.sh"
PEER=$(dirname "$BIN")/tests/peers/modbus_meter
PY=/usr/bin/python3
[[ -x $PEER ]] || { not_ok "the peer $PEER is built"; finish; }

mkdir -p "$TMP/empty"
cp -r tests/fixtures/sysfs-2pkg "$TMP/sys"
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 WATTAGE_SYSFS_ROOT=$TMP/sys
export WATTAGE_PROCFS_ROOT=$TMP/empty WATTAGE_CLOCK_STATUS=0

# A meter that answers, and an address where nothing listens (a port bound, then released).
echo 'input 0 float32 big 12.5' >"$TMP/regs"
echo ok >"$TMP/mode"
bg "$PEER" "$TMP/meter.port" "$TMP/regs" "$TMP/mode"
wait_for 10 test -s "$TMP/meter.port" || { not_ok "the meter started"; finish; }
dead=$(free_port)
meter() { # NAME PORT
    cat <<Y
      - name: $1
        address: 127.0.0.1:$2
        timeout: 1s
        registers:
          - {name: it_power, address: 0, function: input, type: float32, unit: kW, metric: power}
Y
}
{
    printf 'collectors:\n  modbus:\n    targets:\n'
    meter main "$(cat "$TMP/meter.port")"
} >"$TMP/good.yaml"
{
    printf 'collectors:\n  modbus:\n    targets:\n'
    meter main "$(cat "$TMP/meter.port")"
    meter gone "$dead"
} >"$TMP/bad.yaml"

# A store with readings in it: the daemon for 2 s.
port=$(free_port)
"$BIN" run -c "$TMP/good.yaml" --db "$TMP/w.db" --listen "127.0.0.1:$port" --interval 0.2 \
    --duration 2s 2>"$TMP/run.log"
check "the daemon wrote a store" test -s "$TMP/w.db"

# json FILE PYTHON-EXPR...: each expression, with d the document and c(check[, key]) a check,
# must hold; prints the first that does not.
json() {
    local f=$1; shift
    "$PY" - "$f" "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def c(name, key=None):
    m = [x for x in d["checks"] if x["check"] == name and x.get("key") == key]
    assert len(m) == 1, f"{len(m)} checks {name} {key}"
    return m[0]
for e in sys.argv[2:]:
    try:
        ok = eval(e)
    except Exception as x:
        ok = False
        e += f" ({x!r})"
    if not ok:
        print("false:", e)
        print(json.dumps(d["checks"], indent=1)[:3000])
        sys.exit(1)
PY
}

# --- a healthy node
"$BIN" doctor -c "$TMP/good.yaml" --db "$TMP/w.db" --json >"$TMP/ok.json" 2>"$TMP/ok.err"
rc=$?
check "a healthy node: exit 0 ($(tr -d '\n' <"$TMP/ok.err" | head -c 300))" test "$rc" -eq 0
check "its JSON: ok, no failure, every check there" json "$TMP/ok.json" \
    'd["ok"] is True and d["energy"] is True and d["counts"]["fail"] == 0' \
    '{x["check"] for x in d["checks"]} == {"nvml","gpu","rapl","amd","hwmon","clock","source","store","listen","kafka","otlp"}'
check "NVML: the library, the driver version and the GPU count" json "$TMP/ok.json" \
    'c("nvml")["status"] == "ok" and c("nvml")["driver_version"] == "550.54.15-fake"' \
    'c("nvml")["gpus"] == 2 and c("nvml")["library"].endswith("libnvidia-ml.so.1")'
check "each GPU has its energy counter" json "$TMP/ok.json" \
    'all(c("gpu", g)["energy_counter"] and c("gpu", g)["status"] == "ok" for g in ("0", "1"))' \
    'c("gpu", "1")["uuid"] == "GPU-fake-0000-1" and c("gpu", "0")["model"] == "NVIDIA H200"'
check "RAPL: the fixture's 7 zones are readable" json "$TMP/ok.json" \
    'c("rapl")["status"] == "ok" and c("rapl")["zones"] == 7 and c("rapl")["readable"]'
check "the clock is synchronised" json "$TMP/ok.json" 'c("clock")["synced"] is True'
check "the meter answers" json "$TMP/ok.json" \
    'c("source", "modbus:main")["reachable"] is True and c("source", "modbus:main")["status"] == "ok"'
check "the store: integrity ok, its size, a reading of the last minute" json "$TMP/ok.json" \
    'c("store")["integrity"] == "ok" and c("store")["status"] == "ok" and c("store")["bytes"] > 4096' \
    '0 <= c("store")["newest_reading_age_s"] < 60'
check "loopback listen is ok" json "$TMP/ok.json" \
    'c("listen")["loopback"] is True and c("listen")["status"] == "ok"'
check "the streaming outputs this build carries: Kafka (librdkafka's version) and OTLP" \
    json "$TMP/ok.json" 'c("kafka")["status"] == "ok" and "librdkafka" in c("kafka")["message"]' \
    'c("otlp")["status"] == "ok" and "built in" in c("otlp")["message"]'

"$BIN" doctor -c "$TMP/good.yaml" --db "$TMP/w.db" >"$TMP/ok.txt" 2>&1
check "the lines for a person: one per check, and the summary" \
    bash -c 'grep -q "^  ok     gpu 1 .*energy counter" "$0" && grep -q "nothing essential is missing$" "$0"' \
    "$TMP/ok.txt"

# --- an unreachable meter: exit 1, the peer named, the other still reachable
"$BIN" doctor -c "$TMP/bad.yaml" --db "$TMP/w.db" --json >"$TMP/bad.json" 2>/dev/null
rc=$?
check "an unreachable meter: exit 1" test "$rc" -eq 1
check "it is named, the reachable one still answers" json "$TMP/bad.json" \
    'd["ok"] is False and c("source", "modbus:gone")["status"] == "fail"' \
    'c("source", "modbus:gone")["reachable"] is False and "127.0.0.1" in c("source", "modbus:gone")["message"]' \
    'c("source", "modbus:main")["reachable"] is True'
# A meter that never answers is cut by its own timeout (1 s); the targets are probed together.
echo hang >"$TMP/mode"
t0=$(date +%s.%N)
"$BIN" doctor -c "$TMP/bad.yaml" --db "$TMP/w.db" --json >"$TMP/hang.json" 2>/dev/null
rc=$?
t1=$(date +%s.%N)
echo ok >"$TMP/mode"
check "a hung meter: exit 1 within its timeout, not forever" \
    "$PY" -c "import sys; sys.exit(0 if $rc == 1 and $t1 - $t0 < 6 else 1)"
check "the hung meter fails on its timeout" json "$TMP/hang.json" \
    'c("source", "modbus:main")["status"] == "fail" and 0.8 < c("source", "modbus:main")["seconds"] < 4'

# --- a GPU without the energy counter: a warning, not a failure
FAKE_NVML_NOT_SUPPORTED=energy "$BIN" doctor -c "$TMP/good.yaml" --db "$TMP/w.db" --json \
    >"$TMP/noctr.json" 2>/dev/null
rc=$?
check "no energy counter: still exit 0" test "$rc" -eq 0
check "it warns, power is integrated instead" json "$TMP/noctr.json" \
    'c("gpu", "0")["status"] == "warn" and c("gpu", "0")["energy_counter"] is False' \
    'c("gpu", "0")["power"] is True and "integrated" in c("gpu", "0")["message"]'

# --- a lost GPU: a failure that names it, the other GPU still counted
FAKE_NVML_T0=$(( $(date +%s) - 10 )) FAKE_NVML_LOST=1:0:100000 "$BIN" doctor -c "$TMP/good.yaml" \
    --db "$TMP/w.db" --json >"$TMP/lost.json" 2>/dev/null
check "a lost GPU: exit 1" test $? -eq 1
check "GPU 1 fails as lost, GPU 0 keeps its counter" json "$TMP/lost.json" \
    'c("gpu", "1")["status"] == "fail" and c("gpu", "1")["up"] is False' \
    'c("gpu", "1")["message"].startswith("does not answer") and "Xid" in c("gpu", "1")["fix"]' \
    'c("gpu", "0")["status"] == "ok" and d["energy"] is True'

# --- an unsynchronised clock: a warning
WATTAGE_CLOCK_STATUS=0x40 "$BIN" doctor -c "$TMP/good.yaml" --db "$TMP/w.db" --json \
    >"$TMP/clock.json" 2>/dev/null
check "an unsynchronised clock warns (exit 0)" test $? -eq 0
check "its check says so, with the fix" json "$TMP/clock.json" \
    'c("clock")["synced"] is False and c("clock")["status"] == "warn" and "NTP" in c("clock")["fix"]'

# --- RAPL closed by CVE-2020-8694: an unprivileged user cannot read energy_uj (mode 0400, as
# the kernel has it); the doctor says why and gives the fix. As root, run it as nobody.
# (Not as root, the owner's own file: mode 0000 closes it.)
mode=0400
[[ $(id -u) != 0 ]] && mode=0000
find "$TMP/sys" -name energy_uj -exec chmod $mode {} +
chmod -R a+rX "$TMP/empty" && chmod 755 "$TMP" && chmod -R go+r "$TMP/good.yaml" "$TMP/w.db"
cp "$TMP/w.db" "$TMP/nobody.db" && chmod 666 "$TMP/nobody.db" && chmod 777 "$TMP"
as_user=()
[[ $(id -u) == 0 ]] && as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
"${as_user[@]}" env FAKE_NVML_GPUS=0 "$BIN" doctor -c "$TMP/good.yaml" --db "$TMP/nobody.db" \
    --json >"$TMP/rapl.json" 2>"$TMP/rapl.err"
rc=$?
check "unreadable RAPL and no GPU: nothing to measure, exit 1 ($(head -c 200 "$TMP/rapl.err"))" \
    test "$rc" -eq 1
check "RAPL: permission denied, CVE-2020-8694, the udev rule and the group" json "$TMP/rapl.json" \
    'c("rapl")["readable"] is False and c("rapl")["status"] == "warn"' \
    '"CVE-2020-8694" in c("rapl")["message"] and "60-wattage-rapl.rules" in c("rapl")["fix"]' \
    "'mode $mode' in c('rapl')['fix'] and 'group wattage' in c('rapl')['fix']" \
    'c("rapl")["file"].endswith("intel-rapl:0/energy_uj")' \
    'c("energy")["status"] == "fail" and d["energy"] is False'
find "$TMP/sys" -name energy_uj -exec chmod 0444 {} +

# --- a broken store: exit 1
printf 'this is not a database, it has been overwritten %.0s' {1..200} >"$TMP/broken.db"
"$BIN" doctor -c "$TMP/good.yaml" --db "$TMP/broken.db" --json >"$TMP/broken.json" 2>/dev/null
check "a store that is not a database: exit 1" test $? -eq 1
check "the store check fails and names the file" json "$TMP/broken.json" \
    'c("store")["status"] == "fail" and "broken.db" in c("store")["message"]'
# a page of the readings overwritten: it opens, and quick_check finds it
cp "$TMP/w.db" "$TMP/torn.db"
sqlite3 "$TMP/torn.db" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null 2>&1
pages=$(( $(stat -c %s "$TMP/torn.db") / 4096 ))
dd if=/dev/urandom of="$TMP/torn.db" bs=4096 seek=$((pages - 1)) count=1 conv=notrunc 2>/dev/null
"$BIN" doctor -c "$TMP/good.yaml" --db "$TMP/torn.db" --json >"$TMP/torn.json" 2>/dev/null
rc=$?
check "a torn page: exit 1" test "$rc" -eq 1
check "the store check fails (it opens, quick_check finds the page, or it cannot open)" \
    json "$TMP/torn.json" 'c("store")["status"] == "fail"' \
    'c("store").get("integrity", "ok") != "ok" or "cannot open" in c("store")["message"]'

check "no store yet where the daemon can create one: a warning" bash -c \
    '"$0" doctor -c "$1" --db "$2/new/w.db" --json | grep -q "the daemon will create it"' \
    "$BIN" "$TMP/good.yaml" "$TMP"

# --- an exposed listen address
printf 'daemon:\n  listen: 0.0.0.0:9747\n' >"$TMP/open.yaml"
"$BIN" doctor -c "$TMP/open.yaml" --db "$TMP/w.db" --json >"$TMP/open.json" 2>/dev/null
check "0.0.0.0 without TLS or token: exit 0 but a warning" test $? -eq 0
check "the listen check names both, and the keys that fix it" json "$TMP/open.json" \
    'c("listen")["status"] == "warn" and c("listen")["loopback"] is False' \
    'c("listen")["tls"] is False and c("listen")["auth"] is False' \
    '"daemon.tls.cert" in c("listen")["fix"] and "daemon.auth.token_file" in c("listen")["fix"]'

# --- NVML library present but its driver broken (not "absent"): a failure
FAKE_NVML_INIT_FAIL=999 "$BIN" doctor -c "$TMP/good.yaml" --db "$TMP/w.db" --json \
    >"$TMP/init.json" 2>/dev/null
check "nvmlInit failing with an unknown error: exit 1" test $? -eq 1
check "the nvml check fails with NVML's error" json "$TMP/init.json" \
    'c("nvml")["status"] == "fail" and "nvmlInit" in c("nvml")["message"]'
FAKE_NVML_INIT_FAIL=1 "$BIN" doctor -c "$TMP/good.yaml" --db "$TMP/w.db" --json \
    >"$TMP/nodrv.json" 2>/dev/null
check "no driver loaded: NVML is absent, RAPL still measures (exit 0)" test $? -eq 0

check "no AMD GPU and no hwmon sensor on the fixture: absent, not failed" json "$TMP/ok.json" \
    'c("amd")["status"] == "absent" and "kfd" in c("amd")["message"]' \
    'c("hwmon")["status"] == "absent"'

# --- AMD GPUs (the fake ROCm SMI) and hwmon meters: an ACPI power meter, two PMBus rails, Grace
hw=$TMP/sys/sys/class/hwmon
mkdir -p "$hw/hwmon0/device" "$hw/hwmon1/device" "$hw/hwmon2/device"
echo power_meter >"$hw/hwmon0/device/name"
echo 612000000 >"$hw/hwmon0/device/power1_average"
echo 1000 >"$hw/hwmon0/device/power1_average_interval"
echo pmbus >"$hw/hwmon1/name"
printf 'pin\n' >"$hw/hwmon1/power1_label"
echo 650000000 >"$hw/hwmon1/power1_input"
printf 'pout1\n' >"$hw/hwmon1/power2_label"
echo 600000000 >"$hw/hwmon1/power2_input"
echo power_meter >"$hw/hwmon2/device/name"
echo 300000000 >"$hw/hwmon2/device/power1_average"
echo 'Grace Power Socket 0' >"$hw/hwmon2/device/power1_oem_info"
WATTAGE_ROCM_SMI_LIBRARY=$PWD/$(dirname "$BIN")/tests/fakes/librocm_smi64.so.1 FAKE_RSMI_GPUS=2 \
    "$BIN" doctor -c "$TMP/good.yaml" --db "$TMP/w.db" --json >"$TMP/accel.json" 2>/dev/null
check "with AMD GPUs and hwmon meters: exit 0" test $? -eq 0
check "amd: two GPUs answering, each with its energy counter" json "$TMP/accel.json" \
    'c("amd")["status"] == "ok" and c("amd")["gpus"] == 2 and c("amd")["answering"] == 2' \
    'c("amd")["energy_counters"] == 2 and c("amd")["library"] == "rocm_smi"'
WATTAGE_ROCM_SMI_LIBRARY=$TMP/no-librocm_smi64.so.1 FAKE_RSMI_GPUS=2 \
    WATTAGE_AMD_SMI_LIBRARY=$PWD/$(dirname "$BIN")/tests/fakes/libamd_smi.so \
    "$BIN" doctor -c "$TMP/good.yaml" --db "$TMP/w.db" --json >"$TMP/amdsmi.json" 2>/dev/null
check "through AMD SMI: exit 0" test $? -eq 0
check "amd: two GPUs through AMD SMI, counters and no power" json "$TMP/amdsmi.json" \
    'c("amd")["status"] == "ok" and c("amd")["gpus"] == 2 and c("amd")["library"] == "amd_smi"' \
    'c("amd")["energy_counters"] == 2 and "through AMD SMI" in c("amd")["message"]' \
    '"power on 0" in c("amd")["message"]'
check "hwmon: the sensors by role, and what the wall sensor is for" json "$TMP/accel.json" \
    'c("hwmon")["status"] == "ok" and c("hwmon")["sensors"] == 4' \
    'c("hwmon")["roles"] == {"wall": 1, "cpu": 1, "psu_in": 1, "psu_out": 1}' \
    '"reconciles against its wall sensor" in c("hwmon")["message"]'

check "bad usage: exit 2" bash -c '"$0" doctor extra 2>/dev/null; [[ $? == 2 ]]' "$BIN"
check "a bad configuration: exit 2" bash -c \
    'printf "nosuch: 1\n" >"$1/x.yaml"; "$0" doctor -c "$1/x.yaml" 2>/dev/null; [[ $? == 2 ]]' \
    "$BIN" "$TMP"
finish
