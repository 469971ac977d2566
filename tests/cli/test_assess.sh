#!/usr/bin/env bash
# `wattage assess start|status|report` over the real daemon on the fake NVML (2 GPUs, energy
# counters), beside a facility site (tests/unit/test_kpi.c's: wall, facility and inlet meters,
# written over the hour around now) and a carbon series imported for the zone. A 20-s
# assessment: the checklist names what is missing with its config key, a second start is
# refused without --force, the daemon is restarted midway (the record survives it, and the
# chips' gap is seen with about the time it was down), status's coverage is checked against
# the stored readings, and the report in html, json and md: its energy is `wattage energy`'s
# over the same window, the HTML makes no network request. Then the errors.
. tests/cli/lib.sh
SITE=${WATTAGE_BUILD:-build}/tests/unit/test_kpi
PY=/usr/bin/python3
mkdir -p "$TMP/site" "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
NOW=$(date +%s)
WATTAGE_KPI_SITE_DIR=$TMP/site WATTAGE_KPI_SITE_T0=$((NOW - 1800)) "$SITE" write_site \
    >"$TMP/site.log" 2>&1
check "the facility site is written" grep -q '^1 passed' "$TMP/site.log"
DB=$TMP/site/site.db
CFG=$TMP/site/site.yaml
printf 'store:\n  flush_interval: 200ms\ncarbon:\n  zone: TEST\n' >>"$CFG"
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/plain.yaml"
# Grid intensity every minute, actuals, over the hour around now.
$PY - "$TMP/ci.csv" $((NOW - 1800)) $((NOW + 1800)) <<'PY'
import sys
out, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(out, "w") as f:
    f.write("timestamp,gco2_per_kwh\n")
    for t in range(a - a % 60, b, 60):
        f.write("%d,%d\n" % (t, 200 + (t // 60) % 7 * 10))
PY
"$BIN" import carbon "$TMP/ci.csv" --zone TEST --db "$DB" >"$TMP/imp.txt" 2>&1
check "the carbon series is imported" test $? -eq 0

export FAKE_NVML_GPUS=2 FAKE_NVML_POWER=300,100,5 FAKE_NVML_UTIL=0:0:6:0
start_daemon() {
    PORT=$(free_port)
    URL=http://127.0.0.1:$PORT
    WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$CFG" --db "$DB" --interval 0.5 \
        --listen "127.0.0.1:$PORT" 2>>"$TMP/run.log"
    DAEMON=$!
    wait_for 15 curl -sf "$URL/healthz" -o /dev/null
}
api() {
    local args=(-s -o "$TMP/body" -w '%{http_code}' -X "$1")
    [[ $# -ge 3 ]] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
    curl "${args[@]}" "$URL$2"
}
jget() { $PY -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
check "the daemon answers" start_daemon
sleep 1.5

# Before any assessment: status and report say how to start one.
"$BIN" assess status --db "$DB" -c "$CFG" --url "$URL" >/dev/null 2>"$TMP/e1"
check "status without an assessment: exit 1" test $? -eq 1
check "  ... naming the record and how to start one" \
    grep -q "$TMP/site/assessment.json: no assessment (start one with \`wattage assess start\`)" "$TMP/e1"
"$BIN" assess report --db "$DB" -c "$CFG" --url "$URL" >/dev/null 2>"$TMP/e2"
check "report without an assessment: exit 1, saying so" \
    bash -c '[[ $0 == 1 ]] && grep -q "no assessment (start one" "$1"' $? "$TMP/e2"
"$BIN" assess start --duration soon --db "$DB" -c "$CFG" --url "$URL" >/dev/null 2>"$TMP/e3"
check "a bad --duration: exit 2" test $? -eq 2
check "  ... naming the option and the value" grep -q -- '--duration: .*(got "soon")' "$TMP/e3"
"$BIN" assess start --duration 0s --db "$DB" -c "$CFG" --url "$URL" >/dev/null 2>&1
check "--duration 0s: exit 2" test $? -eq 2
"$BIN" assess start --db "$TMP/nowhere/w.db" -c "$CFG" --url "$URL" >/dev/null 2>"$TMP/e4"
check "no store: exit 1, naming it" \
    bash -c '[[ $0 == 1 ]] && grep -q "no store at $1" "$2"' $? "$TMP/nowhere/w.db" "$TMP/e4"
"$BIN" assess start --db "$DB" -c "$CFG" --url "http://127.0.0.1:$(free_port)" >/dev/null 2>"$TMP/e5"
check "no daemon: exit 1, saying the assessment needs one" \
    bash -c '[[ $0 == 1 ]] && grep -q "no daemon answers.*start it (wattage run)" "$1"' $? "$TMP/e5"
"$BIN" assess frobnicate >/dev/null 2>"$TMP/e6"
check "an unknown subcommand: exit 2, naming it" \
    bash -c '[[ $0 == 2 ]] && grep -q "unknown subcommand .frobnicate." "$1"' $? "$TMP/e6"
check "no record was written by the failures" test ! -e "$TMP/site/assessment.json"

# A configuration without topology or carbon: the checklist names what to set.
"$BIN" assess start --duration 1h --name bare --db "$DB" -c "$TMP/plain.yaml" --url "$URL" \
    >"$TMP/bare.txt" 2>&1
check "start with a bare configuration: exit 0" test $? -eq 0
msg=$($PY - "$TMP/bare.txt" <<'PY' 2>&1
import re, sys
t = open(sys.argv[1]).read()
def row(layer):
    m = re.search(r"^  \[(x| )\] %s +(.*)\n(?:               to add it: (.*)\n)?" % layer, t, re.M)
    assert m, (layer, t)
    return m.group(1) == "x", m.group(3) or ""
ok, _ = row("chip"); assert ok, t
for layer, key in (("node", "collectors.rapl.enabled"), ("wall", "role pdu_outlet or bmc"),
                   ("facility", "role facility_total"), ("carbon", "carbon.zone"),
                   ("jobs", "wattage job start")):
    ok, add = row(layer)
    assert not ok and key in add, (layer, ok, add)
# the inlet sensors are the store's (the site's), whatever the configuration says
ok, _ = row("inlet"); assert ok and re.search(r"inlet +[1-9] inlet temperature sensors read", t), t
print("ok")
PY
)
check "  ... chip found; node, wall, facility, carbon, jobs, inlet missing with their keys ($msg)" test "$msg" = ok
"$BIN" assess start --duration 20s --db "$DB" -c "$CFG" --url "$URL" >/dev/null 2>"$TMP/e7"
check "a second start without --force: exit 1" test $? -eq 1
check "  ... naming the running assessment and --force" grep -q '"bare" is running.*--force' "$TMP/e7"

# The real one: a job runs over its first part.
c=$(api POST /api/v1/jobs '{"name": "train-a", "gpus": [0, 1]}')
check "a job starts (201)" test "$c" = 201
JOB=$(jget "$TMP/body" "d['id']")
JOB_START=$(jget "$TMP/body" "d['start_s']")
"$BIN" assess start --duration 20s --name site-a --force --db "$DB" -c "$CFG" --url "$URL" \
    >"$TMP/start.txt" 2>&1
check "start --force: exit 0" test $? -eq 0
check "  ... says it replaced the running one" grep -q 'replaced the assessment "bare" (it was still running' "$TMP/start.txt"
curl -s "$URL/api/v1/status" -o "$TMP/status0.json"
CLOCK_OK=$($PY -c "
import json; d = json.load(open('$TMP/status0.json'))
print('no' if any(r.get('component') == 'clock' for r in d['health']['reasons']) else 'yes')")
msg=$($PY - "$TMP/start.txt" "$CLOCK_OK" <<'PY' 2>&1
import re, sys
t, clock = open(sys.argv[1]).read(), sys.argv[2] == "yes"
got = dict(re.findall(r"^  \[(x| )\] (\w+)", t, re.M)[i][::-1] for i in range(8))
want = {"chip": "x", "node": " ", "wall": "x", "facility": "x", "carbon": "x", "jobs": "x",
        "inlet": "x", "clock": "x" if clock else " "}
assert got == want, (got, want)
assert "to add it: collectors.rapl.enabled" in t
assert re.search(r"measurable: %d of 8 layers" % (7 if clock else 6), t), t
print("ok")
PY
)
check "the site's checklist: everything but RAPL (clock as the daemon says: $CLOCK_OK) ($msg)" test "$msg" = ok
"$BIN" assess status --json --db "$DB" -c "$CFG" --url "$URL" >"$TMP/s0.json" 2>"$TMP/s0.err"
check "status --json: exit 0" test $? -eq 0
START=$(jget "$TMP/s0.json" "int(d['start_s'])")
END=$(jget "$TMP/s0.json" "int(d['end_s'])")
check "the record: 20 s from a whole second" test $((END - START)) -eq 20
sleep 5
c=$(api POST "/api/v1/jobs/$JOB/end")
check "the job ends (200)" test "$c" = 200
JOB_END=$(jget "$TMP/body" "d['end_s']")

# Restart the daemon midway: a gap in the chips' readings, the record kept.
kill "$DAEMON"
wait "$DAEMON" 2>/dev/null
DOWN=$(date +%s.%N)
sleep 4
check "the daemon starts again" start_daemon
UP=$(date +%s.%N)
"$BIN" assess report --format md --db "$DB" -c "$CFG" --url "$URL" >"$TMP/mid.md" 2>"$TMP/mid.err"
check "a report before the end: exit 0" test $? -eq 0
check "  ... says it is unfinished" bash -c \
    'grep -q "\*\*unfinished: [0-9]* s of 20 s so far" "$0" && grep -q "unfinished:" "$1"' "$TMP/mid.md" "$TMP/mid.err"
"$BIN" assess status --db "$DB" -c "$CFG" --url "$URL" >"$TMP/mid.txt" 2>&1
check "status (text) after the restart: the same assessment, running" \
    bash -c 'grep -q "^assessment \"site-a\"" "$0" && grep -q "^running: .* remaining" "$0"' "$TMP/mid.txt"
while [[ $(date +%s) -le $((END + 1)) ]]; do sleep 0.5; done

"$BIN" assess status --json --db "$DB" -c "$CFG" --url "$URL" >"$TMP/s1.json" 2>"$TMP/s1.err"
check "status --json at the end: exit 0" test $? -eq 0
"$BIN" query wattage_gpu_power_watts --db "$DB" --from $((START - 300)) --to "$END" --json \
    >"$TMP/q.json" 2>/dev/null
check "the chips' readings can be queried" test -s "$TMP/q.json"
# the job's end as stored: the API's answer may come before the end moves to its edge sample
"$BIN" job show train-a --json --url "$URL" >"$TMP/job.json" 2>/dev/null &&
    JOB_END=$(jget "$TMP/job.json" "d['end_s']")
msg=$($PY - "$TMP/s1.json" "$TMP/q.json" "$START" "$END" "$DOWN" "$UP" "$JOB_END" "$JOB_START" <<'PY' 2>&1
import json, sys
from datetime import datetime
s, q = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
start, end = int(sys.argv[3]), int(sys.argv[4])
down, up, job_end, job_start = map(float, sys.argv[5:9])
L = {l["layer"]: l for l in s["layers"]}
assert s["name"] == "site-a" and s["finished"] is True and s["remaining_seconds"] == 0, s
assert abs(s["elapsed_seconds"] - 20) < 1e-6, s["elapsed_seconds"]
h = datetime.utcfromtimestamp(start).hour
assert h in s["hours_seen"] and s["hours_seen_count"] in (1, 2), s["hours_seen"]
assert s["daemon"] is True
# the chips: the union of both GPUs' spans between readings at most 3 median steps apart
spans = []
for ser in q["series"]:
    t = [datetime.fromisoformat(p[0].replace("Z", "+00:00")).timestamp() for p in ser["points"]]
    d = sorted(b - a for a, b in zip(t, t[1:]) if b > a)
    bound = 3 * d[len(d) // 2]
    for a, b in zip(t, t[1:]):
        if b - a <= bound:
            spans.append((max(a, start), min(b, end)))
    if end - t[-1] <= bound:
        spans.append((max(t[-1], start), end))
spans = sorted(x for x in spans if x[1] > x[0])
cov, cur, gaps, longest = 0.0, start, 0, 0.0
for a, b in spans:
    if a > cur:
        gaps, longest = gaps + 1, max(longest, a - cur)
    if b > cur:
        cov, cur = cov + b - max(a, cur), b
if cur < end:
    gaps, longest = gaps + 1, max(longest, end - cur)
c = L["chip"]
assert c["series"] == 2, c
assert abs(c["covered_seconds"] - cov) < 0.01, (c["covered_seconds"], cov)
assert c["gaps"] == gaps and abs(c["longest_gap_seconds"] - longest) < 0.01, (c, gaps, longest)
# the gap is the restart: about as long as the daemon was down, and inside it
assert c["gaps"] >= 1 and 0.6 < c["coverage"] < 0.9, c
assert up - down - 1.5 < c["longest_gap_seconds"] < up - down + 2.5, (c, up - down)
assert down - 2 < c["longest_gap_from_s"] < down + 1, (c, down)
# the site's meters and sensors (every 10 s) and the carbon steps cover it all
for k in ("wall", "facility", "inlet", "carbon"):
    assert L[k]["coverage"] > 0.999 and L[k]["gaps"] == 0 and L[k]["series"] > 0, L[k]
assert L["facility"]["series"] >= 2 and L["inlet"]["series"] >= 3, (L["facility"], L["inlet"])
# the job covered the start up to its end
j = L["jobs"]
cov = job_end - max(start, job_start)
assert j["series"] == 1 and abs(j["covered_seconds"] - cov) < 0.01, (j, cov)
# RAPL: the daemon has none (not a layer at start nor now), though the site's store holds a
# node's CPU energy series, which coverage counts as they are
assert L["node"]["at_start"] is False and L["node"]["now"] is False, L["node"]
assert L["node"]["series"] >= 1 and L["node"]["coverage"] > 0.999, L["node"]
assert "collectors.rapl.enabled" in L["node"]["to_add"]
for k in ("chip", "wall", "facility", "inlet", "carbon", "jobs"):
    assert L[k]["at_start"] is True, L[k]
assert L["jobs"]["now"] is True, L["jobs"]  # ended, but in the last 24 h
print("ok")
PY
)
check "status --json: coverage per layer as the readings give it, the restart's gap seen ($msg)" test "$msg" = ok

# The report, finished: JSON first, its figures against `wattage energy` over the same window.
R=("$BIN" assess report --db "$DB" -c "$CFG" --url "$URL")
"${R[@]}" --format json -o "$TMP/r.json" 2>"$TMP/rj.err"
check "report --format json: exit 0" test $? -eq 0
"$BIN" energy --db "$DB" --from "$START" --to "$END" --json >"$TMP/e.json" 2>/dev/null
msg=$($PY - "$TMP/r.json" "$TMP/e.json" "$START" "$END" <<'PY' 2>&1
import json, sys
r, e = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
start, end = int(sys.argv[3]), int(sys.argv[4])
assert r["from_s"] == start and r["to_s"] == end, (r["from_s"], r["to_s"])
a = r["assessment"]
assert a["name"] == "site-a" and a["state"] == "finished: 20 s", a["state"]
assert a["from_s"] == start and a["to_s"] == end
got = {(g["gpu"], g["uuid"]): g["energy_joules"] for g in r["gpus"] if g["node"] == ""}
want = {(x["gpu"], x["uuid"]): x["energy_joules"] for x in e["series"]
        if (x.get("gpu"), x.get("uuid")) in got and x["method"] == "counter"}
assert len(got) == 2 and set(want) == set(got), (got, want)
for k in got:
    assert want[k] > 1000 and abs(got[k] - want[k]) <= 1e-6 * want[k], (k, got[k], want[k])
bv = a["baseline_vs_rest"]
third = start + 20 / 3
assert abs(bv["baseline_to_s"] - third) < 1e-6 and bv["rest_to_s"] == end, bv
f = {x["name"]: x for x in bv["figures"]}
assert len(f) == 9, f
g = f["gpu_power"]
assert g["baseline"] > 0 and g["rest"] > 0 and abs(g["difference"] - (g["rest"] - g["baseline"])) < 1e-9, g
for x in f.values():
    if x["baseline"] is None or x["rest"] is None:
        assert x["difference"] is None, x
L = {l["layer"]: l for l in a["layers"]}
assert 0.6 < L["chip"]["coverage"] < 0.9 and L["chip"]["gaps"] >= 1, L["chip"]
print("ok")
PY
)
check "the report's GPU energy is wattage energy's over [start, end]; baseline is the first third ($msg)" test "$msg" = ok

"${R[@]}" --format md >"$TMP/r.md" 2>/dev/null
check "report --format md: the assessment, then the report" bash -c \
    'grep -q "^# wattage assessment: site-a" "$0" && grep -q "\*\*finished: 20 s\.\*\*" "$0" &&
     grep -q "^| node | no | no | [0-9.]*% | [0-9]* | [0-9.]* | collectors.rapl.enabled" "$0" &&
     grep -q "^| chip | yes | yes | [6-8][0-9]\.[0-9]% | [1-9]" "$0" &&
     grep -q "^| GPU mean power | W |" "$0" && grep -q "^# wattage report" "$0" &&
     grep -q "^## Findings" "$0"' "$TMP/r.md"

"${R[@]}" -o "$TMP/r.html" 2>/dev/null
check "report (html): exit 0" test $? -eq 0
check "  ... the assessment section right after <body>, then the report" bash -c \
    'grep -q "<body>.\?<section id=.assessment.><h1>wattage assessment: site-a</h1>" <(tr -d "\n" <"$0") &&
     grep -q "<tr data-layer=.chip.>" "$0" && grep -q "<tr data-figure=.gpu_power.>" "$0" &&
     grep -q "<h1>wattage report</h1>" "$0" && grep -q "data-chart=" "$0"' "$TMP/r.html"
check "  ... no http(s) URL in a src, href or url()" \
    bash -c '! grep -Eiq "(src|href)=[\"'"'"']?https?:|url\\(['"'"'\"]?https?:|<script[^>]* src=|<link" "$0"' "$TMP/r.html"
CHROME=(chromium --headless --no-sandbox --disable-gpu --disable-background-networking
    --disable-component-update --disable-sync --no-first-run --disable-default-apps
    --disable-extensions --proxy-server=127.0.0.1:9 --host-resolver-rules="MAP * ~NOTFOUND")
chromium_run() {
    rm -rf "$TMP/prof"
    timeout 120 "${CHROME[@]}" --user-data-dir="$TMP/prof" --enable-logging=stderr --v=0 \
        --log-net-log="$1.net.json" --dump-dom "file://$2" >"$1" 2>"$1.console"
}
page_requests() {
    grep -o '"url":"[^"]*"' "$1" | grep -v '"url":"file:' |
        grep -Ev '(google\.com|googleapis\.com|gvt1\.com|gstatic\.com)/' | sort -u
}
if ! command -v chromium >/dev/null; then
    skip "the assessment in a headless Chromium" "chromium is not installed (scripts/deps.sh --test)"
else
    printf '<html><body><img src="http://example.invalid/x.png"></body></html>' >"$TMP/control.html"
    chromium_run "$TMP/control.dom" "$TMP/control.html"
    check "control: the net log shows a page's request" bash -c \
        "$(declare -f page_requests); page_requests '$TMP/control.dom.net.json' | grep -q example.invalid"
    chromium_run "$TMP/r.dom" "$TMP/r.html"
    check "Chromium loads the assessment" grep -q "id=\"assessment\"" "$TMP/r.dom"
    req=$(page_requests "$TMP/r.dom.net.json")
    check "the assessment makes no network request (${req:-none})" test -z "$req"
fi

# A finished assessment is replaced without --force; a new one is in its baseline at first.
"$BIN" assess start --duration 1h --name next --db "$DB" -c "$CFG" --url "$URL" >"$TMP/next.txt" 2>&1
check "start over a finished assessment: exit 0, saying so" \
    grep -q 'replaced the assessment "site-a" (finished)' "$TMP/next.txt"
sleep 2
"${R[@]}" --format json -o "$TMP/n.json" 2>"$TMP/n.err"
msg=$($PY -c "
import json; a = json.load(open('$TMP/n.json'))['assessment']
assert a['baseline_vs_rest'] is None and a['finished'] is False, a
assert a['state'].startswith('unfinished: '), a['state']
print('ok')" 2>&1)
check "in its baseline: no comparison yet, and unfinished ($msg)" test "$msg" = ok
"${R[@]}" --format pdf >/dev/null 2>"$TMP/e8"
check "an unknown --format: exit 2, naming it" \
    bash -c '[[ $0 == 2 ]] && grep -q -- "--format: expected html, json or md, not .pdf." "$1"' $? "$TMP/e8"
# A damaged record names its field; --force replaces it.
printf '{"name": "x", "start_s": 10, "end_s": 20, "layers_at_start": ["chips"]}\n' \
    >"$TMP/site/assessment.json"
"$BIN" assess status --db "$DB" -c "$CFG" --url "$URL" >/dev/null 2>"$TMP/e9"
check "a damaged record: exit 1, naming the file and field" \
    bash -c '[[ $0 == 1 ]] && grep -q "assessment.json: layers_at_start: unknown layer" "$1"' $? "$TMP/e9"
"$BIN" assess start --db "$DB" -c "$CFG" --url "$URL" >/dev/null 2>"$TMP/e10"
check "  ... start refuses it without --force" \
    bash -c '[[ $0 == 1 ]] && grep -q "replace it with --force" "$1"' $? "$TMP/e10"
"$BIN" assess start --force --db "$DB" -c "$CFG" --url "$URL" >/dev/null 2>&1
check "  ... and replaces it with --force" test $? -eq 0
"$BIN" assess start --duration 400d --force --db "$DB" -c "$CFG" --url "$URL" >/dev/null 2>"$TMP/e11"
check "a --duration past 366 days: exit 2, naming the option" \
    bash -c '[[ $0 == 2 ]] && grep -q -- "--duration: .*(got \"400d\")" "$1"' $? "$TMP/e11"
# The facility row counts every IT role (the PUE category's), not only it_total.
check "the site's facility row: its two it_total meters, category not stated" grep -q \
    '^  \[x\] facility 2 facility_total and 2 IT meters (2 it_total; PUE category not stated) in the topology$' "$TMP/start.txt"
sed -e 's/{target: ups, point: out, role: it_total}/{target: ups, point: out, role: ups_output}/' \
    -e 's/{target: ups-a, point: out, role: it_total,/{target: ups-a, point: out, role: pdu_output,/' \
    "$CFG" >"$TMP/cat.yaml"
"$BIN" assess start --force --name cat --db "$DB" -c "$TMP/cat.yaml" --url "$URL" >"$TMP/cat.txt" 2>&1
check "UPS and PDU output meters instead: exit 0" test $? -eq 0
check "  ... counted as IT meters by role, category 1 (the lowest)" grep -q \
    '^  \[x\] facility 2 facility_total and 2 IT meters (1 ups_output, 1 pdu_output; PUE category 1) in the topology$' "$TMP/cat.txt"
kill "$DAEMON"
wait "$DAEMON" 2>/dev/null
# Without the daemon: status still reads the store, and says the layers now are unknown.
"$BIN" assess status --db "$DB" -c "$CFG" --url "$URL" >"$TMP/nod.txt" 2>&1
check "status without the daemon: exit 0, layers now unknown" bash -c \
    '[[ $0 == 0 ]] && grep -q "layers now: unknown (the daemon does not answer)" "$1" &&
     grep -q "^chip  *yes  *?  " "$1"' $? "$TMP/nod.txt"
finish
