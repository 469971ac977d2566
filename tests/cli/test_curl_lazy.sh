#!/bin/bash
# libcurl is loaded with dlopen by the parts that speak HTTP out, never linked: a daemon
# configured without any of them does not map it (nor the TLS, LDAP, Kerberos... libraries it
# pulls in); one with a webhook maps it once started; without the library (here a path that
# names nothing, through WATTAGE_CURL_LIBRARY) the daemon with a webhook and the CLI's --source
# say which library and Debian package are missing.
source "$(dirname "$0")/lib.sh"

check "the binary does not link libcurl" \
    bash -c "! readelf -d '$BIN' | grep -q 'NEEDED.*libcurl'"

maps_curl() { grep -q 'libcurl' "/proc/$1/maps"; }

port=$(free_port)
FAKE_NVML_GPUS=2 WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" run --interval 1 \
    --listen 127.0.0.1:$port --db "$TMP/a.db" >"$TMP/a.log" 2>&1 &
pid=$!
T_PIDS="$T_PIDS $pid"
check "the default daemon answers" wait_for 20 curl -sf "http://127.0.0.1:$port/healthz" -o /dev/null
sleep 2
check "it has not mapped libcurl" bash -c "! grep -q libcurl /proc/$pid/maps"
check "nor OpenSSL's libssl (libcurl's)" bash -c "! grep -q 'libssl\.so' /proc/$pid/maps"
kill -TERM $pid
wait $pid
check "it stops cleanly" test $? -eq 0

hook=$(free_port)
cat >"$TMP/hook.yaml" <<YAML
alerts:
  webhook:
    url: "http://127.0.0.1:$hook/hook"
YAML
port=$(free_port)
FAKE_NVML_GPUS=2 WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" run -c "$TMP/hook.yaml" --interval 1 \
    --listen 127.0.0.1:$port --db "$TMP/b.db" >"$TMP/b.log" 2>&1 &
pid=$!
T_PIDS="$T_PIDS $pid"
check "the daemon with a webhook answers" wait_for 20 curl -sf "http://127.0.0.1:$port/healthz" -o /dev/null
check "it has mapped libcurl" maps_curl $pid
kill -TERM $pid
wait $pid
check "it stops cleanly" test $? -eq 0

port=$(free_port)
WATTAGE_CURL_LIBRARY=$TMP/none/libcurl.so.4 FAKE_NVML_GPUS=2 WATTAGE_NVML_LIBRARY=$FAKE_NVML \
    timeout 20 "$BIN" run -c "$TMP/hook.yaml" --interval 1 --listen 127.0.0.1:$port \
    --db "$TMP/c.db" >"$TMP/c.log" 2>&1
rc=$?
check "without libcurl the daemon with a webhook does not start (exit $rc)" test $rc -ne 0 -a $rc -ne 124
check "and names the section, the library and its package ($(grep -m1 libcurl "$TMP/c.log"))" \
    grep -q "alerts.webhook: cannot load $TMP/none/libcurl.so.4 (Debian package libcurl4)" "$TMP/c.log"

WATTAGE_CURL_LIBRARY=$TMP/none/libcurl.so.4 "$BIN" job show x --source http://127.0.0.1:9 \
    >"$TMP/d.out" 2>"$TMP/d.err"
rc=$?
check "without libcurl --source fails (exit $rc)" test $rc -ne 0
check "and says which library ($(head -c 200 "$TMP/d.err"))" \
    grep -q "cannot load $TMP/none/libcurl.so.4 (Debian package libcurl4)" "$TMP/d.err"
finish
