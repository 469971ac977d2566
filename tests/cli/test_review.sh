#!/usr/bin/env bash
# `wattage review` on the stores tests/unit/test_review.c writes (five weeks of two nodes; in
# planted.db node-a's J/token rises 10% from its driver change 570.86.15 -> 580.65.06 on
# 2026-12-02 10:00Z, in noise.db only the driver changes): the finding in text and JSON,
# --fail-on-finding's exit status, no finding in noise alone, a week without data said, and
# bad arguments refused with the argument named.
. tests/cli/lib.sh
GEN=${WATTAGE_BUILD:-build}/tests/unit/test_review
PY=/usr/bin/python3

WATTAGE_REVIEW_DIR=$TMP "$GEN" write_stores >"$TMP/gen.log" 2>&1
check "the stores are written" grep -q '^1 passed' "$TMP/gen.log"
echo "{}" >"$TMP/empty.yaml"
R=("$BIN" review -c "$TMP/empty.yaml")

"${R[@]}" --db "$TMP/planted.db" --week 2026-W49 >"$TMP/p.txt" 2>"$TMP/p.err"
check "review exits 0 with a finding and no --fail-on-finding" test $? -eq 0
check "the text names the change point" \
    grep -q '2026-12-02T10:00:00Z driver 570.86.15 -> 580.65.06 on node-a (GPU 0)' "$TMP/p.txt"
check "the text's finding names the driver change and the node" \
    grep -Eq '^  J/token \+(9\.[5-9]|10\.[0-4])% since driver 570.86.15 -> 580.65.06 on node-a' "$TMP/p.txt"
check "the text says the noise band's method" grep -q 'mean +- max(3 sd, 2%)' "$TMP/p.txt"
check "KPIs without inputs say not available and why" \
    grep -q '^PUE .*not available (no facility_total meter' "$TMP/p.txt"

"${R[@]}" --db "$TMP/planted.db" --week 2026-W49 --json --fail-on-finding >"$TMP/p.json"
check "--fail-on-finding exits 3 on a finding" test $? -eq 3
msg=$($PY - "$TMP/p.json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["week"] == "2026-W49" and d["from"] == "2026-11-30T00:00:00Z", d["week"]
assert d["has_data"] is True and d["weeks_before"] == 4
k = {x["name"]: x for x in d["kpis"]}
j = k["joules_per_generated_token"]
assert j["unit"] == "J/token" and j["band"]["days"] == 28 and len(j["weeks_before"]) == 4, j
assert k["pue"]["available"] is False and k["pue"]["value"] is None and k["pue"]["why"], k["pue"]
[c] = d["changes"]
assert c["kind"] == "driver" and c["before"] == "570.86.15" and c["after"] == "580.65.06", c
assert c["nodes"] == ["node-a"] and c["first"] == "2026-12-02T10:00:00Z", c
[f] = d["findings"]
assert f["kpi"] == "joules_per_generated_token" and f["change"] == 0, f
assert 0.095 < f["change_ratio"] < 0.105, f
assert "since driver 570.86.15 -> 580.65.06 on node-a" in f["text"], f
PY
)
check "the JSON holds the KPIs, the change and the finding${msg:+: $msg}" test -z "$msg"

"${R[@]}" --db "$TMP/noise.db" --week 2026-W49 --json --fail-on-finding >"$TMP/n.json"
check "noise alone: --fail-on-finding exits 0" test $? -eq 0
msg=$($PY - "$TMP/n.json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["findings"] == [], d["findings"]
assert len(d["changes"]) == 1, d["changes"]
k = {x["name"]: x for x in d["kpis"]}
assert k["joules_per_generated_token"]["verdict"] == "within noise", k
PY
)
check "noise alone: the change is listed, no finding${msg:+: $msg}" test -z "$msg"

"${R[@]}" --db "$TMP/planted.db" --week 2026-W51 >"$TMP/e.txt"
check "a week without data exits 0" test $? -eq 0
check "a week without data is said" grep -q 'no readings stored in this week' "$TMP/e.txt"
check "a week without data gives no J/token" grep -q '^J/token .* not available' "$TMP/e.txt"

