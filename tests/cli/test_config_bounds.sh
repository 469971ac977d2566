#!/usr/bin/env bash
# Intervals and timeouts out of range: `check-config` and `run` refuse them with exit 2 and a
# message that names file:line and key (or the flag), the bound broken and why. A daemon with
# `daemon.interval: 1ns` would saturate a core.
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty

# refused NAME WANT CMD...: CMD exits 2 and its stderr contains WANT
refused() {
    local name=$1 want=$2
    shift 2
    "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    if [[ $rc -eq 2 ]] && grep -qF -- "$want" "$TMP/err"; then ok "$name"; else
        not_ok "$name" "exit $rc, stderr: $(head -c 600 "$TMP/err")" "wanted: $want"; fi
}

printf 'daemon:\n  interval: 1ns\n' >"$TMP/ns.yaml"
refused "check-config refuses daemon.interval: 1ns" \
    "$TMP/ns.yaml:2: daemon.interval: expected a duration from 10ms to 1h (got \"1ns\", below 10ms): polling" \
    "$BIN" check-config "$TMP/ns.yaml"
refused "run refuses daemon.interval: 1ns before starting" "$TMP/ns.yaml:2: daemon.interval:" \
    "$BIN" run -c "$TMP/ns.yaml" --db "$TMP/a.db" --listen 127.0.0.1:$(free_port) --duration 2
check "run with a refused config created no store" test ! -e "$TMP/a.db"

printf 'collectors:\n  snmp:\n    targets:\n      - name: pdu\n        address: 127.0.0.1\n        community: public\n        timeout: 1ns\n' >"$TMP/t.yaml"
refused "check-config refuses an SNMP target timeout of 1ns" \
    "$TMP/t.yaml:7: collectors.snmp.targets[0].timeout: expected a duration from 10ms to 1m" \
    "$BIN" check-config "$TMP/t.yaml"

refused "run refuses --interval 1ns" \
    "wattage run: --interval: expected a duration from 10ms to 1h (got \"1ns\", below 10ms)" \
    "$BIN" run --interval 1ns --db "$TMP/b.db" --duration 1
refused "run refuses --interval 1e9 and states the range" \
    "wattage run: --interval: expected a duration from 10ms to 1h such as 1s or 500ms (got \"1e9\")" \
    "$BIN" run --interval 1e9 --db "$TMP/b.db" --duration 1
refused "run refuses --interval 2h" "(got \"2h\", above 1h)" \
    "$BIN" run --interval 2h --db "$TMP/b.db" --duration 1
refused "run refuses --summary-interval 1ns" "--summary-interval: expected a duration of at least 1s" \
    "$BIN" run --summary-interval 1ns --db "$TMP/b.db" --duration 1
check "no store was created by a refused flag" test ! -e "$TMP/b.db"
finish
