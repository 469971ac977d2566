#!/usr/bin/env bash
# `wattage report --standard iso30134` for a colocation site (issue 47 item 4): a year of
# 15-minute meter data with four PDU outlet registers (tests/cli/meter_year.py --outlets,
# imported with `wattage import meters`), mapped to tenants in statement.tenants: each tenant's
# annual IT energy to the 0.01 kWh of the generator's sums, its coverage (pdu-a-4's day without
# readings), its share of E_IT, the outlet of no tenant in its own row, and the rows adding up
# to the outlets' total exactly. Bad input: an outlet that is no pdu_outlet meter, and one named
# twice (exit 2, the file and line named). The same table in the text of eu-eed (never in its
# Annex JSON or CSV) and in the text and JSON of enefg (§ 15); the text without an empty
# (unassigned) row.
. tests/cli/lib.sh
export TZ=UTC
DB=$TMP/s.db
python3 tests/cli/meter_year.py --outlets "$TMP/outlets.csv" 2026 "$TMP/year.csv" "$TMP/sums.json"
"$BIN" import meters "$TMP/year.csv" --db "$DB" >/dev/null 2>&1 &&
    "$BIN" import meters "$TMP/outlets.csv" --db "$DB" >/dev/null 2>&1
check "the year and its outlets import" test $? -eq 0
conf() { # conf FILE TENANTS_YAML
    cat >"$1" <<YAML
topology:
  meters:
    - {target: grid, point: import, role: facility_total}
    - {target: ups, point: import, role: ups_output}
    - {target: pdu-a-1, point: import, role: pdu_outlet, node: cust-1}
    - {target: pdu-a-2, point: import, role: pdu_outlet, node: cust-2}
    - {target: pdu-a-3, point: import, role: pdu_outlet, node: cust-3}
    - {target: pdu-a-4, point: import, role: pdu_outlet, node: cust-4}
statement:
  site: colo-1
  tenants:
$2
YAML
}
conf "$TMP/a.yaml" '    - {name: acme, outlets: [pdu-a-1/import, pdu-a-2/import]}
    - name: globex
      outlets: [pdu-a-4/import]'
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/a.yaml" --db "$DB" --json >"$TMP/a.json" 2>"$TMP/a.err"
check "the statement answers ($(head -c 200 "$TMP/a.err"))" test $? -eq 0
msg=$(python3 - "$TMP/a.json" "$TMP/sums.json" <<'PY' 2>&1
import json, sys
s = json.load(open(sys.argv[1])); g = json.load(open(sys.argv[2]))
o = g["outlets_kwh"]
t = s["tenants"]
rows = {r["tenant"]: r for r in t["rows"]}
assert list(rows) == ["acme", "globex", None], list(rows)
want = {"acme": o["pdu-a-1"] + o["pdu-a-2"], "globex": o["pdu-a-4"], None: o["pdu-a-3"]}
for k, kwh in want.items():
    assert abs(rows[k]["e_it_joules"] / 3.6e6 - kwh) < 0.01, (k, rows[k], kwh)
assert [rows[k]["outlets"] for k in want] == [2, 1, 1], rows
n = g["intervals"]
assert rows["acme"]["measured_intervals"] == n and rows["acme"]["coverage"] == 1, rows["acme"]
assert rows["globex"]["measured_intervals"] == n - g["outlet_hole_intervals"], rows["globex"]
assert rows["globex"]["estimated"] > 0 and rows["acme"]["estimated"] == 0, rows
e_it = s["energy"]["e_it_joules"]
assert abs(e_it / 3.6e6 - g["it_kwh"]) < 1, e_it
for k in want:
    assert abs(rows[k]["share_of_e_it"] - rows[k]["e_it_joules"] / e_it) < 1e-12, rows[k]
# the rows (whole joules) add up to the outlets' total exactly, and that is the outlets' own sum
total = 0.0
for r in t["rows"]:
    total += r["e_it_joules"]
assert total == t["e_outlets_joules"], (total, t["e_outlets_joules"])
assert all(r["e_it_joules"] == int(r["e_it_joules"]) for r in t["rows"]), t["rows"]
assert abs(total / 3.6e6 - sum(o.values())) < 0.01, (total, o)
assert t["label"] == "annual", t
# the outlets are listed as meters, and in neither E_DC nor E_IT
m = {x["meter"]: x for x in s["meters"]}
assert m["pdu-a-3/import"]["role"] == "pdu_outlet", m
assert abs(s["energy"]["e_dc_joules"] / 3.6e6 - g["facility_kwh"]) < 1, s["energy"]
print("ok acme %.1f kWh (%.2f %% of E_IT), globex coverage %.4f" % (
    rows["acme"]["e_it_joules"] / 3.6e6, 100 * rows["acme"]["share_of_e_it"], rows["globex"]["coverage"]))
PY
)
check "each tenant's IT energy to the 0.01 kWh, coverage, share; the unassigned outlet; rows add up: $msg" \
    bash -c '[[ $0 == ok* ]]' "$msg"
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/a.yaml" --db "$DB" >"$TMP/a.txt" 2>/dev/null
check "the text has the tenants' table" bash -c 'grep -q "^tenants (colocation" "$0" &&
    grep -Eq "^  acme +[0-9.]+ kWh   2 outlets  35040/35040 measured" "$0" &&
    grep -Eq "^  \(unassigned\) +[0-9.]+ kWh   1 outlet  " "$0"' "$TMP/a.txt"
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/a.yaml" --db "$DB" --json \
    >"$TMP/a2.json" 2>/dev/null
