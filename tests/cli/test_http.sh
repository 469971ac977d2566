#!/usr/bin/env bash
# The HTTP API of the real `wattage run` with 8 fake GPUs: /metrics in both formats (promtool
# finds nothing to complain about), gzip, /healthz both ways, /api/v1/status, JSON errors for
# bad paths and methods, the bearer token, listen addresses and their warnings.
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=8
PROM_ACCEPT='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'

# start_daemon NAME PORT ARGS...: runs wattage in the background, logging to $TMP/NAME.log
start_daemon() {
    local name=$1 port=$2
    shift 2
    bg "$BIN" run --listen "127.0.0.1:$port" --db "$TMP/$name.db" "$@" 2>"$TMP/$name.log"
}
# code URL [CURL ARGS...]: prints the HTTP status, body to $TMP/body, headers to $TMP/headers
code() {
    local url=$1
    shift
    curl -s -o "$TMP/body" -D "$TMP/headers" -w '%{http_code}' "$@" "$url"
}
header() { grep -i "^$1:" "$TMP/headers" | head -n 1 | cut -d' ' -f2- | tr -d '\r'; }

PORT=$(free_port)
start_daemon main "$PORT"
U=http://127.0.0.1:$PORT
up() { [[ $(curl -s "$U/metrics" | grep -c '^wattage_gpu_up{.*} 1$') == 8 ]]; }
if ! wait_for 15 up; then
    not_ok "the daemon serves /metrics with 8 GPUs up" "$(cat "$TMP/main.log")"
    finish
fi
ok "the daemon serves /metrics with 8 GPUs up"
check "it logs where it serves" grep -q "serving on http://127.0.0.1:$PORT" "$TMP/main.log"

# --- /metrics, text format
c=$(code "$U/metrics")
check "GET /metrics: 200" test "$c" = 200
check "text format content type" test "$(header content-type)" = "text/plain; version=0.0.4; charset=utf-8"
cp "$TMP/body" "$TMP/metrics.txt"
lint=$(promtool check metrics <"$TMP/metrics.txt" 2>&1)
rc=$?
check "promtool check metrics prints nothing (rc=$rc: $lint)" test -z "$lint" -a $rc -eq 0
n=$(grep -c '^wattage_gpu_power_watts{gpu="[0-7]",uuid="GPU-fake-0000-[0-7]",model="NVIDIA H200"} [0-9.]*$' "$TMP/metrics.txt")
check "8 power series with gpu, uuid and model labels (got $n)" test "$n" = 8
n=$(grep -c '^wattage_gpu_energy_joules_total{gpu="[0-7]",uuid="[^"]*",model="[^"]*"} [0-9.]*$' "$TMP/metrics.txt")
check "8 energy counter series (got $n)" test "$n" = 8
check "build info with the version" grep -qE '^wattage_build_info\{version="[0-9][^"]*"\} 1$' "$TMP/metrics.txt"
check "collector duration self-metric" grep -qE '^wattage_collector_duration_seconds\{collector="nvml"\} [0-9.e-]+$' "$TMP/metrics.txt"
check "collector error self-metric" grep -qE '^wattage_collector_errors_total\{collector="nvml"\} 0$' "$TMP/metrics.txt"
dups=$(grep '^# TYPE ' "$TMP/metrics.txt" | sort | uniq -d)
check "one TYPE line per family ($dups)" test -z "$dups"
# every sample follows its family's TYPE line: the family of each sample equals the last TYPE seen
bad=$(awk '/^# TYPE /{fam=$3; next} /^#/{next} {split($0,a,/[{ ]/); if (a[1]!=fam) print a[1]}' "$TMP/metrics.txt" | head -3)
check "every family's series are together ($bad)" test -z "$bad"
c=$(curl -s -I -o /dev/null -w '%{http_code} %{size_download}' "$U/metrics")
check "HEAD /metrics: 200 without a body ($c)" test "$c" = "200 0"

