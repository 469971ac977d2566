#!/usr/bin/env bash
# `wattage report` on a store built by the real daemon on the fake NVML (2 GPUs: GPU 0 idle at
# first, temperatures climbing past the slowdown threshold, a job with epoch marks carrying
# tokens, a restart leaving a gap) beside a facility site (tests/unit/test_kpi.c's, written over
# the same hour) and a carbon series imported with `wattage import carbon`. The HTML is opened in
# a real headless Chromium: no console error, every chart drew points, no network request
# (the net log, with every host mapped nowhere and the proxy on a closed port); a screenshot of
# each chart is kept under the test's directory. Then JSON and Markdown, and the bad inputs: an
# empty window, a window without data, no facility meters, another node's store, a gap.
. tests/cli/lib.sh
SITE=${WATTAGE_BUILD:-build}/tests/unit/test_kpi
PY=/usr/bin/python3
mkdir -p "$TMP/site" "$TMP/sys" "$TMP/proc" "$TMP/shots"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
NOW=$(date +%s)
WATTAGE_KPI_SITE_DIR=$TMP/site WATTAGE_KPI_SITE_T0=$((NOW - 1800)) "$SITE" write_site \
    >"$TMP/site.log" 2>&1
check "the facility site is written" grep -q '^1 passed' "$TMP/site.log"
DB=$TMP/site/site.db
CFG=$TMP/site/site.yaml
printf 'store:\n  flush_interval: 200ms\ncarbon:\n  zone: TEST\n' >>"$CFG"

t0=$(date +%s.%N)
export FAKE_NVML_T0=$t0 FAKE_NVML_GPUS=2 FAKE_NVML_POWER=300,100,5 FAKE_NVML_UTIL=0:0:6:0 \
    FAKE_NVML_TEMP=80,0.4 FAKE_NVML_SLOWDOWN=87 FAKE_NVML_THERMAL=1
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
check "the daemon answers" start_daemon
FROM=$(date +%s)
c=$(api POST /api/v1/jobs '{"name": "train-a", "gpus": [0, 1]}')
check "a job starts (201)" test "$c" = 201
JOB=$($PY -c "import json; print(json.load(open('$TMP/body'))['id'])")
for i in 1 2 3 4; do
    sleep 2
    api POST "/api/v1/jobs/$JOB/marks" "{\"kind\": \"epoch\", \"index\": $i, \"tokens\": $((i * 1000000))}" >/dev/null
done
c=$(api POST "/api/v1/jobs/$JOB/end")
check "the job ends (200)" test "$c" = 200
sleep 1
kill "$DAEMON"
wait "$DAEMON" 2>/dev/null
GAP_FROM=$(date +%s)
sleep 6
GAP_TO=$(date +%s)
check "the daemon starts again after a gap" start_daemon
sleep 4
kill "$DAEMON"
wait "$DAEMON" 2>/dev/null
TO=$(($(date +%s) + 60))
# Grid intensity every 10 s over the window: high while the job ran, low soon after it (so a
# carbon-aware start before the window's end would have saved carbon).
read -r JS JE < <($PY -c "import json; d=json.load(open('$TMP/body')); print(int(d['start_s']), int(d['end_s']) + 1)")
$PY - "$TMP/ci.csv" $((NOW - 1800)) $((TO + 600)) "$JS" "$JE" <<'PY'
import sys
out, a, b, js, je = sys.argv[1], *map(int, sys.argv[2:])
with open(out, "w") as f:
    f.write("timestamp,gco2_per_kwh\n")
    for t in range(a - a % 10, b, 10):
        f.write("%d,%d\n" % (t, 400 if js - 20 <= t <= je + 10 else 90))
PY
"$BIN" import carbon "$TMP/ci.csv" --zone TEST --db "$DB" >"$TMP/imp.txt" 2>&1
check "the carbon series is imported" test $? -eq 0

R=("$BIN" report --db "$DB" -c "$CFG" --from $((NOW - 1800)) --to $TO)
"${R[@]}" -o "$TMP/r.html" 2>"$TMP/r.err"
check "report exits 0" test $? -eq 0
SIZE=$(stat -c %s "$TMP/r.html")
check "the HTML is written ($SIZE bytes)" test "$SIZE" -gt 10000

