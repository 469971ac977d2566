#!/usr/bin/env bash
# The systemd unit and the notification protocol. The unit passes `systemd-analyze verify` and
# keeps `systemd-analyze security` exposure at or below 2.5 (offline: the test machine need not
# run systemd). The real binary speaks sd_notify to a real datagram socket (an abstract name, as
# '@name' in NOTIFY_SOCKET): READY=1 with STATUS=, STATUS= summaries, WATCHDOG=1 at half of
# WATCHDOG_USEC, pings that stop while the poll loop is stuck (WATTAGE_TEST_HANG_FILE holds every
# collector before its poll) and resume after, RELOADING=1/READY=1 around SIGHUP, STOPPING=1 on
# SIGTERM, and syslog priority prefixes when stderr is the journal (JOURNAL_STREAM).
source "$(dirname "$0")/lib.sh"
UNIT=deploy/systemd/wattage.service

# --- the unit, offline. ExecStart must name an executable: verify a copy running the build.
sed "s#/usr/bin/wattage#$PWD/$BIN#" "$UNIT" >"$TMP/wattage.service"
out=$(systemd-analyze verify --man=no "$TMP/wattage.service" 2>&1)
check "systemd-analyze verify accepts the unit" bash -c '[[ $? == 0 && -z $1 ]]' _ "$out"
out=$(systemd-analyze security --offline=true --no-pager "$UNIT" 2>&1)
level=$(sed -n 's/.*Overall exposure level for wattage.service: \([0-9.]*\).*/\1/p' <<<"$out")
check "systemd-analyze security: exposure $level <= 2.5" \
    python3 -c 'import sys; sys.exit(not (sys.argv[1] and float(sys.argv[1]) <= 2.5))' "$level"
for f in deploy/systemd/wattage.sysusers deploy/systemd/wattage.tmpfiles; do
    check "$f names the wattage user/group" grep -q '^[uz] .*wattage' "$f"
done
check "the unit runs as the wattage user with the RAPL group rule shipped" \
    bash -c "grep -q '^User=wattage' $UNIT && grep -q 'energy_uj 0440 root wattage' deploy/systemd/wattage.tmpfiles"

# --- the notification protocol on the real binary
mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty WATTAGE_NVML_LIBRARY=$FAKE_NVML
export FAKE_NVML_GPUS=2 WATTAGE_CLOCK_STATUS=0
cat >"$TMP/peer.py" <<'PY'
import json, os, signal, socket, subprocess, sys, time

binary, tmp, port, mode = sys.argv[1:5]
name = "wt-notify-%d-%s" % (os.getpid(), mode)
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind("\0" + name)
hang = os.path.join(tmp, "hang")
log = open(os.path.join(tmp, "run-%s.log" % mode), "w")
st = os.fstat(log.fileno())
env = dict(os.environ, NOTIFY_SOCKET="@" + name, WATTAGE_TEST_HANG_FILE=hang)
env["JOURNAL_STREAM"] = "%d:%d" % (st.st_dev, st.st_ino)
if mode == "watchdog":
    env["WATCHDOG_USEC"] = "1000000"  # pings every 0.5 s
p = subprocess.Popen([binary, "run", "-c", "/dev/null", "--interval", "0.2",
                      "--summary-interval", "1s", "--db", os.path.join(tmp, mode + ".db"),
                      "--listen", "127.0.0.1:" + port], stdout=log, stderr=log, env=env)
got = []  # (time, message)
results = {}

def recv_until(pred, timeout):
    """Reads datagrams until pred(msg) is true (returns it) or timeout (returns None)."""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return None
        sock.settimeout(left)
        try:
            m = sock.recv(4096).decode()
        except socket.timeout:
            return None
        got.append((time.monotonic(), m))
        if pred(m):
            return m

def pings_between(t0, t1):
    return [t for t, m in got if t0 <= t < t1 and "WATCHDOG=1" in m.split("\n")]

