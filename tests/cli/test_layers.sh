#!/usr/bin/env bash
# The layering rules, read from the code: core/ includes nothing from the layers above it, and no
# two src/ files depend on each other (A calls what B defines and B calls what A defines, read
# from the built objects' symbols), except the pairs in layers_allow.txt.
source "$(dirname "$0")/lib.sh"
build=${WATTAGE_BUILD:-build}
src=${WATTAGE_SRCDIR:-$PWD}

up=$(grep -n '#include "\(collect\|serve\|audit\|alert\|store\|cli\)/' "$src"/src/core/*.[ch])
if [[ -z $up ]]; then ok "core/ includes nothing from collect, serve, audit, alert, store or cli"
else not_ok "core/ includes an upper layer" "$up"; fi

pairs=$(/usr/bin/python3 - "$build/src" <<'PY'
import collections, glob, os, subprocess, sys
root = sys.argv[1]
defs, und = {}, {}
for o in glob.glob(os.path.join(root, "**", "*.o"), recursive=True):
    k = os.path.relpath(o, root)[:-2]
    d, u = set(), set()
    for line in subprocess.run(["nm", "-P", o], capture_output=True, text=True).stdout.splitlines():
        p = line.split()
        if len(p) >= 2 and p[1] in "TDBRC":
            d.add(p[0])
        elif len(p) >= 2 and p[1] == "U":
            u.add(p[0])
    defs[k], und[k] = d, u
owner = {s: k for k, d in defs.items() for s in d}
dep = collections.defaultdict(set)
for k, u in und.items():
    dep[k] |= {owner[s] for s in u if s in owner and owner[s] != k}
print(len(defs))
for a in sorted(dep):
    for b in sorted(dep[a]):
        if a < b and a in dep[b]:
            print(a, b)
PY
)
nobj=$(head -n 1 <<<"$pairs")
if [[ $nobj -gt 20 ]]; then ok "read the symbols of $nobj objects"
else not_ok "too few objects under $build/src ($nobj): build first"; fi
allowed=$(grep -v '^#' "$src/tests/cli/layers_allow.txt")
new=$(tail -n +2 <<<"$pairs" | grep -vxF -f <(echo "$allowed") || true)
if [[ -z $new ]]; then ok "no mutual dependency between two src/ files beyond the allow-list"
else not_ok "mutual dependencies" "$new"; fi
stale=$(grep -vxF -f <(tail -n +2 <<<"$pairs"; echo '#') <<<"$allowed" || true)
if [[ -z $stale ]]; then ok "every allowed pair still exists (remove cut ones)"
else not_ok "allowed pairs that are gone: remove them from layers_allow.txt" "$stale"; fi
finish