conf "$TMP/b.yaml" '    - {name: acme, outlets: [pdu-a-1/import, pdu-a-2/import, pdu-a-3/import]}
    - name: globex
      outlets: [pdu-a-4/import]'
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/b.yaml" --db "$DB" --json >"$TMP/b.json" 2>/dev/null
check "the tenants are inputs of the hash: moving an outlet changes it" python3 -c "
import json, sys
a, a2, b = (json.load(open(f))['method']['inputs_sha256'] for f in sys.argv[1:4])
assert a == a2 and a != b, (a, a2, b)
r = json.load(open(sys.argv[3]))['tenants']['rows']
assert r[-1]['tenant'] is None and r[-1]['outlets'] == 0 and r[-1]['e_it_joules'] == 0, r" \
    "$TMP/a.json" "$TMP/a2.json" "$TMP/b.json"

"$BIN" report --standard iso30134 --period 2026 -c "$TMP/b.yaml" --db "$DB" >"$TMP/b.txt" 2>/dev/null
check "every outlet assigned: no empty (unassigned) row in the text, the tenants' still there" \
    bash -c '! grep -q "unassigned" "$0" && grep -Eq "^  acme +[0-9.]+ kWh   3 outlets" "$0" &&
    grep -Eq "^  outlets +[0-9.]+ kWh  \(the rows add up to it\)" "$0"' "$TMP/b.txt"

# The EU file: its text has the tenants' table beside the Annex symbols, its JSON and CSV (the
# Annex file, keyed by its schema, which has no per-customer field) do not.
SCHEMA=deploy/standards/eu-eed-2024-1364.v1.schema.json
"$BIN" report --standard eu-eed --period 2026 --schema "$SCHEMA" -c "$TMP/a.yaml" --db "$DB" >"$TMP/eu.txt" 2>"$TMP/eu.err"
check "eu-eed text: the tenants' table, said to be outside the Annex file ($(head -c 200 "$TMP/eu.err"))" \
    bash -c 'grep -q "^E_IT " "$0" && grep -q "^tenants (colocation, statement.tenants; not part of the Annex file: annual" "$0" &&
    grep -Eq "^  acme +[0-9.]+ kWh   2 outlets  35040/35040 measured" "$0" &&
    grep -Eq "^  globex +[0-9.]+ kWh   1 outlet  " "$0" && grep -Eq "^  \(unassigned\) " "$0"' "$TMP/eu.txt"
"$BIN" report --standard eu-eed --period 2026 --schema "$SCHEMA" -c "$TMP/a.yaml" --db "$DB" --json >"$TMP/eu.json" 2>/dev/null &&
    "$BIN" report --standard eu-eed --period 2026 --schema "$SCHEMA" -c "$TMP/a.yaml" --db "$DB" --csv >"$TMP/eu.csv" 2>/dev/null