"${R[@]}" --db "$TMP/planted.db" --week 2026-49 2>"$TMP/b.err"
check "a bad --week exits 2" test $? -eq 2
check "a bad --week is named" grep -q -- '--week: expected an ISO week like 2026-W49, got "2026-49"' "$TMP/b.err"
"${R[@]}" --db "$TMP/planted.db" --weeks 13 2>"$TMP/w.err"
check "--weeks 13 exits 2" test $? -eq 2
check "--weeks out of range is named" grep -q -- '--weeks: expected 1 to 12, got "13"' "$TMP/w.err"
"${R[@]}" --db "$TMP/missing.db" --week 2026-W49 2>"$TMP/m.err"
check "a missing store exits 1" test $? -eq 1

# The daemon: review.weekly_dir set, it reviews the last whole ISO week (an hour after its end)
# into review-YYYY-Www.json, publishes wattage_review_findings{week} and the configuration's
# digest, and a reload with another file changes the digest.
read -r MON WEEK < <($PY -c '
import datetime as d, time
t = d.datetime.fromtimestamp(time.time() - 3600, d.timezone.utc).date()
m = t - d.timedelta(days=t.weekday() + 7)
y, w, _ = m.isocalendar()
print(int(d.datetime(m.year, m.month, m.day, tzinfo=d.timezone.utc).timestamp()), "%04d-W%02d" % (y, w))')
mkdir -p "$TMP/live" "$TMP/sys" "$TMP/proc" # weekly/ is the daemon's to create
WATTAGE_REVIEW_DIR=$TMP/live WATTAGE_REVIEW_WEEK=$MON "$GEN" write_stores >"$TMP/live.log" 2>&1
check "the stores for last week are written" grep -q '^1 passed' "$TMP/live.log"
cat >"$TMP/run.yaml" <<YAML
review:
  weekly_dir: $TMP/weekly
  check_interval: 1s
alerts:
  rules:
    - {name: WeeklyReviewFinding, metric: wattage_review_findings, op: ">", threshold: 0}
YAML
PORT=$(free_port)
WATTAGE_NVML_LIBRARY=$TMP/none.so WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc \
    bg "$BIN" run -c "$TMP/run.yaml" --db "$TMP/live/planted.db" --listen "127.0.0.1:$PORT" \
    2>"$TMP/run.log"
DAEMON=$!
has_file() { test -s "$TMP/weekly/review-$WEEK.json"; }
check "the daemon writes review-$WEEK.json" wait_for 30 has_file
msg=$($PY - "$TMP/weekly/review-$WEEK.json" "$WEEK" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["week"] == sys.argv[2], d["week"]
[f] = d["findings"]
assert f["kpi"] == "joules_per_generated_token", f
assert "since driver 570.86.15 -> 580.65.06 on node-a" in f["text"], f
PY
)
check "the weekly file holds the finding${msg:+: $msg}" test -z "$msg"
findings() {
    curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/m.txt" &&
        grep -q "^wattage_review_findings{week=\"$WEEK\"} 1\$" "$TMP/m.txt"
}
check "wattage_review_findings{week} 1 on /metrics" wait_for 15 findings
alert() {
    $PY - "$PORT" "$WEEK" <<'PY'
import json, sys, urllib.request
d = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/api/v1/alerts", timeout=2))
sys.exit(0 if [a for a in d["alerts"] if a["alertname"] == "WeeklyReviewFinding"
                and a["state"] == "firing" and a["labels"].get("week") == sys.argv[2]] else 1)
PY
}
check "an alert rule on wattage_review_findings fires for the week" wait_for 15 alert
check "the daemon logged the weekly review" grep -q "review: weekly review written: .*findings=1" "$TMP/run.log"
digest=$(sed -n 's/^wattage_config_info{digest="\([0-9a-f]\{16\}\)"} 1$/\1/p' "$TMP/m.txt")
check "wattage_config_info{digest} on /metrics" test -n "$digest"
echo "# another file" >>"$TMP/run.yaml"
kill -HUP "$DAEMON"
new_digest() {
    curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/m2.txt" &&
        grep -q '^wattage_config_info{digest="[0-9a-f]\{16\}"} 1$' "$TMP/m2.txt" &&
        ! grep -q "digest=\"$digest\"" "$TMP/m2.txt"
}
check "after a reload with another file the digest changes" wait_for 15 new_digest
check "check-config accepts the review section" "$BIN" check-config "$TMP/run.yaml" \
    >/dev/null
echo "review: {weeks: 13}" >"$TMP/bad.yaml"
"$BIN" check-config "$TMP/bad.yaml" >/dev/null 2>"$TMP/bad.err"
check "review.weeks out of range is refused" test $? -eq 2
check "the refusal names the file, line and key" grep -q "bad.yaml:1: review.weeks" "$TMP/bad.err"
finish
