#!/usr/bin/env bash
# One default store path (issue 27): without --db or store.path, `wattage run` and the store's
# readers agree on where the store is: /var/lib/wattage/wattage.db for root, else
# $XDG_STATE_HOME/wattage (or ~/.local/state/wattage). A user who is not root starts the daemon
# without a configuration and reads its energy back with no flags; every "no store" message says
# where it looked and why there. As root (CI) the user's side runs as nobody (setpriv), so the
# path a real user takes is the one tested.
. tests/cli/lib.sh
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
export FAKE_NVML_GPUS=2 FAKE_NVML_POWER=200
printf '# a configuration that names no store\nstore:\n  flush_interval: 200ms\n' >"$TMP/empty.yaml"
SYSTEM=/var/lib/wattage/wattage.db

# as_user VAR=VALUE... CMD...: CMD in a clean environment as a user who is not root
if [[ $(id -u) == 0 ]]; then
    chmod 0755 "$TMP"
    as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH="$PATH" "$@"; }
    owner=65534
else
    as_user() { env -i PATH="$PATH" "$@"; }
    owner=$(id -u)
fi
mkdir -p "$TMP/home" "$TMP/xdg" "$TMP/ro"
chown "$owner" "$TMP/home" "$TMP/xdg"
chmod 0555 "$TMP/ro"
chmod 0644 "$TMP/empty.yaml"
ENVS=(WATTAGE_SYSFS_ROOT="$TMP/sys" WATTAGE_PROCFS_ROOT="$TMP/proc" FAKE_NVML_GPUS=2
    FAKE_NVML_POWER=200 WATTAGE_NVML_LIBRARY="$FAKE_NVML")

as_user "${ENVS[@]}" HOME="$TMP/home" "$BIN" run -c "$TMP/empty.yaml" --interval 0.2 \
    --duration 3 --listen "127.0.0.1:$(free_port)" >"$TMP/run1.log" 2>&1
check "a user who is not root runs the daemon without store.path (exit 0)" test $? -eq 0
check "  ... its store is ~/.local/state/wattage/wattage.db" \
    test -f "$TMP/home/.local/state/wattage/wattage.db"
as_user HOME="$TMP/home" "$BIN" energy -c "$TMP/empty.yaml" --from -1m --json \
    >"$TMP/e1.json" 2>"$TMP/e1.err"
check "wattage energy with no --db reads that store (exit 0)" test $? -eq 0
check "  ... and finds the daemon's 2 GPU series" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert len([s for s in d["series"] if "gpu" in s]) == 2, d
assert d["total_joules"] > 0, d' "$TMP/e1.json"

as_user "${ENVS[@]}" HOME="$TMP/home" XDG_STATE_HOME="$TMP/xdg" "$BIN" run -c "$TMP/empty.yaml" \
    --interval 0.2 --duration 1 --listen "127.0.0.1:$(free_port)" >"$TMP/run2.log" 2>&1
check "with XDG_STATE_HOME the daemon's store is \$XDG_STATE_HOME/wattage/wattage.db" \
    bash -c '[[ $0 == 0 ]] && test -f "$1/xdg/wattage/wattage.db"' $? "$TMP"
as_user HOME="$TMP/home" XDG_STATE_HOME="$TMP/xdg" "$BIN" query -c "$TMP/empty.yaml" \
    'wattage_gpu_power_watts{gpu="0"}' --from -1m >"$TMP/q.txt" 2>"$TMP/q.err"
check "  ... and wattage query reads it there" grep -q 'wattage_gpu_power_watts' "$TMP/q.txt"

# Nothing there: the message names the path, the rule that chose it and what else was tried.
as_user HOME="$TMP/home" XDG_STATE_HOME="$TMP/none" "$BIN" energy -c "$TMP/empty.yaml" \
    >"$TMP/e2.out" 2>"$TMP/e2.err"
rc=$?
if [[ -e $SYSTEM ]]; then
    check "no user store, but $SYSTEM exists: energy reads that one" test $rc -eq 0
else
    check "no store: energy exits 1" test $rc -eq 1
    check "  ... naming where it looked and why" grep -qF \
        "no store at $TMP/none/wattage/wattage.db (the default for a user who is not root: \$XDG_STATE_HOME/wattage; $TMP/empty.yaml sets no store.path), nor at $SYSTEM" \
        "$TMP/e2.err"
fi
as_user HOME="$TMP/home" "$BIN" kpi --db "$TMP/missing.db" >/dev/null 2>"$TMP/e3.err"
check "--db naming no store: exit 1, the message says it came from --db" \
    bash -c '[[ $0 == 1 ]] && grep -qF "wattage kpi: no store at $1 (given with --db)" "$2"' $? \
    "$TMP/missing.db" "$TMP/e3.err"
printf 'store:\n  path: %s/elsewhere/w.db\n' "$TMP" >"$TMP/named.yaml"
chmod 0644 "$TMP/named.yaml"
as_user HOME="$TMP/home" "$BIN" report -c "$TMP/named.yaml" -o /dev/null 2>"$TMP/e4.err"
check "store.path naming no store: the message names the file that set it" \
    grep -qF "no store at $TMP/elsewhere/w.db (store.path of $TMP/named.yaml)" "$TMP/e4.err"

# A home where the state directory cannot be made: run stops, saying which rule chose the path.
as_user "${ENVS[@]}" HOME="$TMP/ro" "$BIN" run -c "$TMP/empty.yaml" --duration 1 \
    --listen "127.0.0.1:$(free_port)" >"$TMP/run3.log" 2>&1
check "an unwritable home: run exits 1" test $? -eq 1
check "  ... saying it cannot create the directory and why it chose it" grep -qF \
    "cannot create the store's directory $TMP/ro/.local/state/wattage" "$TMP/run3.log"
check "  ... (the default for a user who is not root: ~/.local/state/wattage)" grep -qF \
    "the default for a user who is not root: ~/.local/state/wattage" "$TMP/run3.log"

if [[ $(id -u) == 0 && ! -e $SYSTEM ]]; then
    "$BIN" energy -c "$TMP/empty.yaml" >/dev/null 2>"$TMP/e5.err"
    check "as root the default is $SYSTEM, and the message says so" \
        grep -qF "no store at $SYSTEM (the default for root; $TMP/empty.yaml sets no store.path)" \
        "$TMP/e5.err"
fi
finish
