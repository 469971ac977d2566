#!/bin/sh
# Installs the Debian 12 packages wattage needs to build (and, with --test, to run its tests;
# clang and its libFuzzer runtime build the fuzz harnesses of `make fuzz`).
# A no-op when everything is present. Uses sudo when not run as root.
set -eu
build="gcc make pkg-config libsqlite3-dev libmicrohttpd-dev libgnutls28-dev libyaml-dev libcjson-dev zlib1g-dev libcurl4-openssl-dev
       libsnmp-dev libmodbus-dev libprotobuf-c-dev protobuf-c-compiler libsnappy-dev librdkafka-dev
       libzstd-dev libfreeipmi-dev"
test="$build sqlite3 curl gnutls-bin openssl prometheus python3 wrk
      python3-psutil python3-prometheus-client prometheus-node-exporter valgrind
      prometheus-alertmanager snmpsim snmpd snmp victoria-metrics chromium clang libclang-rt-14-dev
      systemd lintian python3-yaml groff-base python3-protobuf slurm-wlm munge openipmi
      libopenipmi-dev python3-jsonschema"
pkgs=$build
[ "${1:-}" = "--test" ] && pkgs=$test
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
