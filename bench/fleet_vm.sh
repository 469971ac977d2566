# SPDX-License-Identifier: MIT
# Sourced by bench/fleet_query.sh and bench/fleet_window.sh: VictoriaMetrics on a free loopback
# port with its data in a new temporary directory, stopped and removed at exit. Sets TMP, PORT
# and PY. Usage: fleet_vm_start NAME (NAME for messages).
fleet_vm_start() {
    PY=/usr/bin/python3
    local vmbin=${VICTORIA_METRICS:-victoria-metrics}
    command -v "$vmbin" >/dev/null || { echo "$1: $vmbin is not installed" >&2; exit 1; }
    TMP=$(mktemp -d)
    PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$vmbin" -storageDataPath="$TMP/vm" -httpListenAddr="127.0.0.1:$PORT" -retentionPeriod=1y \
        -search.disableCache -loggerLevel=ERROR 2>"$TMP/vm.log" &
    FLEET_VM_PID=$!
    trap 'kill $FLEET_VM_PID 2>/dev/null; wait $FLEET_VM_PID 2>/dev/null; rm -rf "$TMP"' EXIT
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/health" -o /dev/null && break; sleep 0.1; done
}