# --- the rendered exposition is reused between polls, never served stale after one
e1=$(grep '^wattage_gpu_energy_joules_total{gpu="0",uuid="GPU-fake-0000-0",model="NVIDIA H200"}' "$TMP/metrics.txt")
z1=$(curl -s -H 'Accept-Encoding: gzip' "$U/metrics" | gzip -dc | grep '^wattage_gpu_energy_joules_total{gpu="0",uuid="GPU-fake-0000-0",model="NVIDIA H200"}')
sleep 1.3
e2=$(curl -s "$U/metrics" | grep '^wattage_gpu_energy_joules_total{gpu="0",uuid="GPU-fake-0000-0",model="NVIDIA H200"}')
z2=$(curl -s -H 'Accept-Encoding: gzip' "$U/metrics" | gzip -dc | grep '^wattage_gpu_energy_joules_total{gpu="0",uuid="GPU-fake-0000-0",model="NVIDIA H200"}')
check "a new poll shows in the next scrape ($e1 -> $e2)" bash -c '[[ -n $0 && -n $1 && $0 != "$1" ]]' "$e1" "$e2"
check "... gzipped too ($z1 -> $z2)" bash -c '[[ -n $0 && -n $1 && $0 != "$1" ]]' "$z1" "$z2"

# --- OpenMetrics, as Prometheus asks for it
c=$(code "$U/metrics" -H "Accept: $PROM_ACCEPT")
check "OpenMetrics when asked: 200" test "$c" = 200
check "OpenMetrics content type" test "$(header content-type)" = "application/openmetrics-text; version=1.0.0; charset=utf-8"
check "OpenMetrics ends with # EOF" test "$(tail -n 1 "$TMP/body")" = "# EOF"
check "OpenMetrics counter family without _total" grep -qx '# TYPE wattage_gpu_energy_joules counter' "$TMP/body"
check "OpenMetrics counter samples keep _total" grep -q '^wattage_gpu_energy_joules_total{gpu="0"' "$TMP/body"

# --- gzip
c=$(code "$U/metrics" -H 'Accept-Encoding: gzip')
check "gzip when accepted" test "$(header content-encoding)" = gzip
check "the gzip body inflates to the exposition" bash -c 'gzip -dc <"$0" | grep -q "^wattage_gpu_power_watts{gpu=\"7\""' "$TMP/body"
c=$(code "$U/metrics")
check "no gzip when not asked" test -z "$(header content-encoding)"

# --- JSON API
c=$(code "$U/healthz")
check "/healthz: 200 ok" bash -c '[[ $0 == 200 && $(cat "$1") == "{\"status\":\"ok\"}" ]]' "$c" "$TMP/body"
check "/healthz is JSON" test "$(header content-type)" = application/json
c=$(code "$U/api/v1/status")
check "/api/v1/status: 200" test "$c" = 200
check "/api/v1/status is the status object with 8 GPUs" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["gpus"]) == 8 and d["gpus"][0]["power_watts"] > 0, d
assert any(c["name"] == "nvml" for c in d["collectors"])' "$TMP/body"
"$BIN" status --json >"$TMP/status.json" 2>/dev/null
check "/api/v1/status has the keys of status --json" python3 -c '
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
# The daemon adds where its store is (a reader without one asks for it).
assert set(a) == set(b) | {"store"} and a["store"]["path"].endswith(".db"), (sorted(a), sorted(b))
assert set(a["gpus"][0]) == set(b["gpus"][0]), (sorted(a["gpus"][0]), sorted(b["gpus"][0]))' \
    "$TMP/body" "$TMP/status.json"

