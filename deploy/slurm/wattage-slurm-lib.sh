# SPDX-License-Identifier: MIT
# Shared by wattage-prolog.sh and wattage-epilog.sh (sourced, not run; keep it beside them).
# shellcheck disable=SC2034 # WT_ERR is read by the scripts that source this file
# POSIX sh and curl. Every function returns; nothing here exits.

# One line to WATTAGE_SLURM_LOG, else to syslog (tag wattage-slurm; slurmd discards what a
# prolog writes), and to stderr.
wt_log() {
    msg="$(date -u +%Y-%m-%dT%H:%M:%SZ) wattage-slurm: $*"
    if [ -n "${WATTAGE_SLURM_LOG:-}" ] && printf '%s\n' "$msg" >>"$WATTAGE_SLURM_LOG" 2>/dev/null; then
        :
    elif command -v logger >/dev/null 2>&1; then
        logger -t wattage-slurm -- "$*" 2>/dev/null
    fi
    printf '%s\n' "$msg" >&2
    return 0
}

wt_load_settings() {
    # Slurm runs the scripts with an environment of its own (SLURM_* and little else), so the
    # settings come from a file: wattage-slurm.conf beside the scripts, else
    # /etc/default/wattage-slurm (shell assignments: WATTAGE_URL=https://...).
    for f in "$(dirname "$0")/wattage-slurm.conf" /etc/default/wattage-slurm; do
        if [ -r "$f" ]; then
            # shellcheck disable=SC1090
            . "$f"
            break
        fi
    done
    WATTAGE_URL=${WATTAGE_URL:-http://127.0.0.1:9747}
    WATTAGE_URL=${WATTAGE_URL%/}
    WATTAGE_SLURM_TIMEOUT=${WATTAGE_SLURM_TIMEOUT:-3}
}

# JSON string contents: backslash and double quote escaped, control characters dropped.
wt_json_str() {
    printf '%s' "$1" | tr -d '\000-\037' | sed 's/\\/\\\\/g; s/"/\\"/g'
}

# A path segment: Slurm job ids are digits (array jobs 123_4, heterogeneous 123+0 in some
# variables); anything outside [0-9A-Za-z_.+-] is refused (returns 1).
wt_url_seg() {
    case $1 in
    '' | *[!0-9A-Za-z_.+-]*) return 1 ;;
    esac
    printf '%s' "$1" | sed 's/+/%2B/g'
}

# The job's GPUs as a JSON array, or nothing (the daemon then counts every GPU). Slurm sets
# SLURM_JOB_GPUS in the prolog's environment (indices as slurmd numbers them, from gres.conf);
# CUDA_VISIBLE_DEVICES and GPU_DEVICE_ORDINAL are what the job's steps see. Indices go as
# numbers, GPU-/MIG- UUIDs as strings; "NoDevFiles" (Slurm's word for none) and empty items are
# skipped.
wt_gpus_json() {
    list=
    for v in "${SLURM_JOB_GPUS:-}" "${CUDA_VISIBLE_DEVICES:-}" "${GPU_DEVICE_ORDINAL:-}"; do
        if [ -n "$v" ]; then
            list=$v
            break
        fi
    done
    [ -z "$list" ] && return 0
    out=
    old_ifs=$IFS
    IFS=,
    for g in $list; do
        g=$(printf '%s' "$g" | tr -d ' \t')
        case $g in
        '' | NoDevFiles) continue ;;
        *[!0-9]*) item="\"$(wt_json_str "$g")\"" ;;
        *) item=$g ;;
        esac
        out="${out:+$out, }$item"
    done
    IFS=$old_ifs
    [ -n "$out" ] && printf '[%s]' "$out"
    return 0
}

# POST $2 (JSON) to the daemon's path $1. Returns 0 on a 2xx answer; otherwise sets WT_ERR and
# returns 1. The token: WATTAGE_TOKEN_FILE (first line), else WATTAGE_TOKEN. It goes to curl in a
# header file, never on its command line (which other users can read in ps).
wt_post() {
    WT_ERR=
    if ! command -v curl >/dev/null 2>&1; then
        WT_ERR="curl not found"
        return 1
    fi
    token=${WATTAGE_TOKEN:-}
    if [ -n "${WATTAGE_TOKEN_FILE:-}" ]; then
        if ! token=$(head -n 1 "$WATTAGE_TOKEN_FILE" 2>/dev/null); then
            WT_ERR="token file $WATTAGE_TOKEN_FILE: cannot read"
            return 1
        fi
        token=$(printf '%s' "$token" | tr -d '\r\n')
    fi
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/wattage-slurm.XXXXXX") || {
        WT_ERR="mktemp failed"
        return 1
    }
    : >"$tmp/h"
    chmod 600 "$tmp/h"
    [ -n "$token" ] && printf 'Authorization: Bearer %s\n' "$token" >"$tmp/h"
    set -- "$1" "$2" --silent --show-error --max-time "$WATTAGE_SLURM_TIMEOUT" \
        --connect-timeout "$WATTAGE_SLURM_TIMEOUT" -o "$tmp/body" -w '%{http_code}' \
        -H 'Content-Type: application/json' -H "@$tmp/h" -X POST --data-binary "$2"
    [ -n "${WATTAGE_CACERT:-}" ] && set -- "$@" --cacert "$WATTAGE_CACERT"
    [ -n "${WATTAGE_CERT:-}" ] && set -- "$@" --cert "$WATTAGE_CERT"
    [ -n "${WATTAGE_KEY:-}" ] && set -- "$@" --key "$WATTAGE_KEY"
    path=$1
    shift 2
    code=$(curl "$@" "$WATTAGE_URL$path" 2>"$tmp/err")
    rc=$?
    if [ $rc -ne 0 ]; then
        WT_ERR="$WATTAGE_URL: curl exit $rc: $(head -c 200 "$tmp/err" | tr '\n' ' ')"
    else
        case $code in
        2??) ;;
        *)
            WT_ERR="$WATTAGE_URL$path: HTTP $code: $(head -c 200 "$tmp/body" 2>/dev/null | tr '\n' ' ')"
            rc=1
            ;;
        esac
    fi
    rm -rf "$tmp"
    [ $rc -eq 0 ]
}
