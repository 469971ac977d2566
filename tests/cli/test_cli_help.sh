#!/usr/bin/env bash
# Help that tells the truth, read from the outside: `wattage --help` lists every command that
# src/cli defines (int wt_cmd_NAME), `wattage NAME --help` exits 0 with its usage, and every
# option that the command's source file lists (a wt_cli_opt table entry or a getopt table of
# its own) appears in that help. tests/unit/test_cli.c checks the same from the tables.
. tests/cli/lib.sh
"$BIN" --help >"$TMP/top.txt" 2>&1
check "wattage --help exits 0" test $? -eq 0
cmds=$(sed -nE 's/^int wt_cmd_([a-z_]+)\(int argc, char \*\*argv\)$/\1/p' src/cli/*.c | tr _ - | sort -u)
check "src/cli defines commands ($(echo $cmds))" test "$(echo "$cmds" | wc -w)" -ge 10
for c in $cmds; do
    check "wattage --help lists $c" grep -qE "^  $c " "$TMP/top.txt"
    "$BIN" "$c" --help >"$TMP/$c.txt" 2>&1
    rc=$?
    check "wattage $c --help exits 0 with its usage" \
        bash -c '[[ $0 == 0 ]] && grep -q "^usage: wattage $1" "$2"' "$rc" "$c" "$TMP/$c.txt"
done
# the options each source file lists, in the help of the commands it implements
for f in src/cli/*.c; do
    base=$(basename "$f" .c)
    case $base in
    main | common | commands | sections | opts | client | man) continue ;;
    job) helps=(job jobs) ;;
    import_meters) helps=(import) ;;
    statement) helps=(report) ;;
    *) helps=("${base//_/-}") ;;
    esac
    opts=$(grep -oE '\{"[a-z][a-z0-9-]*", *('"'"'.'"'"'|[A-Z][A-Z_]*[^,]*|0x[0-9a-fA-F]+|[a-z_]+_argument)' "$f" |
        sed -E 's/^\{"([^"]+)".*/\1/' | sort -u)
    [[ -z $opts ]] && continue
    text=$(for h in "${helps[@]}"; do cat "$TMP/$h.txt" 2>/dev/null; done)
    missing=""
    for o in $opts; do
        grep -qE -- "--$o( |\$)" <<<"$text" || missing="$missing --$o"
    done
    check "every option $f lists is in wattage ${helps[*]} --help${missing:+ (missing:$missing)}" test -z "$missing"
done
finish
