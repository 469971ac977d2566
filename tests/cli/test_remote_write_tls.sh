#!/usr/bin/env bash
# Remote write over TLS into the real Prometheus, which serves its receiver with mutual TLS
# (--web.config.file: a server certificate for 127.0.0.1, client certificates of our CA required).
# Four endpoints: the CA and a client certificate (accepted), no client certificate (refused in
# the handshake), the wrong CA (the server is not trusted), insecure_skip_verify with a client
# certificate (accepted). Refusals are failures retried with a log line naming the TLS error.
# Then `wattage energy --source https://` reads the series back over the same mutual TLS.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/prometheus_lib.sh"
source "$(dirname "$0")/remote_write_lib.sh"
source "$(dirname "$0")/pki_lib.sh"

if ! command -v "$PROMETHEUS" >/dev/null; then
    skip "remote write over TLS" "prometheus is not installed (scripts/deps.sh --test)"
    finish
fi
mkdir -p "$TMP/empty" "$TMP/pki" "$TMP/prom"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2
K=$TMP/pki
if ! { mkca ca "wattage test CA" &&
    mkcert server ca 127.0.0.1 "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth" &&
    mkcert client ca wattage "extendedKeyUsage=clientAuth" &&
    mkca other "another CA"; }; then
    not_ok "openssl makes the test certificates"
    finish
fi

PPORT=$(free_port)
printf 'global:\n  scrape_interval: 1h\n' >"$TMP/prom/prometheus.yml"
cat >"$TMP/prom/web.yml" <<WEB
tls_server_config:
  cert_file: $K/server.pem
  key_file: $K/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: $K/ca.pem
WEB
bg "$PROMETHEUS" --config.file="$TMP/prom/prometheus.yml" --storage.tsdb.path="$TMP/prom/data" \
    --web.listen-address="127.0.0.1:$PPORT" --web.enable-remote-write-receiver \
    --web.config.file="$TMP/prom/web.yml" --log.level=warn 2>"$TMP/prom/prometheus.log"
pcurl() { curl -s --cacert "$K/ca.pem" --cert "$K/client.pem" --key "$K/client.key" "$@"; }
wait_for 30 pcurl -f "https://127.0.0.1:$PPORT/-/ready" -o /dev/null ||
    { not_ok "Prometheus starts with TLS" "$(tail -5 "$TMP/prom/prometheus.log")"; finish; }
ok "Prometheus serves its receiver over mutual TLS"

U=https://127.0.0.1:$PPORT/api/v1/write
ep() { # NAME MATCH TLS
    printf '  - url: %s\n    name: %s\n    deadline: 0.5s\n    timeout: 2s\n    max_backoff: 1s\n    match: [%s]\n    tls: %s\n' \
        "$U" "$1" "$2" "$3"
}
rw_config "$TMP/w.yaml" node-t \
    "$(ep mtls "'wattage_gpu_[!u]*'" "{ca: $K/ca.pem, cert: $K/client.pem, key: $K/client.key}")" \
    "$(ep nocert "'wattage_gpu_*'" "{ca: $K/ca.pem}")" \
    "$(ep wrongca "'wattage_gpu_*'" "{ca: $K/other.pem, cert: $K/client.pem, key: $K/client.key}")" \
    "$(ep insecure "'wattage_gpu_up'" "{insecure_skip_verify: true, cert: $K/client.pem, key: $K/client.key}")"
WPORT=$(free_port)
bg "$BIN" run -c "$TMP/w.yaml" --listen "127.0.0.1:$WPORT" --db "$TMP/w.db" --interval 0.5 \
    2>"$TMP/run.log"
