#!/usr/bin/env bash
# Jobs under mutual TLS, with certificates made here with openssl (tests/cli/pki_lib.sh): the
# CLI's job, jobs and exec present a client certificate given by flags (--cacert --cert --key),
# by the environment (WATTAGE_CACERT, WATTAGE_CERT, WATTAGE_KEY) or by the configuration
# (client.*); the Python client marks epochs over mutual TLS under `wattage exec` and with
# configure(). A client without a certificate, or with one from another CA, is refused, and
# `wattage exec` refused that way still runs its command, says once that energy is not being
# recorded and exits with the command's status.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/pki_lib.sh"

mkdir -p "$TMP/empty" "$TMP/pki"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_POWER=300,100,7
FAKE_NVML_T0=$(python3 -c 'import time; print(time.time())')
export FAKE_NVML_T0
export PYTHONPATH=$PWD/clients/python
K=$TMP/pki
if ! mkpki; then
    not_ok "openssl makes the test certificates"
    finish
fi
ok "openssl makes the test certificates"

printf 'tok-%s\n' "$RANDOM$RANDOM" >"$TMP/token"
chmod 600 "$TMP/token"
tls_config "$TMP/d.yaml" "$K/server.pem" "$K/server.key" "$K/ca.pem"
printf '  auth:\n    token_file: "%s"\nstore:\n  flush_interval: 200ms\n' "$TMP/token" >>"$TMP/d.yaml"
PORT=$(free_port)
U=https://127.0.0.1:$PORT
bg "$BIN" run -c "$TMP/d.yaml" --listen "127.0.0.1:$PORT" --db "$TMP/w.db" --interval 0.2 \
    2>"$TMP/run.log"
TLS=(--cacert "$K/ca.pem" --cert "$K/client.pem" --key "$K/client.key")
check "the daemon answers over mutual TLS" \
    wait_for 15 curl -sf -o /dev/null "${TLS[@]}" "$U/healthz"

# --- flags
id=$("$BIN" job start flags --url "$U" "${TLS[@]}" --token-file "$TMP/token" 2>"$TMP/e")
rc=$?
check "job start with --cacert --cert --key: exit 0, the id ($rc: $(cat "$TMP/e"))" \
    bash -c '[[ $0 == 0 && $1 =~ ^[0-9]+$ ]]' "$rc" "$id"
"$BIN" job mark flags --tokens 1000 --url "$U" "${TLS[@]}" --token-file "$TMP/token" 2>"$TMP/e"
check "job mark with a client certificate: exit 0 ($(cat "$TMP/e"))" test $? -eq 0
"$BIN" job start nocert --url "$U" --cacert "$K/ca.pem" --token-file "$TMP/token" 2>"$TMP/e"
rc=$?
check "job start without a client certificate is refused (exit $rc)" test "$rc" -ne 0
"$BIN" job start intruder --url "$U" --cacert "$K/ca.pem" --cert "$K/intruder.pem" \
    --key "$K/intruder.key" --token-file "$TMP/token" 2>"$TMP/e"
rc=$?
check "job start with another CA's certificate is refused (exit $rc)" test "$rc" -ne 0
msg=$("$BIN" jobs --url "$U" --cacert "$K/ca.pem" --cert "$K/client.pem" 2>&1)
rc=$?
check "--cert without --key: exit 2, says they go together" \
    bash -c '[[ $0 == 2 && $1 == *"go together"* ]]' "$rc" "$msg"

# --- the configuration's client section
printf 'client:\n  url: "%s"\n  cacert: "%s"\n  cert: "%s"\n  key: "%s"\n  token_file: "%s"\n' \
    "$U" "$K/ca.pem" "$K/client.pem" "$K/client.key" "$TMP/token" >"$TMP/client.yaml"
out=$("$BIN" check-config "$TMP/client.yaml" 2>&1)
check "check-config accepts the client keys ($out)" test $? -eq 0
printf 'client:\n  cert: "%s"\n' "$K/client.pem" >"$TMP/half.yaml"
out=$("$BIN" check-config "$TMP/half.yaml" 2>&1)
check "check-config: client.cert without client.key names the line ($out)" \
    bash -c '[[ $0 == *"half.yaml:2: client: cert and key go together"* ]]' "$out"
printf 'client:\n  url: "127.0.0.1:9747"\n' >"$TMP/badurl.yaml"
out=$("$BIN" check-config "$TMP/badurl.yaml" 2>&1)
check "check-config: a client.url without a scheme is refused ($out)" \
    bash -c '[[ $0 == *"badurl.yaml:2: client.url: expected http://"* ]]' "$out"