try:
    ready = recv_until(lambda m: "READY=1" in m.split("\n"), 30)
    results["ready"] = ready
    status = recv_until(lambda m: m.startswith("STATUS=") and "gpus_up=2/2" in m, 15)
    results["status"] = status
    if mode == "watchdog":
        t0 = time.monotonic()
        recv_until(lambda m: False, 3.0)
        ts = pings_between(t0, t0 + 3.0)
        results["pings"] = len(ts)
        gaps = sorted(b - a for a, b in zip(ts, ts[1:]))
        results["median_gap"] = gaps[len(gaps) // 2] if gaps else -1
        # Stuck: every collector held before its poll. Liveness goes after 3 intervals (+1 s).
        open(hang, "w").close()
        t_hang = time.monotonic()
        quiet = None
        while quiet is None and time.monotonic() - t_hang < 12:
            recv_until(lambda m: False, 0.5)
            ps = pings_between(t_hang, time.monotonic() + 1)
            last = ps[-1] if ps else t_hang
            if time.monotonic() - last >= 2.5:
                quiet = time.monotonic() - t_hang
        results["quiet_after"] = quiet
        os.unlink(hang)
        t_back = time.monotonic()
        back = recv_until(lambda m: "WATCHDOG=1" in m.split("\n"), 10)
        results["resumed"] = back is not None
    else:
        t0 = time.monotonic()
        recv_until(lambda m: False, 1.5)
        results["pings"] = len(pings_between(t0, t0 + 1.5))
    p.send_signal(signal.SIGHUP)
    results["reloading"] = recv_until(lambda m: "RELOADING=1" in m.split("\n"), 15)
    results["ready_again"] = recv_until(lambda m: "READY=1" in m.split("\n"), 15)
    p.send_signal(signal.SIGTERM)
    results["stopping"] = recv_until(lambda m: "STOPPING=1" in m.split("\n"), 15)
    results["rc"] = p.wait(30)
finally:
    if p.poll() is None:
        p.kill()
    json.dump(results, open(os.path.join(tmp, mode + ".json"), "w"))
PY
python3 "$TMP/peer.py" "$BIN" "$TMP" "$(free_port)" watchdog
r() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]))' "$TMP/$1.json" "$2"; }
check "READY=1 comes with a STATUS= line" bash -c '[[ $1 == *"READY=1"* && $1 == *"STATUS=gpus_up="* ]]' _ "$(r watchdog ready)"
st=$(r watchdog status)
check "STATUS= summarises GPUs, power, store and readiness: $st" \
    bash -c '[[ $1 =~ ^STATUS=gpus_up=2/2\ gpu_power_w=[0-9.]+\ store=ok\ ready$ ]]' _ "$st"
n=$(r watchdog pings) gap=$(r watchdog median_gap)
check "WATCHDOG=1 at half of WATCHDOG_USEC: $n pings in 3 s, median gap $gap s" \
    python3 -c 'import sys; n, g = int(sys.argv[1]), float(sys.argv[2]); sys.exit(not (4 <= n <= 8 and 0.4 <= g <= 0.7))' "$n" "$gap"
q=$(r watchdog quiet_after)
check "pings stop while the poll loop is stuck (2.5 s quiet, reached $q s after the hang)" \
    python3 -c 'import sys; sys.exit(not (int(sys.argv[1]) >= 4 and sys.argv[2] != "None"))' "$n" "$q"
check "the daemon says the loop is stuck" grep -q 'error run: the poll loop is stuck' "$TMP/run-watchdog.log"
check "pings resume when the loop ticks again" bash -c '[[ $1 == True ]]' _ "$(r watchdog resumed)"
check "SIGHUP: RELOADING=1 then READY=1" bash -c '[[ $1 == *"RELOADING=1"*"MONOTONIC_USEC="* && $2 == *"READY=1"* ]]' _ \
    "$(r watchdog reloading)" "$(r watchdog ready_again)"
check "SIGTERM: STOPPING=1 and exit 0" bash -c '[[ $1 == STOPPING=1 && $2 == 0 ]]' _ "$(r watchdog stopping)" "$(r watchdog rc)"
check "stderr as the journal: every line starts with its syslog priority" \
    python3 -c '
import re, sys
lines = open(sys.argv[1]).read().splitlines()
assert lines and all(re.match(r"<[3467]>\d{4}-", l) for l in lines), lines[:5]
assert any(l.startswith("<6>") and " info  run: wattage " in l for l in lines)
assert any(l.startswith("<3>") and " error run: the poll loop is stuck" in l for l in lines)' "$TMP/run-watchdog.log"

# Without WATCHDOG_USEC: the same protocol, no pings.
python3 "$TMP/peer.py" "$BIN" "$TMP" "$(free_port)" plain
check "no WATCHDOG_USEC: READY=1, no pings" bash -c '[[ $1 == *"READY=1"* && $2 == 0 ]]' _ "$(r plain ready)" "$(r plain pings)"
check "no WATCHDOG_USEC: STOPPING=1 and exit 0" bash -c '[[ $1 == STOPPING=1 && $2 == 0 ]]' _ "$(r plain stopping)" "$(r plain rc)"
finish
