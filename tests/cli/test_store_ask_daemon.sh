#!/usr/bin/env bash
# A reader without --db or store.path asks the running daemon where its store is (issue 27):
# the daemon answers "store": {"path"} in GET /api/v1/status, and `wattage energy` / `query`
# open that store when their own default holds none, finding the daemon at WATTAGE_URL or at
# daemon.listen of the configuration, with the token when reads need one. Without a daemon, or
# refused, the "no store" message says what the daemon answered. As root (CI) the readers run as
# nobody (setpriv), so the default they look at first is a user's, not the daemon's.
. tests/cli/lib.sh
mkdir -p "$TMP/sys" "$TMP/proc" "$TMP/daemon" "$TMP/home"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc FAKE_NVML_GPUS=2 FAKE_NVML_POWER=200
if [[ $(id -u) == 0 ]]; then
    chmod 0755 "$TMP"
    as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH="$PATH" HOME="$TMP/home" XDG_STATE_HOME="$TMP/none" "$@"; }
    chown 65534 "$TMP/home"
else
    as_user() { env -i PATH="$PATH" HOME="$TMP/home" XDG_STATE_HOME="$TMP/none" "$@"; }
fi
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
DB=$TMP/daemon/w.db
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/d.yaml"
# The reader's configuration: no store.path; the daemon's address only.
printf 'daemon:\n  listen: 127.0.0.1:%s\n' "$PORT" >"$TMP/r.yaml"
chmod 0644 "$TMP/d.yaml" "$TMP/r.yaml"
chmod 0755 "$TMP/daemon"

WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/d.yaml" --db "$DB" --interval 0.2 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
DAEMON=$!
check "the daemon answers" wait_for 15 curl -sf "$URL/healthz" -o /dev/null
chmod 0644 "$DB" 2>/dev/null
check "GET /api/v1/status says the store's absolute path" python3 -c "
import json, sys, urllib.request
d = json.load(urllib.request.urlopen(sys.argv[1] + '/api/v1/status'))
assert d['store'] == {'path': sys.argv[2]}, d.get('store')" "$URL" "$(realpath "$DB")"
sleep 1
chmod 0644 "$DB" "$DB-wal" "$DB-shm" 2>/dev/null

as_user WATTAGE_URL="$URL" "$BIN" energy -c "$TMP/d.yaml" --from -1m --json >"$TMP/e1.json" 2>"$TMP/e1.err"
check "energy with no store of its own and WATTAGE_URL reads the daemon's (exit 0)" test $? -eq 0
check "  ... its 2 GPU series, as the store itself has them" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert len([s for s in d["series"] if "gpu" in s]) == 2 and d["total_joules"] > 0, d' "$TMP/e1.json"
as_user "$BIN" query -c "$TMP/r.yaml" 'wattage_gpu_power_watts{gpu="1"}' --from -1m \
    >"$TMP/q.txt" 2>"$TMP/q.err"
check "query finds the daemon at daemon.listen of its configuration" grep -q 'wattage_gpu_power_watts' "$TMP/q.txt"
kill "$DAEMON"
wait "$DAEMON" 2>/dev/null

# Reads behind a token: refused without it (and said), read with it.
printf 'tok-ask-daemon\n' >"$TMP/token"
chmod 0600 "$TMP/token"
printf 'daemon:\n  auth:\n    token_file: %s\n    protect_reads: true\nstore:\n  flush_interval: 200ms\n' "$TMP/token" >"$TMP/t.yaml"
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/t.yaml" --db "$DB" --interval 0.2 \
    --listen "127.0.0.1:$PORT" 2>>"$TMP/run.log"
DAEMON=$!
check "the daemon answers with a token" wait_for 15 curl -sf "$URL/healthz" -o /dev/null
as_user WATTAGE_URL="$URL" "$BIN" energy -c "$TMP/d.yaml" --from -1m --json >/dev/null 2>"$TMP/e2.err"
rc=$?
check "without the token: exit 1, the message says the daemon refused" bash -c \
    '[[ $0 == 1 ]] && grep -q "no store at .*asked the daemon: the daemon at '"$URL"' answered HTTP 401" "$1"' "$rc" "$TMP/e2.err"
as_user WATTAGE_URL="$URL" WATTAGE_TOKEN=tok-ask-daemon "$BIN" energy -c "$TMP/d.yaml" --from -1m \
    --json >"$TMP/e3.json" 2>"$TMP/e3.err"
check "with WATTAGE_TOKEN the daemon's store is read (exit 0)" test $? -eq 0
kill "$DAEMON"
wait "$DAEMON" 2>/dev/null

as_user WATTAGE_URL="$URL" "$BIN" energy -c "$TMP/d.yaml" --from -1m >/dev/null 2>"$TMP/e4.err"
rc=$?
check "no daemon: exit 1, and the message says it could not be reached" bash -c \
    '[[ $0 == 1 ]] && grep -q "asked the daemon: cannot reach the daemon at '"$URL"'" "$1"' "$rc" "$TMP/e4.err"
as_user WATTAGE_URL="$URL" "$BIN" energy --db "$TMP/nope.db" >/dev/null 2>"$TMP/e5.err"
rc=$?
check "--db still wins: a missing --db is said as such, not looked up elsewhere" bash -c \
    '[[ $0 == 1 ]] && grep -q "no store at $1/nope.db (given with --db)" "$2" && ! grep -q "asked the daemon" "$2"' \
    "$rc" "$TMP" "$TMP/e5.err"
finish
