#!/usr/bin/env bash
# TLS and mutual TLS with certificates made here with openssl: a CA, a server certificate for
# 127.0.0.1, a client certificate, and a second CA with its own client. The real Prometheus
# scrapes over mutual TLS; clients without a certificate, with one from the other CA, or over
# plain HTTP are refused; a private key that others may read is refused at start.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/prometheus_lib.sh"
source "$(dirname "$0")/pki_lib.sh"

mkdir -p "$TMP/empty" "$TMP/pki"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=8 FAKE_NVML_POWER=300,100,7
FAKE_NVML_T0=$(python3 -c 'import time; print(time.time())')
export FAKE_NVML_T0
K=$TMP/pki
INTERVAL=0.5

# --- certificates
if ! mkpki; then
    not_ok "openssl makes the test certificates"
    finish
fi
ok "openssl makes the test certificates"

# code URL [CURL ARGS...]: the HTTP status ("000" when the connection failed)
code() { local url=$1; shift; curl -s -o "$TMP/body" -w '%{http_code}' --max-time 5 "$@" "$url"; }

# --- a key readable by others is refused, through the mode bits (root too)
cp "$K/server.key" "$K/loose.key"
chmod 644 "$K/loose.key"
tls_config "$TMP/loose.yaml" "$K/server.pem" "$K/loose.key" "$K/ca.pem"
out=$(timeout 10 "$BIN" run -c "$TMP/loose.yaml" --listen "127.0.0.1:$(free_port)" --db "$TMP/l.db" 2>&1)
rc=$?
check "a key readable by others is refused (rc=$rc)" bash -c '[[ $0 == 1 && $1 == *"daemon.tls.key: "*"loose.key is accessible by group or others (mode 0644)"* ]]' "$rc" "$out"
chmod 640 "$K/loose.key"
out=$(timeout 10 "$BIN" run -c "$TMP/loose.yaml" --listen "127.0.0.1:$(free_port)" --db "$TMP/l.db" 2>&1)
check "a key readable by the group is refused too" bash -c '[[ $0 == *"mode 0640"* ]]' "$out"
tls_config "$TMP/mismatch.yaml" "$K/server.pem" "$K/client.key" ""
out=$(timeout 10 "$BIN" run -c "$TMP/mismatch.yaml" --listen "127.0.0.1:$(free_port)" --db "$TMP/l.db" 2>&1)
rc=$?
check "a key that does not match the certificate is refused with the file names (rc=$rc)" \
    bash -c '[[ $0 == 1 && $1 == *"server.pem"* && $1 == *"client.key"* ]]' "$rc" "$out"
printf 'daemon:\n  tls:\n    cert: "%s"\n' "$K/server.pem" >"$TMP/half.yaml"
out=$(timeout 10 "$BIN" run -c "$TMP/half.yaml" --listen "127.0.0.1:$(free_port)" --db "$TMP/l.db" 2>&1)
check "a certificate without a key is refused" bash -c '[[ $0 == *"cert and key go together"* ]]' "$out"

# --- mutual TLS
tls_config "$TMP/mtls.yaml" "$K/server.pem" "$K/server.key" "$K/ca.pem"
WPORT=$(free_port)
bg "$BIN" run -c "$TMP/mtls.yaml" --listen "127.0.0.1:$WPORT" --db "$TMP/w.db" --interval "$INTERVAL" \
    2>"$TMP/wattage.log"
U=https://127.0.0.1:$WPORT
GOOD=(--cacert "$K/ca.pem" --cert "$K/client.pem" --key "$K/client.key")
wait_for 10 curl -s -o /dev/null "${GOOD[@]}" "$U/healthz"
check "it logs https and required client certificates" grep -q "serving on https://127.0.0.1:$WPORT client_certificates=required" "$TMP/wattage.log"
c=$(code "$U/metrics" "${GOOD[@]}")
check "a client certificate from the CA reads /metrics" test "$c" = 200
check "... and gets the exposition" grep -q '^wattage_gpu_power_watts{gpu="7"' "$TMP/body"
c=$(code "$U/metrics" --cacert "$K/ca.pem")
check "no client certificate: refused (got $c)" bash -c '[[ $0 == 403 || $0 == 000 ]]' "$c"
[[ $c == 403 ]] && check "... with a JSON reason" grep -q '"error":"a client certificate is required"' "$TMP/body"
c=$(code "$U/metrics" --cacert "$K/ca.pem" --cert "$K/intruder.pem" --key "$K/intruder.key")
check "a client certificate from another CA: refused (got $c)" bash -c '[[ $0 == 403 || $0 == 000 ]]' "$c"
[[ $c == 403 ]] && check "... saying it is not trusted" grep -q 'not trusted' "$TMP/body"
c=$(code "http://127.0.0.1:$WPORT/metrics")
check "plain HTTP on the TLS port: refused (got $c)" test "$c" = 000
check "the daemon still serves after the refusals" test "$(code "$U/healthz" "${GOOD[@]}")" = 200

# --- the real Prometheus scrapes over mutual TLS; a second job with the other CA's client fails
PPORT=$(free_port)
start_prometheus "$PPORT" "$WPORT" "    scheme: https
    tls_config:
      ca_file: $K/ca.pem
      cert_file: $K/client.pem
      key_file: $K/client.key
  - job_name: intruder
    scheme: https
    tls_config:
      ca_file: $K/ca.pem
      cert_file: $K/intruder.pem
      key_file: $K/intruder.key
    static_configs:
      - targets: [\"127.0.0.1:$WPORT\"]"
if ! wait_target_up 20; then
    not_ok "Prometheus scrapes wattage over mutual TLS" "target: $(target_health)" \
        "$(tail -5 "$TMP/prom/prometheus.log")"
    finish
fi
ok "Prometheus scrapes wattage over mutual TLS"
WINDOW=10
sleep "$(python3 -c "print($WINDOW + 1.5)")"
te=$(python3 -c 'import time; print(round(time.time() - 0.5, 3))')
prom_query "wattage_gpu_power_watts[${WINDOW}s]" "$te" >"$TMP/power.json"
check "power samples over mutual TLS are the fake's, 8 GPUs" \
    check_power_samples "$TMP/power.json" "$INTERVAL" "$TMP/w.db"
prom_query "increase(wattage_gpu_energy_joules_total[${WINDOW}s])" "$te" \
    >"$TMP/energy.json"
check "increase() over mutual TLS within 6% of the exact integral, 8 GPUs" \
    check_increase "$TMP/energy.json" "$te" "$WINDOW" 0.06
h=$(target_health intruder)
check "Prometheus with the other CA's certificate is refused ($h)" bash -c '[[ $0 == down* ]]' "$h"

# --- TLS without client certificates
tls_config "$TMP/tls.yaml" "$K/server.pem" "$K/server.key" ""
P2=$(free_port)
bg "$BIN" run -c "$TMP/tls.yaml" --listen "127.0.0.1:$P2" --db "$TMP/t.db" 2>"$TMP/tls.log"
wait_for 10 curl -s -o /dev/null --cacert "$K/ca.pem" "https://127.0.0.1:$P2/healthz"
c=$(code "https://127.0.0.1:$P2/healthz" --cacert "$K/ca.pem")
check "TLS without client_ca: a client without a certificate is served" test "$c" = 200
c=$(code "https://127.0.0.1:$P2/healthz")
check "the server certificate does not verify without the CA (got $c)" test "$c" = 000
finish
