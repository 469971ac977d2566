#!/usr/bin/env bash
# `wattage exec` runs its command whatever the daemon does: down (nothing listens), hanging
# (accepts and never answers, over HTTP and over a TLS handshake that never completes),
# answering 500, refusing the token (401), or a configuration that does not load. Each time
# the command runs once, its exit status passes through, the wrapper says once that energy is
# not being recorded, and a hung daemon delays the command by a bounded time.
source "$(dirname "$0")/lib.sh"
mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2

# peer PORT MODE: start tests/peers/bad_daemon.py and wait until it listens
peer() {
    bg python3 tests/peers/bad_daemon.py --port "$1" "$2" >"$TMP/peer-$2.out"
    wait_for 10 grep -q ready "$TMP/peer-$2.out"
}
# run_exec NAME URL [EXEC ARGS...]: runs `exec ... -- CMD` (CMD counts its runs and exits 9);
# sets rc and el (seconds the wrapper took)
run_exec() {
    local name=$1 url=$2
    shift 2
    rm -f "$TMP/runs"
    local t0
    t0=$(date +%s.%N)
    "$BIN" exec --url "$url" "$@" -- sh -c "echo x >>'$TMP/runs'; exit 9" 2>"$TMP/$name.err"
    rc=$?
    el=$(python3 -c "import sys; print(round($(date +%s.%N) - $t0, 2))")
}
# expect NAME: the command ran once, status 9, one line about energy not being recorded
expect() {
    check "$1: the command ran once, exit status 9 (got $rc)" \
        bash -c '[[ $0 == 9 && $(wc -l <"$1") == 1 ]]' "$rc" "$TMP/runs"
    check "$1: energy not being recorded, said once ($(head -c 300 "$TMP/$1.err"))" \
        test "$(grep -c 'energy is not being recorded' "$TMP/$1.err")" -eq 1
}

# --- nothing listens
run_exec down "http://127.0.0.1:$(free_port)"
expect down

# --- a daemon that accepts and never answers: bounded, not hung (1 s of budget, 5 s allowed
# for a loaded machine)
HP=$(free_port)
if peer "$HP" hang; then
    run_exec hang "http://127.0.0.1:$HP"
    expect hang
    check "hang: the wrapper did not wait on the daemon (${el}s < 5s)" \
        python3 -c "import sys; sys.exit(not $el < 5)"
    run_exec tlshang "https://127.0.0.1:$HP"
    expect tlshang
    check "a TLS handshake that never completes: not hung either (${el}s < 5s)" \
        python3 -c "import sys; sys.exit(not $el < 5)"
else
    not_ok "the hanging peer starts" "$(cat "$TMP/peer-hang.out")"
fi

# --- a daemon that answers 500
P5=$(free_port)
if peer "$P5" 500; then
    run_exec e500 "http://127.0.0.1:$P5"
    expect e500
    check "500: says what the daemon answered" grep -q 'HTTP 500' "$TMP/e500.err"
else
    not_ok "the 500 peer starts" "$(cat "$TMP/peer-500.out")"
fi

# --- the real daemon, with a token the wrapper does not have
printf 'tok-%s\n' "$RANDOM$RANDOM" >"$TMP/token"
chmod 600 "$TMP/token"
printf 'daemon:\n  auth:\n    token_file: "%s"\n' "$TMP/token" >"$TMP/w.yaml"
PORT=$(free_port)
bg "$BIN" run -c "$TMP/w.yaml" --listen "127.0.0.1:$PORT" --db "$TMP/w.db" 2>"$TMP/run.log"
if wait_for 15 curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz"; then
    WATTAGE_TOKEN=wrong run_exec token "http://127.0.0.1:$PORT"
    expect token
    check "wrong token: says the daemon refused it (401)" grep -q 'HTTP 401' "$TMP/token.err"
else
    not_ok "the daemon starts" "$(tail -3 "$TMP/run.log")"
fi

# --- a configuration that does not load
printf 'daemon:\n  listen: nowhere\n' >"$TMP/bad.yaml"
run_exec badconf "http://127.0.0.1:$PORT" -c "$TMP/bad.yaml"
expect badconf
finish