wait_for 20 curl -sf "http://127.0.0.1:$WPORT/healthz" -o /dev/null || { not_ok "the daemon starts" "$(tail -5 "$TMP/run.log")"; finish; }
w_from=$(/usr/bin/python3 -c 'import time; print(f"{time.time() + 1:.3f}")')
check "mtls: the CA and a client certificate are accepted" rw_wait_caught_up "$WPORT" mtls 30
check "insecure_skip_verify with a client certificate is accepted" rw_wait_caught_up "$WPORT" insecure 30
sleep 2
for e in nocert wrongca; do
    check "$e: refused, counted as failed ($(rw_metric "$WPORT" wattage_remote_write_samples_failed_total $e)), nothing sent" \
        bash -c '(( ${1%%.*} > 0 )) && [[ $2 == 0 ]]' _ \
        "$(rw_metric "$WPORT" wattage_remote_write_samples_failed_total $e)" \
        "$(rw_metric "$WPORT" wattage_remote_write_samples_sent_total $e)"
done
# TLS 1.3: the server's refusal of the certificate arrives after the client's handshake ended,
# as an alert or, when the server closes first, as a reset or unconnected socket.
check "nocert: the log names the refusal" \
    grep -qiE "endpoint nocert: cannot send .*(alert|certificate|SSL|handshake|reset|not connected|Recv failure|Send failure)" "$TMP/run.log"
check "wrongca: the log says the server's certificate is not trusted" \
    grep -qiE "endpoint wrongca: cannot send .*(certificate|SSL)" "$TMP/run.log"
pcurl "https://127.0.0.1:$PPORT/api/v1/query" --data-urlencode 'query=count(wattage_gpu_power_watts{node="node-t"})' >"$TMP/q.json"
check "the GPU series arrived over TLS (2 GPUs)" /usr/bin/python3 -c '
import json, sys; r = json.load(open(sys.argv[1]))["data"]["result"]; assert r and r[0]["value"][1] == "2", r' "$TMP/q.json"
pcurl "https://127.0.0.1:$PPORT/api/v1/query" --data-urlencode 'query=count(wattage_gpu_up{node="node-t"})' >"$TMP/q2.json"
check "wattage_gpu_up arrived through the insecure endpoint" /usr/bin/python3 -c '
import json, sys; r = json.load(open(sys.argv[1]))["data"]["result"]; assert r and r[0]["value"][1] == "2", r' "$TMP/q2.json"

# The fleet read path over the same mutual TLS: --source https:// with the CLI's certificates.
SRC=https://127.0.0.1:$PPORT
WATTAGE_CACERT=$K/ca.pem WATTAGE_CERT=$K/client.pem WATTAGE_KEY=$K/client.key \
    "$BIN" energy --from "$w_from" --to -1s --json --source "$SRC" >"$TMP/e.json" 2>"$TMP/e.err"
check "energy --source https://: the node's two GPU counters, read over mutual TLS" /usr/bin/python3 -c '
import json, sys; d = json.load(open(sys.argv[1])); s = d["series"]
assert len(s) == 2 and {x["node"] for x in s} == {"node-t"} and d["total_joules"] > 0, d
assert all(x["method"] == "counter" and x["coverage"] > 0.5 for x in s), s' "$TMP/e.json"
WATTAGE_CACERT=$K/ca.pem "$BIN" energy --source "$SRC" >/dev/null 2>"$TMP/e2.err"
check "without a client certificate: exit 1" test $? = 1
check "  and the TLS error named with the source ($(cat "$TMP/e2.err"))" grep -qiE "https://127.0.0.1:$PPORT: .*(SSL|alert|certificate|reset|Failure when receiving|Failed sending|Recv failure|Send failure|not connected)" "$TMP/e2.err"
WATTAGE_CACERT=$K/other.pem WATTAGE_CERT=$K/client.pem WATTAGE_KEY=$K/client.key \
    "$BIN" energy --source "$SRC" >/dev/null 2>"$TMP/e3.err"
rc=$?
check "the wrong CA: exit 1, the server's certificate not trusted" \
    bash -c '[[ $1 == 1 ]] && grep -qiE "(certificate|SSL)" "$2"' _ "$rc" "$TMP/e3.err"
finish
