#!/usr/bin/env bash
# Remote write into the real Prometheus (--web.enable-remote-write-receiver) on loopback: a daemon
# on the fake NVML sends its stored readings; the receiver is stopped for RW_OUTAGE_S seconds
# (default 20) and the daemon is restarted in the middle of the outage; once the receiver is back
# the second daemon resumes from the cursor in the store. Then every reading in the store up to the
# cursor must be in Prometheus with its exact time and value, nothing missing, nothing else, and
# the poll loop must have kept time all along.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/prometheus_lib.sh"
source "$(dirname "$0")/remote_write_lib.sh"
PY=/usr/bin/python3
OUTAGE=${RW_OUTAGE_S:-20}

if ! command -v "$PROMETHEUS" >/dev/null; then
    skip "remote write into Prometheus" "prometheus is not installed (scripts/deps.sh --test)"
    finish
fi
mkdir -p "$TMP/empty" "$TMP/prom"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2

PPORT=$(free_port)
printf 'global:\n  scrape_interval: 1h\n' >"$TMP/prom/prometheus.yml"
PROM_URL=http://127.0.0.1:$PPORT
prom_pid=
start_receiver() {
    "$PROMETHEUS" --config.file="$TMP/prom/prometheus.yml" --storage.tsdb.path="$TMP/prom/data" \
        --web.listen-address="127.0.0.1:$PPORT" --web.enable-remote-write-receiver \
        --log.level=warn 2>>"$TMP/prom/prometheus.log" &
    prom_pid=$!
    T_PIDS="$T_PIDS $prom_pid"
    wait_for 30 curl -sf "$PROM_URL/-/ready" -o /dev/null
}
stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

rw_config "$TMP/w.yaml" node-a "  - url: $PROM_URL/api/v1/write
    name: prom
    batch_size: 100
    deadline: 1s
    timeout: 2s
    max_backoff: 2s"
WPORT=$(free_port)
start_daemon() { # start_daemon LOG
    bg "$BIN" run -c "$TMP/w.yaml" --listen "127.0.0.1:$WPORT" --db "$TMP/w.db" --interval 0.5 \
        --log-level debug 2>"$1"
    wpid=$!
    wait_for 20 curl -sf "http://127.0.0.1:$WPORT/healthz" -o /dev/null
}

start_receiver || { not_ok "Prometheus starts" "$(tail -5 "$TMP/prom/prometheus.log")"; finish; }
start_daemon "$TMP/a.log"
if rw_wait_caught_up "$WPORT" prom 30; then
    ok "the daemon remote-writes into Prometheus ($(rw_metric "$WPORT" wattage_remote_write_samples_sent_total prom) samples)"
else
    not_ok "the daemon remote-writes into Prometheus" "$(grep remote_write "$TMP/a.log" | tail -5)" \
        "$(tail -5 "$TMP/prom/prometheus.log")"
    finish
fi
sleep 2

# The outage: the receiver goes away, the first daemon keeps polling and storing.
stop_pid "$prom_pid"
half=$((OUTAGE / 2))
sleep "$half"
failed=$(rw_metric "$WPORT" wattage_remote_write_samples_failed_total prom)
pending=$(rw_metric "$WPORT" wattage_remote_write_samples_pending prom)
lag=$(rw_metric "$WPORT" wattage_remote_write_lag_seconds prom)
check "while the receiver is down: failed attempts counted ($failed), readings pending ($pending), lag ${lag}s" \
    $PY -c 'import sys; f, p, l = map(float, sys.argv[1:4]); sys.exit(0 if f > 0 and p > 0 and l >= 2 else 1)' \
    "${failed:-0}" "${pending:-0}" "${lag:-0}"
check "the failure is logged once with its reason and the retry" \
    grep -Eq "remote_write: endpoint prom: (cannot send|HTTP [0-9]+ for) [0-9]+ samples, retrying in [0-9.]+ s: [A-Za-z]" "$TMP/a.log"
# The first failed attempt may meet the receiver as it dies (reset, empty reply) rather than a refused
# connection; the rate limit then keeps the later "Connection refused" lines out of the log.
n_fail=$(grep -cE "remote_write: endpoint prom: (cannot send|HTTP [0-9]+ for) " "$TMP/a.log")
check "... and not once per retry ($n_fail lines over ${half}s of retries)" test "$n_fail" -le 3

# A restart in the middle of the outage: the cursor is in the store.
stop_pid "$wpid"
start_daemon "$TMP/b.log"
sleep $((OUTAGE - half))
start_receiver || { not_ok "Prometheus restarts" "$(tail -5 "$TMP/prom/prometheus.log")"; finish; }
if rw_wait_caught_up "$WPORT" prom 60; then
    ok "after the outage and the restart the backlog is delivered (pending 0)"
else
    not_ok "after the outage the backlog is delivered" \
        "pending $(rw_metric "$WPORT" wattage_remote_write_samples_pending prom)" \
        "$(grep remote_write "$TMP/b.log" | tail -5)"
fi
check "the second daemon logged that delivery resumed" grep -q "endpoint prom: delivering again after" "$TMP/b.log"
dropped=$(rw_metric "$WPORT" wattage_remote_write_samples_dropped_total prom)
check "nothing was refused by Prometheus (dropped $dropped)" test "${dropped:-x}" = 0
stop_pid "$wpid"

prom_query '{node="node-a"}[10m]' >"$TMP/all.json"
# what the last second of the daemon stored after its last acknowledged request: a few per series
check "every stored reading up to the cursor is in Prometheus exactly, across the outage and the restart" \
    rw_check_store "$TMP/w.db" node-a prom prom "$TMP/all.json" 8
prom_query 'count(wattage_gpu_power_watts{node="node-a"})' >"$TMP/count.json"
check "series carry the node label (2 GPUs)" $PY -c '
import json, sys; r = json.load(open(sys.argv[1]))["data"]["result"]; assert r and r[0]["value"][1] == "2", r' "$TMP/count.json"

for l in a b; do
    check_ticks "daemon $l: the poll loop kept time during the outage" "$TMP/$l.log" 8
done
finish