check "  ... and neither the EU JSON nor its CSV carries it" bash -c \
    'python3 -c "import json, sys; d = json.load(open(sys.argv[1])); assert \"kpis\" in d and \"tenants\" not in d, list(d)" "$0" &&
     grep -q "^E_IT," "$1" && ! grep -Eq "acme|globex|tenant" "$0" "$1"' "$TMP/eu.json" "$TMP/eu.csv"

# EnEfG § 15: a colocation operator tells each customer its energy yearly: the table in the
# checks' text and JSON (the same rows as the iso30134 statement's).
for f in a b; do
    cp "$TMP/$f.yaml" "$TMP/de-$f.yaml" && printf '  commissioned: 2021-06\n' >>"$TMP/de-$f.yaml"
done
TABLE=deploy/standards/enefg.v1.json
"$BIN" report --standard enefg --period 2026 --schema "$TABLE" -c "$TMP/de-a.yaml" --db "$DB" --json >"$TMP/de.json" 2>"$TMP/de.err"
check "enefg JSON: the tenants' rows, the same as the iso30134 statement's ($(head -c 200 "$TMP/de.err"))" \
    python3 -c "
import json, sys
d = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2]))
assert 'checks' in d and d['tenants'] == s['tenants'], (d.get('tenants'), s['tenants'])
assert [r['tenant'] for r in d['tenants']['rows']] == ['acme', 'globex', None], d['tenants']" \
    "$TMP/de.json" "$TMP/a.json"
"$BIN" report --standard enefg --period 2026 --schema "$TABLE" -c "$TMP/de-a.yaml" --db "$DB" >"$TMP/de.txt" 2>/dev/null
"$BIN" report --standard enefg --period 2026 --schema "$TABLE" -c "$TMP/de-b.yaml" --db "$DB" >"$TMP/de-b.txt" 2>/dev/null
check "enefg text: the tenants' table as § 15 customer information; no empty (unassigned) row" \
    bash -c 'grep -q "^EnEfG checks" "$0" && grep -q "^tenants (EnEfG § 15 customer information, statement.tenants: annual" "$0" &&
    grep -Eq "^  acme +[0-9.]+ kWh   2 outlets" "$0" && grep -Eq "^  \(unassigned\) +[0-9.]+ kWh   1 outlet  " "$0" &&
    grep -Eq "^  acme +[0-9.]+ kWh   3 outlets" "$1" && ! grep -q unassigned "$1"' "$TMP/de.txt" "$TMP/de-b.txt"

# Bad input.
conf "$TMP/u.yaml" '    - {name: acme, outlets: [pdu-a-1/import]}
    - name: globex
      outlets: [pdu-a-9/import]'
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/u.yaml" --db "$DB" >/dev/null 2>"$TMP/u.err"
rc=$?
check "an outlet that is no pdu_outlet meter: exit 2, its line named ($(head -c 200 "$TMP/u.err"))" \
    bash -c '[[ $0 == 2 ]] && grep -q "u.yaml:14: statement.tenants\[1\].outlets\[0\]: pdu-a-9/import is not a topology meter with role pdu_outlet" "$1"' \
    $rc "$TMP/u.err"
conf "$TMP/g.yaml" '    - {name: acme, outlets: [grid/import]}'
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/g.yaml" --db "$DB" >/dev/null 2>"$TMP/g.err"
check "a meter of another role is no outlet: exit 2" bash -c \
    '[[ $0 == 2 ]] && grep -q "grid/import is not a topology meter with role pdu_outlet" "$1"' $? "$TMP/g.err"
conf "$TMP/d.yaml" '    - {name: acme, outlets: [pdu-a-1/import]}
    - {name: globex, outlets: [pdu-a-2/import, pdu-a-1/import]}'
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/d.yaml" --db "$DB" >/dev/null 2>"$TMP/d.err"
rc=$?
check "an outlet named twice: exit 2, both lines named ($(head -c 200 "$TMP/d.err"))" bash -c \
    '[[ $0 == 2 ]] && grep -q "d.yaml:13: statement.tenants\[1\].outlets\[1\]: pdu-a-1/import is named twice (tenant acme'"'"'s, line 12)" "$1"' \
    $rc "$TMP/d.err"
"$BIN" check-config "$TMP/d.yaml" >/dev/null 2>"$TMP/dc.err"
check "check-config finds it too" bash -c '[[ $0 != 0 ]] && grep -q "d.yaml:13:" "$1"' $? "$TMP/dc.err"
finish