c=$(code "$U/no/such/thing")
check "unknown path: 404" test "$c" = 404
check "404 body is a JSON error naming the path" python3 -c '
import json, sys; e = json.load(open(sys.argv[1]))["error"]; assert "/no/such/thing" in e, e' "$TMP/body"
c=$(code "$U/metrics" -X POST -d x=1)
check "POST /metrics: 405" test "$c" = 405
check "405 says Allow: GET, HEAD" test "$(header allow)" = "GET, HEAD"
check "405 body is a JSON error" python3 -c 'import json,sys; assert "POST" in json.load(open(sys.argv[1]))["error"]' "$TMP/body"
c=$(code "$U/api/v1/status" -X DELETE)
check "DELETE /api/v1/status: 405" test "$c" = 405
check "the daemon still serves after the errors" test "$(code "$U/healthz")" = 200

# --- a GPU metric the hardware lacks is absent, never zero
P2=$(free_port)
FAKE_NVML_NOT_SUPPORTED=energy,temperature start_daemon nosup "$P2"
has_power() { curl -s "http://127.0.0.1:$P2/metrics" | grep -q '^wattage_gpu_power_watts{gpu="7"'; }
wait_for 15 has_power
curl -s "http://127.0.0.1:$P2/metrics" >"$TMP/nosup.txt"
check "unsupported temperature: no series at all" bash -c '! grep -q "^wattage_gpu_temperature_celsius" "$0"' "$TMP/nosup.txt"
check "unsupported energy counter: no counter series, the integrated one under its own name" bash -c '
    ! grep -q "^wattage_gpu_energy_joules_total" "$0" &&
    grep -q "^wattage_gpu_energy_integrated_joules_total{gpu=\"7\"" "$0"' "$TMP/nosup.txt"
check "the rest is there" grep -q '^wattage_gpu_power_watts{gpu="7"' "$TMP/nosup.txt"
lint=$(promtool check metrics <"$TMP/nosup.txt" 2>&1)
check "promtool is content with it too ($lint)" test -z "$lint"

# --- /healthz 503 when nothing is collected (the test's roots hide RAPL, procfs and the NICs;
# the kernel clock is always there, so its collector is turned off)
P3=$(free_port)
printf 'collectors:\n  clock:\n    enabled: false\n' >"$TMP/none.yaml"
WATTAGE_NVML_LIBRARY=$TMP/no-such-lib.so start_daemon none "$P3" -c "$TMP/none.yaml"
wait_for 10 curl -s -o /dev/null "http://127.0.0.1:$P3/healthz"
c=$(code "http://127.0.0.1:$P3/healthz")
check "/healthz: 503 when no collector runs" test "$c" = 503
check "the 503 says why" python3 -c '
import json, sys; d = json.load(open(sys.argv[1])); assert d["status"] == "unhealthy" and d["why"], d' "$TMP/body"

# --- bearer token
printf 'tok-%s\n' "$RANDOM$RANDOM" >"$TMP/token"
chmod 600 "$TMP/token"
TOKEN=$(cat "$TMP/token")
printf 'daemon:\n  auth:\n    token_file: "%s"\n    protect_reads: true\n' "$TMP/token" >"$TMP/auth.yaml"
P4=$(free_port)
start_daemon auth "$P4" -c "$TMP/auth.yaml"
UA=http://127.0.0.1:$P4
wait_for 10 curl -s -o /dev/null "$UA/healthz"
c=$(code "$UA/metrics")
check "protect_reads: /metrics without a token is 401" test "$c" = 401
check "401 asks for a bearer token" bash -c '[[ $0 == Bearer* ]]' "$(header www-authenticate)"
c=$(code "$UA/metrics" -H "Authorization: Bearer wrong-$TOKEN")
check "a wrong token is 401" test "$c" = 401
c=$(code "$UA/metrics" -H "Authorization: Bearer ${TOKEN:0:5}")
check "a prefix of the token is 401" test "$c" = 401
c=$(code "$UA/metrics" -H "Authorization: Bearer $TOKEN")
check "the right token reads /metrics" test "$c" = 200
c=$(code "$UA/api/v1/status" -H "Authorization: bearer $TOKEN")
check "the right token reads /api/v1/status" test "$c" = 200
c=$(code "$UA/api/v1/status")
check "/api/v1/status without a token is 401" test "$c" = 401
c=$(code "$UA/healthz")
check "/healthz stays open for probes" bash -c '[[ $0 == 200 || $0 == 503 ]]' "$c"
c=$(code "$UA/metrics" -X POST)
check "a write without the token is 401" test "$c" = 401
c=$(code "$UA/metrics" -X POST -H "Authorization: Bearer $TOKEN")
check "a write with the token to a read-only path is 405" test "$c" = 405
c=$(code "$UA/nothing-here")
check "unknown paths say 401 before 404 when reads are protected" test "$c" = 401

