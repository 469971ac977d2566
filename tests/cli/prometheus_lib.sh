# Helpers for the tests that run the real Prometheus (Debian's `prometheus` package) against a
# running wattage. Source after lib.sh.
#   start_prometheus PORT TARGET_PORT [SCRAPE_YAML]   Prometheus on 127.0.0.1:PORT scraping
#                                  127.0.0.1:TARGET_PORT every second; SCRAPE_YAML is extra
#                                  lines for the scrape config (scheme, tls_config...)
#   wait_target_up SECONDS         until Prometheus has scraped the target successfully
#   prom_query QUERY [TIME]        prints the JSON result of /api/v1/query
PROMETHEUS=${PROMETHEUS:-prometheus}
PROM_URL=

start_prometheus() {
    local port=$1 target=$2 extra=${3:-}
    mkdir -p "$TMP/prom"
    cat >"$TMP/prom/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: wattage
    static_configs:
      - targets: ["127.0.0.1:$target"]
$extra
EOF
    PROM_URL=http://127.0.0.1:$port
    bg "$PROMETHEUS" --config.file="$TMP/prom/prometheus.yml" \
        --storage.tsdb.path="$TMP/prom/data" --web.listen-address="127.0.0.1:$port" \
        --log.level=warn 2>"$TMP/prom/prometheus.log"
}

# target_health: prints the health of the single target, and its last error
target_health() {
    curl -s "$PROM_URL/api/v1/targets" | python3 -c '
import json, sys
ts = json.load(sys.stdin)["data"]["activeTargets"]
print(ts[0]["health"] if ts else "none", ts[0]["lastError"] if ts else "")' 2>/dev/null
}

wait_target_up() {
    local end=$((SECONDS + $1))
    until [[ $(target_health) == up* ]]; do
        [[ $SECONDS -ge $end ]] && return 1
        sleep 0.2
    done
}

prom_query() {
    local args=(--data-urlencode "query=$1")
    [[ -n ${2:-} ]] && args+=(--data-urlencode "time=$2")
    curl -s "$PROM_URL/api/v1/query" "${args[@]}"
}
