#!/usr/bin/env bash
# The live page (GET /) of a daemon on the fake NVML (2 GPUs), opened in a real headless
# Chromium: it is served with a strict Content-Security-Policy beside the untouched /metrics and
# /api/v1/*; the DOM after its fetches shows each fake GPU's power and the node's, every chart
# of the last hour drew points, a job started through the API is listed as running and an alert
# provoked by a rule (power > 1 W) as firing; no console error, no request beyond the daemon;
# a screenshot is kept under build/artifacts/live_page/. GET /api/v1/series (the charts'
# history) answers the stored points and names a bad parameter. Then with a token that
# protects reads: the page's files stay public, every data fetch without the token is refused,
# the page asks for the token, and with it (#token=… in the address) it draws the same figures.
. tests/cli/lib.sh
PY=/usr/bin/python3
ART=${WATTAGE_BUILD:-build}/artifacts/live_page
mkdir -p "$TMP/sys" "$TMP/proc" "$ART"
rm -f "$ART"/*.png
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
export FAKE_NVML_T0=$(date +%s.%N) FAKE_NVML_GPUS=2 FAKE_NVML_POWER=300,100,7
printf 'store:\n  flush_interval: 200ms\nalerts:\n  rules:\n    - name: PowerSeen\n      metric: wattage_gpu_power_watts\n      op: ">"\n      threshold: 1\n' \
    >"$TMP/c.yaml"
# A vLLM server on both GPUs (tests/peers/inference_server.py) for the serving panel.
bg $PY tests/peers/inference_server.py --engine vllm --port-file "$TMP/llm.port" \
    --t0 "$($PY -c 'import time; print(time.time() - 60)')"
LLM=$!
wait_for 10 test -s "$TMP/llm.port" || { not_ok "the vLLM peer started"; finish; }
printf 'inference:\n  targets:\n    - name: llm\n      url: http://127.0.0.1:%s/metrics\n      gpus: [0, 1]\n' \
    "$(cat "$TMP/llm.port")" >>"$TMP/c.yaml"
printf 'daemon:\n  auth:\n    token_file: %s\n    protect_reads: true\n' "$TMP/token" \
    >"$TMP/tok.yaml"
cat "$TMP/c.yaml" >>"$TMP/tok.yaml"
printf 's3cret-live-token\n' >"$TMP/token"
chmod 600 "$TMP/token"

start_daemon() { # CONFIG DB
    PORT=$(free_port)
    URL=http://127.0.0.1:$PORT
    WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$1" --db "$2" --interval 0.5 \
        --listen "127.0.0.1:$PORT" 2>>"$TMP/run.log"
    DAEMON=$!
    wait_for 15 curl -sf "$URL/healthz" -o /dev/null
}
stop_daemon() { kill "$DAEMON"; wait "$DAEMON" 2>/dev/null; }

CHROME=(chromium --headless --no-sandbox --disable-gpu --disable-background-networking
    --disable-component-update --disable-sync --no-first-run --disable-default-apps
    --disable-extensions --proxy-server=127.0.0.1:9
    --host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
# page OUT URL: the DOM once the page's fetches are done (virtual time), console and net log beside
page() {
    rm -rf "$TMP/prof"
    timeout 120 "${CHROME[@]}" --user-data-dir="$TMP/prof" --enable-logging=stderr --v=0 \
        --log-net-log="$1.net.json" --virtual-time-budget=4000 --dump-dom "$2" >"$1" 2>"$1.console"
}
shot() { # PNG URL
    rm -rf "$TMP/prof"
    timeout 120 "${CHROME[@]}" --user-data-dir="$TMP/prof" --hide-scrollbars \
        --window-size=1100,1600 --virtual-time-budget=4000 --screenshot="$1" "$2" >/dev/null 2>&1
}
console_errors() { grep -E 'CONSOLE|Uncaught' "$1" | grep -v 'service_worker'; }
# Requests to anything but the daemon (the browser's own update and sync services excepted).
other_requests() {
    grep -o '"url":"[^"]*"' "$1" | grep -v "\"url\":\"http://127.0.0.1:$PORT/" |
        grep -Ev '(google\.com|googleapis\.com|gvt1\.com|gstatic\.com)/' | sort -u
}
# What the page shows, from its DOM, as JSON.
dom_facts() {
    $PY - "$1" <<'PY'
import html, json, re, sys
d = open(sys.argv[1]).read()
charts = dict(re.findall(r'<figure data-chart="(\w+)"[^>]*?data-points="(\d+)"', d))
names = re.findall(r'<figure data-chart="(\w+)"', d)
gpus = {g: float(w) for g, w in re.findall(
    r'<tr data-gpu="(\d+)"><td>\d+</td><td>[^<]*</td><td class="num power">([\d.]+) W</td>', d)}
node = re.search(r'id="node-power"[^>]*>([\d.]+) W<', d)
al = re.search(r'<section id="alerts"[^>]*data-firing="(\d+)"', d)
jb = re.search(r'<section id="jobs"[^>]*data-running="(\d+)"', d)
sv = re.search(r'<section id="serving"[^>]*data-to="([\d.]+)"', d)
login = re.search(r'<form id="login"( hidden="")?', d)
serving = [dict(zip(("target", "energy", "tokens", "name", "models", "jpt", "tpk", "p99", "running",
                     "waiting"), m)) for m in re.findall(
    r'<tr data-target="([^"]*)" data-energy="([^"]*)" data-tokens="([^"]*)"><td>([^<]*)</td>'
    r'<td>([^<]*)</td><td class="num jpt">([^<]*)</td><td class="num tpk">([^<]*)</td>'
    r'<td class="num p99">([^<]*)</td><td class="num running">([^<]*)</td>'
    r'<td class="num waiting">([^<]*)</td>', d)]
print(json.dumps({"names": names, "points": {k: int(v) for k, v in charts.items()},
                  "gpus": gpus, "node": float(node.group(1)) if node else None,
                  "firing": int(al.group(1)) if al else 0, "running": int(jb.group(1)) if jb else 0,
                  "alerts": re.findall(r"<td>(PowerSeen)</td>", d),
                  "jobs": re.findall(r"<td>(live-job)</td>", d),
                  "login_shown": bool(login) and not login.group(1), "serving": serving,
                  "serving_to": float(sv.group(1)) if sv else None,
                  "state": html.unescape(re.search(r'id="state"[^>]*>([^<]*)<', d).group(1))}))
PY
}

check "the daemon answers" start_daemon "$TMP/c.yaml" "$TMP/w.db"

# The page's files: public reads with the strict policy; the other routes as they were.
curl -s -D "$TMP/h" -o "$TMP/index.html" "$URL/"
check "GET / is the page (200, text/html)" bash -c "grep -q '^HTTP/1.1 200' '$TMP/h' && grep -qi '^content-type: text/html' '$TMP/h' && grep -q '<figure data-chart=\"gpu_power\"' '$TMP/index.html'"
csp=$(grep -i '^content-security-policy:' "$TMP/h" | tr -d '\r')
check "a strict CSP: default-src 'none', scripts and fetches from the daemon only, no inline ($csp)" \
    bash -c "[[ \"\$0\" == *\"default-src 'none'\"* && \"\$0\" == *\"script-src 'self'\"* && \"\$0\" == *\"connect-src 'self'\"* && \"\$0\" == *\"frame-ancestors 'none'\"* && \"\$0\" != *unsafe* ]]" "$csp"
check "nosniff and no-referrer go with it" bash -c "grep -qi '^x-content-type-options: nosniff' '$TMP/h' && grep -qi '^referrer-policy: no-referrer' '$TMP/h'"
check "the page has no inline script or style and names no other origin" \
    bash -c '! grep -Eiq "<script>|<style|\\son[a-z]+=|https?://" "$0"' "$TMP/index.html"
for f in live.js live.css; do
    check "GET /ui/$f (200, with the CSP)" bash -c "curl -s -D- -o /dev/null '$URL/ui/$f' | grep -qi '^content-security-policy:'"
done
check "/metrics still serves the exposition" bash -c "curl -s '$URL/metrics' | grep -q '^wattage_gpu_power_watts{'"
check "/api/v1/status still answers the snapshot, and says the store's path" $PY -c "
import json, os, sys, urllib.request
d = json.load(urllib.request.urlopen(sys.argv[1] + '/api/v1/status'))
assert len(d['gpus']) == 2, d['gpus']
assert d['store']['path'] == os.path.realpath(sys.argv[2]), d['store']" "$URL" "$TMP/w.db"

# The series API: points of the stored readings, and bad parameters named.
check "the store holds a few seconds of power" wait_for 15 $PY -c "
import json, sys, urllib.request
d = json.load(urllib.request.urlopen(sys.argv[1] + '/api/v1/series?match=wattage_gpu_power_watts&from=-1m&step=1s'))
assert len(d['series']) == 2 and all(len(s['points']) >= 4 for s in d['series']), d
for s in d['series']:
    assert s['labels']['uuid'].startswith('GPU-fake-0000-') and s['metric'] == 'wattage_gpu_power_watts', s
    assert all(199 <= v <= 401 for _, v in s['points']), s['points']" "$URL"
for q in "from=-1h|match" "match=wattage_gpu_power_watts&from=yesterday|from" \
    "match=wattage_gpu_power_watts&step=fast|step" "match=wattage_gpu_power_watts{gpu=|match" \
    "match=wattage_gpu_power_watts&from=-1m&to=-2m|to"; do
    code=$(curl -g -s -o "$TMP/bad.json" -w '%{http_code}' "$URL/api/v1/series?${q%|*}")
    check "series?${q%|*}: 400 naming ${q#*|}" bash -c "[[ \$0 == 400 ]] && grep -q '\"error\":\"${q#*|}: ' '$TMP/bad.json'" "$code"
done

# A running job and a firing alert for the page to show.
code=$(curl -s -o "$TMP/job.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data-binary '{"name": "live-job", "gpus": [0, 1]}' "$URL/api/v1/jobs")
check "a job starts through the API (201)" test "$code" = 201
check "the rule's alert fires" wait_for 15 $PY -c "
import json, sys, urllib.request
d = json.load(urllib.request.urlopen(sys.argv[1] + '/api/v1/alerts'))
assert any(a['alertname'] == 'PowerSeen' and a['state'] == 'firing' for a in d['alerts']), d" "$URL"

if ! command -v chromium >/dev/null; then
    skip "the live page in a headless Chromium" "chromium is not installed (scripts/deps.sh --test)"
    finish
fi
# The checks see what they look for: a control page with a console error and a foreign request.
printf '<html><body><img src="http://example.invalid/x.png"><script>console.error("boom")</script></body></html>' \
    >"$TMP/control.html"
page "$TMP/control.dom" "file://$TMP/control.html"
check "control: a console error is seen" bash -c "$(declare -f console_errors); console_errors '$TMP/control.dom.console' | grep -q boom"
check "control: a foreign request is seen" bash -c "PORT=$PORT; $(declare -f other_requests); other_requests '$TMP/control.dom.net.json' | grep -q example.invalid"

check "the serving target's energy and tokens are stored (3 steps)" wait_for 20 $PY -c "
import json, sys, urllib.request
for m in ('wattage_inference_energy_joules_total', 'wattage_inference_tokens_total'):
    d = json.load(urllib.request.urlopen(sys.argv[1] + '/api/v1/series?match=' + m + '&from=-5m&step=2s'))
    assert d['series'] and all(len(s['points']) >= 3 for s in d['series']), d" "$URL"
# the server stops: its last readings stay, so the page and this test read the same window
kill "$LLM"
sleep 1.5
page "$TMP/p.dom" "$URL/"
facts=$(dom_facts "$TMP/p.dom")
echo "# page: $facts"
cerr=$(console_errors "$TMP/p.dom.console")
check "no console error (${cerr:-none})" test -z "$cerr"
req=$(other_requests "$TMP/p.dom.net.json")
check "no request beyond the daemon (${req:-none})" test -z "$req"
check "the page fetched the API (status, series, alerts, jobs in the net log)" bash -c \
    "for p in status series alerts jobs; do grep -q \"\\\"url\\\":\\\"$URL/api/v1/\$p\" '$TMP/p.dom.net.json' || exit 1; done"
check_facts() { # NAME FACTS: the page drew what the daemon has
    msg=$($PY - "$2" <<'PY' 2>&1
import json, sys
f = json.loads(sys.argv[1])
assert f["names"] == ["gpu_power", "node_power", "gpu_util", "gpu_temp"], f["names"]
assert all(f["points"].get(n, 0) > 0 for n in f["names"]), ("a chart without points", f["points"])
assert sorted(f["gpus"]) == ["0", "1"], f["gpus"]
# The fake's power is 300 + 100 sin(...), one phase per GPU: each in range, not one value twice.
assert all(199.5 <= w <= 400.5 for w in f["gpus"].values()), f["gpus"]
assert f["gpus"]["0"] != f["gpus"]["1"], f["gpus"]
assert f["node"] is not None and abs(f["node"] - sum(f["gpus"].values())) <= 0.15, (f["node"], f["gpus"])
assert f["running"] >= 1 and f["jobs"] == ["live-job"], ("the job", f["running"], f["jobs"])
assert f["firing"] >= 1 and "PowerSeen" in f["alerts"], ("the alert", f["firing"], f["alerts"])
assert not f["login_shown"], "the token form is shown"
assert f["state"].startswith("updated "), f["state"]
print("ok")
PY
)
    check "$1 ($msg)" test "$msg" = ok
}
check_facts "the page shows both GPUs' power, the node's, 4 charts with points, the job and the alert" "$facts"
# The serving panel: the target's J per generated token and tokens/kWh from its energy and
# tokens over the last five minutes, as worked out here from the same API over the same window
# (the page says where it ended; the server stopped before, so nothing comes after: equal to the
# 4 digits shown), the e2e p99 by PromQL's histogram_quantile on the buckets' increases (the
# same), requests running or waiting at the last scrape.
msg=$($PY - "$facts" "$URL" <<'PY' 2>&1
import json, math, sys, urllib.parse, urllib.request
f, url = json.loads(sys.argv[1]), sys.argv[2]
assert len(f["serving"]) == 1, f["serving"]
r = f["serving"][0]
assert r["target"] == r["name"] == "llm" and r["models"] == "meta-llama/Llama-3.1-8B-Instruct", r
e, t = float(r["energy"]), float(r["tokens"])
assert e > 0 and t > 0, r
jpt = float(r["jpt"].removesuffix(" J"))
assert math.isclose(jpt, e / t, rel_tol=1e-3), (jpt, e / t)
assert math.isclose(float(r["tpk"].replace(",", "")), t / (e / 3.6e6), rel_tol=1e-3), r
def q(m):
    to = f["serving_to"]
    u = url + "/api/v1/series?" + urllib.parse.urlencode(
        {"match": m, "from": repr(to - 300), "to": repr(to), "step": "2s"})
    return json.load(urllib.request.urlopen(u))["series"]
def inc(p):
    return sum(b[1] if b[1] < a[1] else b[1] - a[1] for a, b in zip(p, p[1:]))
E = sum(inc(s["points"]) for s in q("wattage_inference_energy_joules_total"))
T = sum(inc(s["points"]) for s in q('wattage_inference_tokens_total{kind="generated"}'))
assert abs(jpt / (E / T) - 1) < 1e-3, (jpt, E / T)
b = sorted(((math.inf if s["labels"]["le"] == "+Inf" else float(s["labels"]["le"])), inc(s["points"]))
           for s in q('wattage_inference_latency_seconds_bucket{kind="e2e"}'))
c = [x[1] for x in b]
for i in range(1, len(c)):
    c[i] = max(c[i], c[i - 1])
rank = 0.99 * c[-1]
i = next(k for k in range(len(c)) if c[k] >= rank)
lo, below = (b[i - 1][0], c[i - 1]) if i else (0.0, 0.0)
p99 = b[-2][0] if i == len(c) - 1 else lo + (b[i][0] - lo) * (rank - below) / (c[i] - below)
shown = float(r["p99"].removesuffix(" s"))
assert abs(shown / p99 - 1) < 1e-3, (shown, p99)
assert int(r["running"]) + int(r["waiting"]) >= 1, r
print(f"{jpt} J/token (API {E / T:.4g}), {r['tpk']} tokens/kWh, e2e p99 {shown} s (API {p99:.4g}), "
      f"{r['running']} running, {r['waiting']} waiting")
PY
)
check "the serving panel: $msg" bash -c '[[ $1 == *"tokens/kWh"* ]]' _ "$msg"
shot "$ART/live.png" "$URL/"
check "a screenshot of the page ($ART/live.png)" test -s "$ART/live.png"
stop_daemon

# With a token protecting reads.
check "the daemon answers with a token" start_daemon "$TMP/tok.yaml" "$TMP/t.db"
for p in / /ui/live.js /ui/live.css; do
    check "GET $p needs no token (the page holds no data)" bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' '$URL$p') == 200 ]]"
done
for p in "/api/v1/status" "/api/v1/series?match=wattage_gpu_power_watts" "/api/v1/alerts" "/api/v1/jobs" "/metrics"; do
    check "GET $p without the token: 401" bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' '$URL$p') == 401 ]]"
done
check "GET /api/v1/series with the token: 200" bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cret-live-token' '$URL/api/v1/series?match=wattage_gpu_power_watts') == 200 ]]"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Authorization: Bearer s3cret-live-token' \
    -H 'Content-Type: application/json' --data-binary '{"name": "live-job", "gpus": [0, 1]}' "$URL/api/v1/jobs")
check "the job starts with the token (201)" test "$code" = 201
wait_for 15 $PY -c "
import json, sys, urllib.request
r = urllib.request.Request(sys.argv[1] + '/api/v1/alerts', headers={'Authorization': 'Bearer s3cret-live-token'})
assert json.load(urllib.request.urlopen(r))['firing'] >= 1" "$URL"
wait_for 15 $PY -c "
import json, sys, urllib.request
r = urllib.request.Request(sys.argv[1] + '/api/v1/series?match=wattage_gpu_power_watts&from=-1m&step=1s', headers={'Authorization': 'Bearer s3cret-live-token'})
assert all(len(s['points']) >= 4 for s in json.load(urllib.request.urlopen(r))['series'])" "$URL"

page "$TMP/n.dom" "$URL/"
f=$(dom_facts "$TMP/n.dom")
check "without the token the page asks for it and draws nothing ($f)" $PY -c "
import json, sys
f = json.loads(sys.argv[1])
assert f['login_shown'] and 'token' in f['state'], f
assert not any(f['points'].values()) and not f['gpus'], f" "$f"
page "$TMP/w.dom" "$URL/#token=wrong-token"
f=$(dom_facts "$TMP/w.dom")
check "with a wrong token it asks again and draws nothing" $PY -c "
import json, sys
f = json.loads(sys.argv[1])
assert f['login_shown'] and not f['gpus'], f" "$f"
check "the refusal is said on the page" grep -q 'refused this token' "$TMP/w.dom"

page "$TMP/t.dom" "$URL/#token=s3cret-live-token"
facts=$(dom_facts "$TMP/t.dom")
cerr=$(console_errors "$TMP/t.dom.console")
check "with the token: no console error (${cerr:-none})" test -z "$cerr"
check_facts "with the token the page draws the same" "$facts"
# The fragment stays in the browser: no request line sent carries the token.
check "the token is in no request line the browser sent" bash -c "grep -q '\"line\":\"GET / HTTP' '$TMP/t.dom.net.json' && ! grep -o '\"line\":\"[^\"]*\"' '$TMP/t.dom.net.json' | grep -q s3cret"
shot "$ART/live-token.png" "$URL/#token=s3cret-live-token"
check "a screenshot of the page with the token ($ART/live-token.png)" test -s "$ART/live-token.png"
stop_daemon
finish
