#!/usr/bin/env bash
# The manual pages and the bash completion come from the same tables as --help: wattage(1) has
# every command and every option `wattage CMD --help` prints, wattage.yaml(5) every key of
# deploy/wattage.yaml's sections, both render with groff without a warning, `make` leaves them in
# build/man/, and the completion (deploy/bash-completion/wattage, sourced in bash) offers the
# commands, a command's subcommands and its options. tests/unit/test_cli.c checks the pages
# against the tables and the schema themselves.
. tests/cli/lib.sh
B=${WATTAGE_BUILD:-build}
"$BIN" __man 1 >"$TMP/wattage.1"
check "wattage __man 1 exits 0" test $? -eq 0
"$BIN" __man 5 deploy/wattage.yaml >"$TMP/wattage.yaml.5"
check "wattage __man 5 deploy/wattage.yaml exits 0" test $? -eq 0
"$BIN" __man 7 >/dev/null 2>&1
check "wattage __man 7: exit 2" test $? -eq 2
check "wattage --help does not list the hidden commands" bash -c '! "$0" --help | grep -q __' "$BIN"

# every command and every option the helps print, in wattage(1)
"$BIN" --help | sed -nE 's/^  ([a-z][a-z-]*) .*/\1/p' >"$TMP/cmds"
missing=""
for c in $(cat "$TMP/cmds"); do
    [[ $c == version ]] && continue
    grep -qF ".SS \"wattage ${c//-/\\-}" "$TMP/wattage.1" || missing="$missing $c"
    # (not another program's option quoted in a summary: nvidia-smi --query-gpu=...)
    for o in $("$BIN" "$c" --help | grep -oE -- '--[a-z][a-z0-9-]*=?' | grep -v '=$' | sort -u); do
        [[ $o == --help ]] && continue
        grep -qF -- "\\fB${o//-/\\-}\\fR" "$TMP/wattage.1" || missing="$missing $c:$o"
    done
done
check "wattage(1) has $(wc -l <"$TMP/cmds") commands and every option of their --help${missing:+ (missing:$missing)}" \
    test -z "$missing"

# every key set in the example configuration outside the module sections, in wattage.yaml(5)
keys=$(python3 - deploy/wattage.yaml <<'PY'
import re, sys
stack, paths = [], []
for line in open(sys.argv[1]):
    m = re.match(r'^( *)([A-Za-z0-9_]+):', line)
    if not m:
        continue
    ind = len(m.group(1))
    while stack and stack[-1][0] >= ind:
        stack.pop()
    stack.append((ind, m.group(2)))
    paths.append(".".join(k for _, k in stack))
# the leaves: a mapping's own key is not one
for p in paths:
    if not any(q.startswith(p + ".") for q in paths):
        print(p)
PY
)
missing="" n=0
for k in $keys; do
    # the module sections' own keys are their modules' (the page lists the section)
    case $k in collectors.*.targets.* | topology.* | carbon.* | facility.* | alerts.* | remote_write.* | review.*) continue ;; esac
    n=$((n + 1))
    grep -qxF ".B $k" "$TMP/wattage.yaml.5" || missing="$missing $k"
done
check "wattage.yaml(5) has the $n schema keys of deploy/wattage.yaml${missing:+ (missing:$missing)}" \
    bash -c '[[ $0 -ge 30 && -z $1 ]]' "$n" "$missing"
missing=""
for s in topology carbon facility alerts remote_write collectors.snmp.targets; do
    grep -qxF ".B $s" "$TMP/wattage.yaml.5" || missing="$missing $s"
done
check "  ... and the module sections" test -z "$missing"

if command -v groff >/dev/null; then
    for p in wattage.1 wattage.yaml.5; do
        groff -man -Tutf8 -ww -z "$TMP/$p" >"$TMP/$p.warn" 2>&1
        rc=$?
        check "groff renders $p without a warning (exit $rc)$(head -3 "$TMP/$p.warn" | tr '\n' ' ')" \
            bash -c '[[ $0 == 0 && ! -s $1 ]]' "$rc" "$TMP/$p.warn"
    done
    check "the rendered wattage(1) reads --from under wattage energy" \
        bash -c 'groff -man -Tutf8 "$0" 2>/dev/null | sed "s/.\x08//g" | grep -q -- "--from T"' "$TMP/wattage.1"
else
    skip "groff renders the pages" "groff is not installed (scripts/deps.sh --test installs groff-base)"
fi

check "make left build/man/wattage.1.gz and build/man/wattage.yaml.5.gz, the same pages" \
    bash -c 'zcmp -s "$0/man/wattage.1.gz" "$1/wattage.1" && zcmp -s "$0/man/wattage.yaml.5.gz" "$1/wattage.yaml.5"' "$B" "$TMP"

# completion: source it and ask as bash would
comp() { # comp WORD...: the completions of the last word
    bash -c '. deploy/bash-completion/wattage; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _wattage; printf "%s\n" "${COMPREPLY[@]}"' \
        _ "$@" | sort | paste -sd' ' -
}
check "completion is registered for wattage" \
    bash -c '. deploy/bash-completion/wattage; complete -p wattage | grep -q "_wattage"'
got=$(comp "$BIN" e)
check "wattage e<TAB>: energy exec ($got)" test "$got" = "energy exec"
got=$(comp "$BIN" job "")
check "wattage job <TAB>: its subcommands ($got)" test "$got" = "end mark show start"
got=$(comp "$BIN" energy --f)
check "wattage energy --f<TAB>: --from ($got)" test "$got" = "--from"
got=$(comp "$BIN" jobs compare --c)
check "wattage jobs compare --c<TAB>: the connection options ($got)" \
    test "$got" = "--cacert --cert --config"
got=$(comp "$BIN" report --from -1h --f)
check "wattage report --from -1h --f<TAB>: --format --from ($got)" test "$got" = "--format --from"
got=$(comp "$BIN" assess "")
check "wattage assess <TAB>: its subcommands ($got)" test "$got" = "report start status"
got=$(comp "$BIN" assess start --d)
check "wattage assess start --d<TAB>: --db --duration ($got)" test "$got" = "--db --duration"
got=$(comp "$BIN" import "")
check "wattage import <TAB>: carbon meters nvidia-smi ($got)" test "$got" = "carbon meters nvidia-smi"
finish