# Offline: nothing in the file points outside it.
check "no http(s) URL in a src, href or url()" \
    bash -c '! grep -Eiq "(src|href)=[\"'"'"']?https?:|url\\(['"'"'\"]?https?:|<script[^>]* src=|<link" "$0"' "$TMP/r.html"

# chromium_run OUT.DOM FILE: the DOM after load, console lines and the net log beside it.
CHROME=(chromium --headless --no-sandbox --disable-gpu --disable-background-networking
    --disable-component-update --disable-sync --no-first-run --disable-default-apps
    --disable-extensions --proxy-server=127.0.0.1:9 --host-resolver-rules="MAP * ~NOTFOUND")
chromium_run() {
    rm -rf "$TMP/prof"
    timeout 120 "${CHROME[@]}" --user-data-dir="$TMP/prof" --enable-logging=stderr --v=0 \
        --log-net-log="$1.net.json" --dump-dom "file://$2" >"$1" 2>"$1.console"
}
# The page's own requests: every URL in the net log except the browser's own services (update
# checks, time sync) that it makes whatever the page is.
page_requests() {
    grep -o '"url":"[^"]*"' "$1" | grep -v '"url":"file:' |
        grep -Ev '(google\.com|googleapis\.com|gvt1\.com|gstatic\.com)/' | sort -u
}
console_errors() { grep -E 'CONSOLE|Uncaught|ERROR:.*(html|file:)' "$1" | grep -v 'service_worker' ; }
if ! command -v chromium >/dev/null; then
    skip "the report in a headless Chromium" "chromium is not installed (scripts/deps.sh --test)"
