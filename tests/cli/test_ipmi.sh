#!/usr/bin/env bash
# IPMI DCMI power on the real daemon, against OpenIPMI's BMC simulator (ipmi_sim, Debian's
# openipmi) on loopback: IPMI 2.0 (RMCP+) sessions, with tests/peers/ipmi_sim/dcmi_power.so
# loaded into it to answer DCMI Get Power Reading and Get Temperature Reading, which ipmi_sim
# alone does not. Four simulated BMCs: a healthy one, one whose clock is 30 s behind, one
# without DCMI, one with a BMC key (K_g: read with k_g_file, refused without). Asserted:
# the power, its statistics and period on /metrics with the facility labels; the topology's bmc
# meter reads it (the node's unaccounted watts); the skew of each BMC's clock, with one warning
# for the one beyond daemon.clock_max_error; a wrong password, a privilege the BMC refuses, no
# DCMI, a password file others may read, an absent /dev/ipmi0 and a BMC that stops answering
# (SIGSTOP) are each logged once with what went wrong, while the GPU ticks keep their time and
# the healthy BMC stays up; the stopped BMC is read again once it answers; the site's rolling
# power mean (its facility_total meter) is on /metrics and in /api/v1/status; a BMC that says
# "no power measurement" keeps up 1 and drops its power series until it measures again.
# DCMI inlet temperatures (Get Temperature Reading, entity 0x40): each sensor of the healthy BMC
# on /metrics with its instance, below zero too, judged against the ASHRAE envelope; a BMC
# without them (0xC1) said once, its power read all the same.
source "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
SIM=$(command -v ipmi_sim)
MOD=$PWD/$(dirname "$BIN")/tests/peers/ipmi_sim/dcmi_power.so
[[ $BIN == /* ]] && MOD=$(dirname "$BIN")/tests/peers/ipmi_sim/dcmi_power.so
[[ -n $SIM ]] || { not_ok "ipmi_sim is installed (Debian openipmi)"; finish; }
[[ -f $MOD ]] || { not_ok "the DCMI module $MOD is built (Debian libopenipmi-dev)"; finish; }
mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=1 FAKE_NVML_POWER=250,0,5

free_udp_port() {
    $PY -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
udp_bound() { grep -qi ":$(printf '%04X' "$1") " /proc/net/udp; }
# power NAME LINES...: what BMC NAME's DCMI module answers (read at every request)
power() {
    local n=$1
    shift
    printf '%s\n' "$@" >"$TMP/$n/power.new" && mv "$TMP/$n/power.new" "$TMP/$n/power"
}
# start_bmc NAME: an ipmi_sim on a free UDP port of 127.0.0.1, user wattage, its own state dir
declare -A PORT_OF PID_OF
start_bmc() {
    local n=$1 port
    port=$(free_udp_port)
    mkdir -p "$TMP/$n/state"
    cat >"$TMP/$n/lan.conf" <<C
name "$n"
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 $port
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid a123456789abcdefa123456789abcdef${BMC_KEY:+
    bmc_key $BMC_KEY}
  endlan
  user 2 true "wattage" "s3cret-ipmi" admin 10 none md2 md5 straight
loadlib "$MOD" "$TMP/$n/power"
C
    printf 'mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\nmc_enable 0x20\n' \
        >"$TMP/$n/cmds.emu"
    "$SIM" -c "$TMP/$n/lan.conf" -f "$TMP/$n/cmds.emu" -s "$TMP/$n/state" -n \
        </dev/null >"$TMP/$n/sim.log" 2>&1 &
    PID_OF[$n]=$!
    T_PIDS="$T_PIDS $!"
    PORT_OF[$n]=$port
    wait_for 10 udp_bound "$port" || { not_ok "ipmi_sim $n listens on $port" "$(cat "$TMP/$n/sim.log")"; finish; }
}

start_bmc good
start_bmc skewed
start_bmc nodcmi
BMC_KEY='"keyed-bmc-k"' start_bmc keyed
power good "current 412" "minimum 380" "maximum 455" "average 417" "period_ms 60000" \
    "inlet 24,-3,35"
power skewed "current 300" "minimum 290" "maximum 310" "average 301" "period_ms 5000" \
    "clock_offset -30" "temps no"
power nodcmi "current 1" "dcmi no"
power keyed "current 640" "minimum 600" "maximum 700" "average 650" "period_ms 1000"
printf '0x6b657965642d626d632d6b\n' >"$TMP/kg" # "keyed-bmc-k", in hexadecimal
chmod 600 "$TMP/kg"
printf 's3cret-ipmi\n' >"$TMP/pw"
printf 'wrong-one\n' >"$TMP/badpw"
cp "$TMP/pw" "$TMP/openpw"
chmod 600 "$TMP/pw" "$TMP/badpw"
chmod 644 "$TMP/openpw"

# ipmi_sim hashes the RAKP keys with the privilege of the Open Session request, which FreeIPMI's
# opensesspriv workaround matches; it asks admin for group extension commands (DCMI).
lan() { # NAME BMC [more keys]
    printf '      - {name: %s, host: "127.0.0.1:%s", username: wattage, password_file: %s,\n' \
        "$1" "${PORT_OF[$2]}" "${PW:-$TMP/pw}"
    printf '         privilege: %s, workarounds: [opensesspriv], timeout: 1s%s}\n' "${PRIV:-admin}" "${3:-}"
}
{
    cat <<Y
topology:
  node: n1
  meters:
    - {target: good, role: bmc, node: n1}
    - {target: good, point: dcmi, role: facility_total}
facility:
  kpi_window: 6s
  kpi_interval: 1s
store:
  flush_interval: 0.5s
collectors:
  ipmi:
    interval: 500ms
    targets:
Y
    lan good good ", node: n1"
    lan skewed skewed
    lan nodcmi nodcmi
    PW=$TMP/badpw lan badpass good
    PRIV=user lan lowpriv good
    PW=$TMP/openpw lan openpw good
    lan keyed keyed ", k_g_file: $TMP/kg"
    lan unkeyed keyed
    printf '      - {name: self, inband: true, device: %s}\n' "$TMP/no-ipmi0"
} >"$TMP/i.yaml"
check "check-config accepts the IPMI targets" "$BIN" check-config "$TMP/i.yaml"

PORT=$(free_port)
URL=http://127.0.0.1:$PORT
bg "$BIN" run -c "$TMP/i.yaml" --db "$TMP/i.db" --interval 0.5 --log-level debug \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
DPID=$!
scrape() { curl -s "$URL/metrics" >"$TMP/m.txt"; }
has() { scrape && grep -qF -- "$1" "$TMP/m.txt"; }
G='source="ipmi",target="good",point="dcmi",kind="chassis",node="n1"'
if ! wait_for 20 has "wattage_facility_power_watts{$G} 412"; then
    not_ok "the healthy BMC's power is on /metrics" "$(grep -i ipmi "$TMP/run.log" | tail -5)"
    finish
fi
ok "the healthy BMC's current power is on /metrics: wattage_facility_power_watts{$G} 412"
maps=$(grep -oE 'lib(netsnmp|modbus|freeipmi)[^/]*$' "/proc/$DPID/maps" | sort -u | paste -sd' ')
check "FreeIPMI is loaded for the IPMI targets, net-snmp and libmodbus are not ($maps)" \
    bash -c '[[ $1 == libfreeipmi.so.17* && $1 != *" "* ]]' _ "$maps"
check "  its minimum, maximum and average over the period" bash -c '
    grep -qF "wattage_facility_power_statistic_watts{$1,statistic=\"minimum\"} 380" "$2" &&
    grep -qF "wattage_facility_power_statistic_watts{$1,statistic=\"maximum\"} 455" "$2" &&
    grep -qF "wattage_facility_power_statistic_watts{$1,statistic=\"average\"} 417" "$2"' _ "$G" "$TMP/m.txt"
check "  the statistics period in seconds (60000 ms)" \
    grep -qF "wattage_facility_power_statistics_period_seconds{$G} 60" "$TMP/m.txt"
check "  wattage_facility_up 1 with the target's placement" \
    grep -qF 'wattage_facility_up{source="ipmi",target="good",node="n1"} 1' "$TMP/m.txt"
wait_for 10 has 'wattage_clock_peer_skew_seconds{source="ipmi",target="skewed"}'
skew() { # TARGET: its skew on /metrics
    sed -n "s/^wattage_clock_peer_skew_seconds{source=\"ipmi\",target=\"$1\"[^}]*} //p" "$TMP/m.txt"
}
near() { $PY -c 'import sys; sys.exit(0 if sys.argv[1] and abs(float(sys.argv[1]) - float(sys.argv[2])) <= float(sys.argv[3]) else 1)' "$@"; }
check "the healthy BMC's clock skew is about 0 ($(skew good) s)" near "$(skew good)" 0 0.6
check "the skewed BMC's is about -30 s ($(skew skewed) s)" near "$(skew skewed)" -30 0.6
check "  its power is read all the same (300 W)" \
    grep -qF 'wattage_facility_power_watts{source="ipmi",target="skewed",point="dcmi",kind="chassis"} 300' "$TMP/m.txt"

# DCMI inlet temperatures.
T='source="ipmi",target="good",point="inlet",node="n1"'
check "the healthy BMC's inlet temperatures are on /metrics, one per sensor" bash -c '
    grep -qF "wattage_facility_temperature_celsius{$1,instance=\"1\"} 24" "$2" &&
    grep -qF "wattage_facility_temperature_celsius{$1,instance=\"2\"} -3" "$2" &&
    grep -qF "wattage_facility_temperature_celsius{$1,instance=\"3\"} 35" "$2"' _ "$T" "$TMP/m.txt"
inlets() { has "wattage_inlet_within_envelope{$T,instance=\"3\",envelope=\"recommended\"} 0"; }
check "  judged against the ASHRAE envelope (35 C: outside A1's recommended 18-27 C)" wait_for 10 inlets
check "  24 C within it" grep -qF "wattage_inlet_within_envelope{$T,instance=\"1\",envelope=\"recommended\"} 1" "$TMP/m.txt"
check "a BMC without DCMI temperatures: said once, no temperature series" bash -c '
    [[ $(grep -c "ipmi: skewed: the BMC gives no DCMI inlet temperature (Get Temperature Reading answered completion code 0xC1: invalid command); its power is read all the same" "$0") -eq 1 ]] &&
    ! grep -q "wattage_facility_temperature_celsius{source=\"ipmi\",target=\"skewed\"" "$1"' \
    "$TMP/run.log" "$TMP/m.txt"

# The failures: each logged once, each saying what went wrong.
sleep 4
once() { # NAME PATTERN: exactly one "poll failed" or "cannot start" line for target NAME, matching
    local n c
    n=$(grep -c "ipmi:$1: \(poll failed\|cannot start\|not available\)" "$TMP/run.log")
    c=$(grep "ipmi:$1: \(poll failed\|cannot start\|not available\)" "$TMP/run.log" | grep -c -- "$2")
    [[ $n -eq 1 && $c -eq 1 ]] || { echo "# $1: $n lines, $c matching: $(grep "ipmi:$1:" "$TMP/run.log" | head -3)"; false; }
}
check "no DCMI: said once, with the completion code" \
    once nodcmi 'the BMC does not support DCMI power readings (Get Power Reading answered completion code 0xC1: invalid command)'
check "a wrong password: said once" once badpass 'cannot open an IPMI 2.0 session as "wattage": password invalid'
check "a privilege the BMC refuses for DCMI: said once, with what to set" \
    once lowpriv 'needs a higher privilege (completion code 0xD4): set privilege: operator or admin'
check "a password file others may read: refused once, with the fix" \
    once openpw "password_file: $TMP/openpw is accessible by group or others (mode 0644); it holds a secret: chmod 600"
check "a BMC with a key (K_g): read with k_g_file" \
    grep -qF 'wattage_facility_power_watts{source="ipmi",target="keyed",point="dcmi",kind="chassis"} 640' "$TMP/m.txt"
check "  without it the session is refused, said once" once unkeyed 'cannot open an IPMI 2.0 session as "wattage"'
check "no /dev/ipmi0 for the in-band target: not available, said once" \
    once self "no $TMP/no-ipmi0 (load the kernel's ipmi_si and ipmi_devintf modules)"
check "the skewed BMC's clock: one warning, beyond daemon.clock_max_error" \
    test "$(grep -c 'ipmi: skewed: its clock is -\(29\|30\)\.[0-9] s (+/- 0.5 s) from this host.s, beyond daemon.clock_max_error (0.100 s)' "$TMP/run.log")" -eq 1
check "  and none for the healthy one" bash -c '! grep -q "ipmi: good: its clock" "$0"' "$TMP/run.log"
scrape
check "the failing targets are down, each on its own" bash -c '
    for t in nodcmi badpass lowpriv; do
        grep -qF "wattage_collector_up{collector=\"ipmi:$t\"} 0" "$0" || exit 1
        grep -qF "wattage_facility_up{source=\"ipmi\",target=\"$t\"} 0" "$0" || exit 1
    done' "$TMP/m.txt"
check "  while the healthy one stays up" grep -qF 'wattage_collector_up{collector="ipmi:good"} 1' "$TMP/m.txt"

# The topology's bmc meter reads the DCMI power: the node's wall, 412 W against a 250 W GPU.
unacc() { has 'wattage_node_unaccounted_power_watts{node="n1"}'; }
check "the bmc meter feeds the reconciliation" wait_for 40 unacc
w=$(sed -n 's/^wattage_node_unaccounted_power_watts{node="n1"} //p' "$TMP/m.txt")
check "  unaccounted = 412 W - 250 W = 162 W ($w)" near "$w" 162 3

# A BMC that stops answering: timed out, said once, read again when it answers.
kill -STOP "${PID_OF[skewed]}"
down() { has 'wattage_facility_up{source="ipmi",target="skewed"} 0'; }
check "a stopped BMC goes down" wait_for 15 down
sleep 3
check "  its timeout is said once" once skewed 'no answer\( to DCMI Get Power Reading\)\? within 1 s'
check "  the healthy BMC is still read meanwhile" grep -qF 'wattage_collector_up{collector="ipmi:good"} 1' "$TMP/m.txt"
kill -CONT "${PID_OF[skewed]}"
check "  once it answers again it is read again" wait_for 30 grep -q 'ipmi:skewed: recovered after' "$TMP/run.log"
check "  with its power" wait_for 5 has 'wattage_facility_power_watts{source="ipmi",target="skewed",point="dcmi",kind="chassis"} 300'

# The site's rolling mean (the facility_total meters: the healthy BMC here), on /metrics and in
# /api/v1/status, once its minute is half covered.
site() { has 'wattage_site_power_average_watts{window="1m"}'; }
check "the site's 1-min power mean appears" wait_for 45 site
w=$(sed -n 's/^wattage_site_power_average_watts{window="1m"} //p' "$TMP/m.txt")
check "  412 W, the facility_total meter's ($w)" near "$w" 412 0.01
check "  and in /api/v1/status" bash -c "curl -s $URL/api/v1/status | $PY -c '
import json, sys
a = json.load(sys.stdin)[\"power_average_watts\"]
assert abs(a[\"site\"][\"1m\"] - 412) < 0.01 and abs(a[\"node\"][\"1m\"] - 250) < 0.01, a'"

# "No power measurement available": up, without a power series, said once; then back.
power good "current 412" "state inactive"
gone() { scrape && ! grep -qF "wattage_facility_power_watts{$G}" "$TMP/m.txt"; }
check "a BMC without a power measurement drops its power series" wait_for 10 gone
check "  but stays up" grep -qF 'wattage_facility_up{source="ipmi",target="good",node="n1"} 1' "$TMP/m.txt"
sleep 2
check "  said once" test "$(grep -c 'ipmi: good: the BMC has no power measurement now' "$TMP/run.log")" -eq 1
power good "current 420" "minimum 380" "maximum 455" "average 417" "period_ms 60000"
check "  and measures again" wait_for 10 has "wattage_facility_power_watts{$G} 420"
check "  which is said once too" test "$(grep -c 'ipmi: good: the BMC measures power again' "$TMP/run.log")" -eq 1

check_ticks "the GPU ticks kept their time through every BMC failure" "$TMP/run.log" 20
finish
