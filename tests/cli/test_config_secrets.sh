#!/usr/bin/env bash
# Secret files (the daemon's token, a remote-write token, a carbon source's token): `check-config`
# refuses one that group or others may read, or that is missing, with exit 2 and the very message
# `run` stops with; it accepts them at mode 0600. The check reads the mode bits, so it holds as
# root too (CI).
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty

# agree NAME WANT CONFIG: check-config exits 2 with WANT on stderr; run stops with the same message
# and creates no store.
agree() {
    local name=$1 want=$2 cfg=$3 db=$TMP/$RANDOM.db
    "$BIN" check-config "$cfg" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    local msg
    msg=$(sed -n 's/^wattage: //p' "$TMP/err" | head -n 1)
    if [[ $rc -eq 2 && $msg == *"$want"* ]]; then ok "check-config refuses $name ($msg)"; else
        not_ok "check-config refuses $name" "exit $rc, stderr: $(head -c 600 "$TMP/err")" "wanted: $want"; fi
    timeout 20 "$BIN" run -c "$cfg" --db "$db" --listen "127.0.0.1:$(free_port)" --duration 2 \
        >/dev/null 2>"$TMP/run.err"
    rc=$?
    if [[ $rc -ne 0 && $rc -ne 124 && -n $msg ]] && grep -qF -- "error run: $msg" "$TMP/run.err"; then
        ok "run refuses $name with the same message"; else
        not_ok "run refuses $name with the same message" "exit $rc, stderr: $(tail -c 600 "$TMP/run.err")" "wanted: $msg"; fi
    check "run refusing $name created no store" test ! -e "$db"
}

# accepted NAME CONFIG: check-config exits 0 and says ok.
accepted() {
    "$BIN" check-config "$2" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    if [[ $rc -eq 0 ]] && grep -qF "$2: ok" "$TMP/out"; then ok "check-config accepts $1"; else
        not_ok "check-config accepts $1" "exit $rc, stderr: $(head -c 600 "$TMP/err")"; fi
}

# --- the daemon's bearer token
printf 'tok-%s\n' "$RANDOM$RANDOM" >"$TMP/d.token"
chmod 644 "$TMP/d.token"
printf 'daemon:\n  auth:\n    token_file: "%s"\n' "$TMP/d.token" >"$TMP/d.yaml"
agree "a 0644 daemon.auth.token_file" \
    "daemon.auth.token_file: $TMP/d.token is accessible by group or others (mode 0644); it holds a secret: chmod 600 $TMP/d.token" \
    "$TMP/d.yaml"
chmod 600 "$TMP/d.token"
accepted "the daemon token at 0600" "$TMP/d.yaml"

# --- a carbon source's token (only a URL source sends it)
printf 'em-token\n' >"$TMP/c.token"
chmod 644 "$TMP/c.token"
cat >"$TMP/c.yaml" <<EOF
carbon:
  zone: GB
  sources:
    - kind: electricitymaps
      url: http://127.0.0.1:1/v3/carbon-intensity/history?zone=DE
      token_file: $TMP/c.token
EOF
agree "a 0644 carbon token_file" \
    "carbon.sources[0].token_file: $TMP/c.token is accessible by group or others (mode 0644)" \
    "$TMP/c.yaml"
chmod 640 "$TMP/c.token"
agree "a 0640 carbon token_file (group may read)" "(mode 0640)" "$TMP/c.yaml"
chmod 600 "$TMP/c.token"
accepted "the carbon token at 0600" "$TMP/c.yaml"

# --- a remote-write endpoint's token, and a missing password file
printf 'rw-token\n' >"$TMP/rw.token"
chmod 604 "$TMP/rw.token"
cat >"$TMP/rw.yaml" <<EOF
remote_write:
  - url: http://127.0.0.1:1/api/v1/write
    name: vm
    bearer_token_file: $TMP/rw.token
EOF
agree "a 0604 remote_write bearer_token_file" \
    "remote_write[0] (vm): bearer_token_file: $TMP/rw.token is accessible by group or others (mode 0604)" \
    "$TMP/rw.yaml"
chmod 600 "$TMP/rw.token"
accepted "the remote-write token at 0600" "$TMP/rw.yaml"
cat >"$TMP/pw.yaml" <<EOF
remote_write:
  - url: http://127.0.0.1:1/api/v1/write
    name: vm
    basic_auth:
      username: wattage
      password_file: $TMP/nope.password
EOF
agree "a missing basic_auth.password_file" \
    "remote_write[0] (vm): basic_auth.password_file $TMP/nope.password: No such file or directory" \
    "$TMP/pw.yaml"
finish