else
    # The checks see what they look for: a control page with a request and a console error.
    printf '<html><body><img src="http://example.invalid/x.png"><script>console.error("boom")</script></body></html>' \
        >"$TMP/control.html"
    chromium_run "$TMP/control.dom" "$TMP/control.html"
    check "control: the net log shows a page's request" bash -c \
        "$(declare -f page_requests); page_requests '$TMP/control.dom.net.json' | grep -q example.invalid"
    check "control: a console error is seen" grep -q boom "$TMP/control.dom.console"

    chromium_run "$TMP/r.dom" "$TMP/r.html"
    check "Chromium loads the report" grep -q 'data-chart=' "$TMP/r.dom"
    req=$(page_requests "$TMP/r.dom.net.json")
    check "the report makes no network request (${req:-none})" test -z "$req"
    cerr=$(console_errors "$TMP/r.dom.console")
    check "no console error (${cerr:-none})" test -z "$cerr"
    msg=$($PY - "$TMP/r.dom" "$TMP/shots" <<'PY' 2>&1
import re, sys, html
dom, shots = open(sys.argv[1]).read(), sys.argv[2]
figs = re.findall(r"<figure data-chart=\"([a-z_]+)\"([^>]*>.*?)</figure>", dom, re.S)
names = [n for n, _ in figs]
want = ["util_power", "power_stack", "epochs", "pue_load", "reconcile", "carbon", "temperature", "inlet"]
assert names == want, names
for name, body in figs:
    assert "data-missing" not in body, (name, "drew nothing: " + re.sub("<[^>]+>", "", body)[:200])
    drawn = len(re.findall(r"<(circle|rect|path)\b", body))
    told = int(re.search(r'data-for="%s">(\d+)<' % name, body).group(1))
    assert told > 0 and drawn > 0, (name, told, drawn)
    assert re.search(r"<text[^>]*>[^<]*\((W|C|kWh|ratio|%|gCO2e/kWh[^)]*)\)", body) or "(%" in body, (name, "no unit on an axis")
    assert re.search(r'<p class="reading">[^<]{20,}</p>', body), (name, "no reading")
    style = re.search(r"<style>(.*?)</style>", dom, re.S).group(1)
    with open("%s/%s.html" % (shots, name), "w") as f:
        f.write("<!DOCTYPE html><html><head><meta charset='utf-8'><style>%s</style></head><body>"
                "<figure>%s</figure></body></html>" % (style, body))
print("ok")
PY
)
    check "8 charts, each with points, axes with units and a reading ($msg)" test "$msg" = ok
    shots=0
    for f in "$TMP"/shots/*.html; do
        rm -rf "$TMP/prof"
        timeout 120 "${CHROME[@]}" --user-data-dir="$TMP/prof" --hide-scrollbars \
            --window-size=960,420 --screenshot="${f%.html}.png" "file://$f" >/dev/null 2>&1
        [[ -s ${f%.html}.png ]] && shots=$((shots + 1))
    done
    check "a screenshot of each chart ($shots of 8, in $TMP/shots)" test "$shots" -eq 8
    echo "# screenshots: $TMP/shots (kept with WATTAGE_KEEP_TMP=1)"
fi

# What the report found, in its JSON: the idle GPU, the throttling, the gap, the job's epochs.
"${R[@]}" --format json >"$TMP/r.json" 2>/dev/null
check "report --format json exits 0" test $? -eq 0
msg=$($PY - "$TMP/r.json" "$GAP_FROM" "$GAP_TO" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
g = {x["gpu"]: x for x in d["gpus"] if x["node"] == ""}
assert set(g) == {"0", "1"}, d["gpus"]
assert g["0"]["idle_joules"] > 0 and g["1"]["idle_joules"] == 0, g
assert g["0"]["method"] in ("measured", "integrated") and g["0"]["energy_joules"] > 0, g
assert g["1"]["throttle_seconds"] > 0, g
assert g["0"]["gaps"] >= 1 and g["1"]["gaps"] >= 1, g
kinds = [f["kind"] for f in d["findings"]]
for k in ("idle_burn", "throttle", "unaccounted", "gap", "carbon_shift"):
    assert k in kinds, (k, kinds)
e = [f["energy_joules"] for f in d["findings"]]
assert e == sorted(e, reverse=True), e
j = d["jobs"][0]
assert j["name"] == "train-a" and len(j["phases"]) == 4, j
assert all(p["kpi"]["tokens_per_kwh"] > 0 for p in j["phases"]), j["phases"]
assert d["carbon_steps"] > 0
print("ok")
PY
)
check "idle burn, throttle, gap, unaccounted power and a carbon shift are found ($msg)" test "$msg" = ok
"${R[@]}" --format md >"$TMP/r.md" 2>/dev/null
check "report --format md has the findings and the KPI table" \
    bash -c 'grep -q "^## Findings" "$0" && grep -q "^| facility | PUE" "$0"' "$TMP/r.md"

# Bad input: the report says what is missing instead of failing or drawing nonsense.
"${R[@]:0:6}" --from $TO --to $((NOW - 1800)) >/dev/null 2>"$TMP/e1"
check "an empty window is a usage error (exit 2)" test $? -eq 2
check "  ... that says so" grep -q "the window is empty" "$TMP/e1"
"$BIN" report --db "$DB" -c "$CFG" --from $((NOW - 86400)) --to $((NOW - 86000)) \
    -o "$TMP/none.html" 2>"$TMP/e2"
check "a window without readings still writes a report (exit 0)" test $? -eq 0
check "  ... saying there are no GPU readings" grep -q "no GPU power readings in the window" "$TMP/e2"
check "  ... nor facility energy" grep -q "no facility energy in the window" "$TMP/e2"
check "  ... and drawing no GPU chart" bash -c \
    '! grep -q "data-chart=.util_power.><figcaption><b>[^<]*</b></figcaption><svg" "$0" &&
     grep -q "data-chart=.util_power. data-missing" "$0"' "$TMP/none.html"
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/plain.yaml"
"$BIN" report --db "$DB" -c "$TMP/plain.yaml" --from $((FROM - 2)) --to $TO -o "$TMP/nofac.html" \
    2>"$TMP/e3"
check "no facility meters: exit 0" test $? -eq 0
check "  ... says there is no PUE" grep -q "no facility meters in the topology" "$TMP/e3"
check "  ... and the PUE chart says why" grep -q "data-chart=.pue_load. data-missing" "$TMP/nofac.html"
# A store imported from another node's nvidia-smi log.
printf 'timestamp, index, uuid, power.draw [W], utilization.gpu [%%], temperature.gpu\n' >"$TMP/smi.csv"
for s in $(seq 0 30); do
    printf '%s, 0, GPU-aaaa, %d.0 W, %d %%, 50\n' "$(date -u -d @$((FROM + s)) '+%Y/%m/%d %H:%M:%S.000')" \
        $((200 + s)) $((s * 3)) >>"$TMP/smi.csv"
done
"$BIN" import nvidia-smi "$TMP/smi.csv" --node other-node --db "$TMP/other.db" >"$TMP/imp2.txt" 2>&1
check "another node's nvidia-smi log is imported" test $? -eq 0
"$BIN" report --db "$TMP/other.db" -c "$CFG" --from $((FROM - 2)) --to $((FROM + 40)) \
    -o "$TMP/other.html" 2>"$TMP/e4"
check "another node's store: exit 0" test $? -eq 0
check "  ... says whose store it is" grep -q "another node's store.*other-node" "$TMP/e4"
check "  ... and still draws that node's GPU" grep -q "GPU 0 other-node" "$TMP/other.html"
# The gap: the power line is broken there (a new subpath after it), and a finding names it.
msg=$($PY - "$TMP/r.html" <<'PY' 2>&1
import re, sys
dom = open(sys.argv[1]).read()
t = re.search(r"<figure data-chart='temperature'>(.*?)</figure>", dom, re.S).group(1)
paths = re.findall(r"<path fill='none' stroke='[^']+' stroke-width='1'  d='([^']*)'", t)
assert paths and all(p.count("M") >= 2 for p in paths), [p.count("M") for p in paths]
assert "no readings of GPU" in dom
print("ok")
PY
)
check "a window over a gap: lines break there and a finding says so ($msg)" test "$msg" = ok
# Two windows: GPU 0 idles for the first 6 s of the fake's time, then works.
T0I=${t0%.*}
C=("$BIN" report --db "$DB" -c "$CFG" --compare)
"${C[@]}" "$((T0I + 1))..$((T0I + 6))" "$((T0I + 7))..$((T0I + 13))" --format json \
    >"$TMP/cmp.json" 2>"$TMP/cmp.err"
check "report --compare exits 0" test $? -eq 0
msg=$($PY - "$TMP/cmp.json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
f = {x["name"]: x for x in d["figures"]}
assert len(f) == 9, f
i = f["idle_share"]
assert i["a"] > 0.2 and i["b"] < 0.05, i
assert abs(i["difference"] - (i["b"] - i["a"])) < 1e-12 and i["noise"] >= 0, i
assert i["exceeds_noise"] is True, i
# a figure a window lacks (PUE over seconds, between sparse facility readings) is null, not 0
for x in f.values():
    if x["a"] is None or x["b"] is None:
        assert x["difference"] is None and x["exceeds_noise"] is None, x
assert f["gpu_power"]["a"] > 0 and f["gpu_power"]["b"] > 0, f["gpu_power"]
print("ok")
PY
)
check "the idle share drops from A to B beyond the noise ($msg)" test "$msg" = ok
"${C[@]}" "$((T0I + 1))..$((T0I + 13))" "$((T0I + 1))..$((T0I + 13))" --format json >"$TMP/self.json" 2>/dev/null
msg=$($PY -c "
import json; d = json.load(open('$TMP/self.json'))
bad = [x for x in d['figures'] if x['difference'] not in (None, 0) or x['exceeds_noise'] is True]
print('ok' if not bad else bad)" 2>&1)
check "a window compared with itself differs nowhere ($msg)" test "$msg" = ok
"${C[@]}" "$((T0I + 1))..$((T0I + 6))" "$((T0I + 7))..$((T0I + 13))" -o "$TMP/cmp.html" 2>/dev/null
check "the comparison as HTML has the table" grep -q "<tr data-figure='idle_share'>" "$TMP/cmp.html"
"${C[@]}" "$((T0I + 6))..$((T0I + 1))" "$((T0I + 7))..$((T0I + 13))" >/dev/null 2>"$TMP/e6"
check "an empty compare window is a usage error (exit 2)" test $? -eq 2
check "  ... that names it" grep -q "the window $((T0I + 6))..$((T0I + 1)) is empty" "$TMP/e6"
"${C[@]}" "$((T0I + 1))..$((T0I + 6))" >/dev/null 2>"$TMP/e7"
check "one window only is a usage error (exit 2)" test $? -eq 2
"$BIN" report --help | grep -q -- "--format html|json|md"
check "report --help names its options" test $? -eq 0
"$BIN" report --format pdf --db "$DB" >/dev/null 2>"$TMP/e5"
check "an unknown --format is a usage error (exit 2)" test $? -eq 2
finish