chmod 644 "$TMP/token"
P5=$(free_port)
out=$(timeout 10 "$BIN" run --listen "127.0.0.1:$P5" --db "$TMP/t5.db" -c "$TMP/auth.yaml" 2>&1)
rc=$?
check "a token file readable by others is refused (rc=$rc)" bash -c '[[ $0 != 0 && $0 != 124 && $1 == *"accessible by group or others"* && $1 == *"chmod 600"* ]]' "$rc" "$out"
chmod 600 "$TMP/token"
printf 'daemon:\n  auth:\n    protect_reads: true\n' >"$TMP/auth2.yaml"
out=$(timeout 10 "$BIN" run --listen "127.0.0.1:$P5" --db "$TMP/t5.db" -c "$TMP/auth2.yaml" 2>&1)
rc=$?
check "protect_reads without a token file is refused ($out)" bash -c '[[ $0 != 0 && $0 != 124 && $1 == *"token_file"* ]]' "$rc" "$out"

# --- listen addresses
out=$(timeout 10 "$BIN" run --listen "127.0.0.1:$PORT" --db "$TMP/t6.db" 2>&1)
rc=$?
check "a port in use stops the daemon with a clear message (rc=$rc)" bash -c '[[ $0 == 1 && $1 == *"cannot listen on 127.0.0.1:"* ]]' "$rc" "$out"
P6=$(free_port)
bg "$BIN" run --listen "0.0.0.0:$P6" --db "$TMP/any.db" 2>"$TMP/any.log"
wait_for 10 curl -s -o /dev/null "http://127.0.0.1:$P6/healthz"
check "0.0.0.0 serves" test "$(code "http://127.0.0.1:$P6/healthz")" = 200
check "a non-loopback listener without TLS or token warns" grep -q 'warn.*without TLS or a token' "$TMP/any.log"
check "a loopback listener does not warn" bash -c '! grep -q "without TLS" "$0"' "$TMP/main.log"
if python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
    P7=$(free_port)
    bg "$BIN" run --listen "[::1]:$P7" --db "$TMP/v6.db" 2>"$TMP/v6.log"
    wait_for 10 curl -s -o /dev/null -g "http://[::1]:$P7/healthz"
    check "an IPv6 literal listens: [::1]" test "$(code "http://[::1]:$P7/healthz" -g)" = 200
    check "it logs the IPv6 address in brackets" grep -q "serving on http://\[::1\]:$P7" "$TMP/v6.log"
    P8=$(free_port)
    bg "$BIN" run --listen "[::]:$P8" --db "$TMP/dual.db" 2>"$TMP/dual.log"
    wait_for 10 curl -s -o /dev/null "http://127.0.0.1:$P8/healthz"
    check "[::] is dual-stack: IPv4 reaches it" test "$(code "http://127.0.0.1:$P8/healthz")" = 200
    check "[::] is dual-stack: IPv6 reaches it" test "$(code "http://[::1]:$P8/healthz" -g)" = 200
else
    out=$(timeout 10 "$BIN" run --listen "[::1]:$(free_port)" --db "$TMP/v6.db" 2>&1)
    check "without IPv6, [::1] fails with a clear message" bash -c '[[ $1 == *"cannot listen on [::1]"* ]]' _ "$out"
fi

finish
