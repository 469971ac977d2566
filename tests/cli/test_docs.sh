#!/usr/bin/env bash
# The documents hold together: the README fits a few screens and links every document in docs/;
# every relative link of the README and of docs/*.md names a file that exists, and every
# #anchor a heading of its target (the anchors GitHub makes: lower case, punctuation dropped,
# spaces to hyphens, -1, -2 for repeats). Inline code and fenced blocks are not read as links.
. tests/cli/lib.sh
cat >"$TMP/links.py" <<'PY'
import os, re, sys

def slugs(path):
    out, seen, fence = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
            continue
        m = None if fence else re.match(r"^(#{1,6}) (.*)", line)
        if m:
            t = re.sub(r"[`*]", "", m.group(2).strip().lower())
            t = re.sub(r"[^\w\- ]", "", t).replace(" ", "-")
            n = seen.get(t, 0)
            seen[t] = n + 1
            out.add(t if n == 0 else "%s-%d" % (t, n))
    return out

def links(path):
    fence = False
    for no, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        line = re.sub(r"`[^`]*`", "", line)
        for m in re.finditer(r"\[[^\]]*\]\(([^)\s]+)\)", line):
            yield no, m.group(1)

bad, n = [], 0
pages = ["README.md"] + sorted("docs/" + f for f in os.listdir("docs") if f.endswith(".md"))
for page in pages:
    for no, target in links(page):
        if re.match(r"^[a-z]+:", target):
            continue
        n += 1
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(dest):
            bad.append("%s:%d: %s: no such file" % (page, no, target))
        elif anchor and (not dest.endswith(".md") or anchor not in slugs(dest)):
            bad.append("%s:%d: %s: no such heading" % (page, no, target))
print(n)
for b in bad:
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
n=$(python3 "$TMP/links.py" 2>"$TMP/bad")
check "every relative link and anchor of README.md and docs/*.md resolves ($n links$(sed 's/^/; /' "$TMP/bad" | tr -d '\n'))" \
    test ! -s "$TMP/bad" -a "${n:-0}" -gt 20

lines=$(wc -l <README.md)
check "README.md is at most 300 lines ($lines)" test "$lines" -le 300

missing=""
for f in docs/*.md; do
    b=${f#docs/}
    [[ $b == README.md ]] && continue
    grep -qF "](docs/$b)" README.md || missing="$missing $b"
    grep -qF "]($b)" docs/README.md || missing="$missing docs/README.md:$b"
done
check "the README and docs/README.md link every document in docs/${missing:+ (missing:$missing)}" \
    test -z "$missing"

# a dangling link is found: the check is not vacuous
mkdir -p "$TMP/probe/docs"
printf '# A\n\n[x](docs/b.md#nowhere) [y](docs/c.md)\n' >"$TMP/probe/README.md"
printf '# B\n\n## Here\n' >"$TMP/probe/docs/b.md"
(cd "$TMP/probe" && python3 "$TMP/links.py") >/dev/null 2>"$TMP/probe.err"
check "a missing heading and a missing file are both found" \
    bash -c 'grep -q "#nowhere: no such heading" "$0" && grep -q "docs/c.md: no such file" "$0"' "$TMP/probe.err"
finish