"$BIN" jobs -c "$TMP/client.yaml" --json >"$TMP/jobs.json" 2>"$TMP/e"
check "jobs with the client section lists the job ($(cat "$TMP/e"))" \
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert 'flags' in [j['name'] for j in d['jobs']]" "$TMP/jobs.json"
"$BIN" job end flags -c "$TMP/client.yaml" >"$TMP/end.txt" 2>"$TMP/e"
check "job end with the client section: exit 0 ($(cat "$TMP/e"))" test $? -eq 0

# --- the environment
WATTAGE_URL=$U WATTAGE_CACERT=$K/ca.pem WATTAGE_CERT=$K/client.pem WATTAGE_KEY=$K/client.key \
    "$BIN" job show flags --json >"$TMP/show.json" 2>"$TMP/e"
check "job show with WATTAGE_CACERT/CERT/KEY ($(cat "$TMP/e"))" \
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['state'] == 'ended' and d['counters']['tokens'] == 1000, d" "$TMP/show.json"

# --- exec and the Python client: marks over mutual TLS
cat >"$TMP/train.py" <<'PY'
import os, sys, time
import wattage_client as wc
assert os.environ["WATTAGE_URL"].startswith("https://"), os.environ["WATTAGE_URL"]
for k in ("WATTAGE_CACERT", "WATTAGE_CERT", "WATTAGE_KEY"):
    assert os.path.isabs(os.environ[k]), (k, os.environ.get(k))
for epoch in range(1, 3):
    time.sleep(0.4)
    assert wc.mark("epoch", index=epoch, tokens=5000), "mark %d failed" % epoch
sys.exit(4)
PY
ABS=$(realpath "$BIN")
(cd "$TMP" && "$ABS" exec -c client.yaml --job pytls -- python3 train.py) >"$TMP/x.out" 2>"$TMP/x.err"
rc=$?
check "exec over mutual TLS runs the script; its status passes through (4, got $rc)" test "$rc" -eq 4
check "... and prints the job's energy" grep -q 'energy .* kWh' "$TMP/x.err"
"$BIN" job show pytls -c "$TMP/client.yaml" --json >"$TMP/py.json" 2>"$TMP/e"
check "the client's marks under mutual TLS are stored: 2 epochs, 10000 tokens" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
ep = [p for p in d['phases'] if p['kind'] == 'epoch']
assert [p['index'] for p in ep] == [1, 2], ep
assert d['counters']['tokens'] == 10000, d['counters']
" "$TMP/py.json"
id=$("$BIN" job start pyconf -c "$TMP/client.yaml")
python3 - "$U" "$K" "$TMP/token" "$id" >"$TMP/conf.out" 2>"$TMP/conf.err" <<'PY'
import sys
import wattage_client as wc
url, k, tokf, job = sys.argv[1:5]
tok = open(tokf).read().strip()
wc.configure(job=job, url=url, token=tok, cacert=k + "/ca.pem")
no_cert = wc.mark("epoch", index=0, tokens=1)          # refused: no client certificate
wc.configure(cert=k + "/client.pem", key=k + "/client.key")
with_cert = wc.mark("epoch", index=1, tokens=7)
print(no_cert, with_cert)
PY
check "configure(): without a certificate the mark fails, with one it is stored ($(cat "$TMP/conf.out" "$TMP/conf.err"))" \
    test "$(cat "$TMP/conf.out")" = "False True"
check "... and the failure is one warning" test "$(grep -c 'wattage_client:' "$TMP/conf.err")" -eq 1

# --- exec refused by the TLS layer still runs the command: the daemon's own configuration (its
# address and certificate, no client certificate), no certificate, another CA's certificate
cp "$TMP/d.yaml" "$TMP/daemon.yaml"
printf 'daemon:\n  listen: "127.0.0.1:%s"\n' "$PORT" | sed -n 2p >"$TMP/listen.line"
sed -i "/^daemon:/r $TMP/listen.line" "$TMP/daemon.yaml"
for who in daemonconf nocert intruder; do
    case $who in
    daemonconf) args=(-c "$TMP/daemon.yaml") ;;
    nocert) args=(--url "$U" --cacert "$K/ca.pem" --token-file "$TMP/token") ;;
    intruder) args=(--url "$U" --cacert "$K/ca.pem" --cert "$K/intruder.pem" --key "$K/intruder.key") ;;
    esac
    rm -f "$TMP/ran"
    "$BIN" exec "${args[@]}" -- sh -c "echo ran >'$TMP/ran'; exit 3" 2>"$TMP/r.err"
    rc=$?
    check "exec refused ($who) runs the command and exits with its status (3, got $rc)" \
        bash -c '[[ $0 == 3 && -s $1 ]]' "$rc" "$TMP/ran"
    check "... saying once that energy is not being recorded ($(head -c 300 "$TMP/r.err"))" \
        test "$(grep -c 'energy is not being recorded' "$TMP/r.err")" -eq 1
done
finish
