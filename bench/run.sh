#!/bin/bash
# SPDX-License-Identifier: MIT
# make bench: runs every benchmark against the fake NVML (8 GPUs) and prints one table; the same
# rows go to BUILD/bench/results.json. No figure fails the run; a benchmark that breaks does
# (after the others ran). See bench/README.md for what each one measures and how.
#   bench/run.sh [BUILD]          (default build; `make bench` builds `all` first)
set -u
BUILD=${1:-build}
OUT=$BUILD/bench
PY=/usr/bin/python3
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
rm -f "$OUT"/rows-*.jsonl "$OUT"/results.json "$OUT"/callgrind.out.*

for f in "$BUILD/wattage" "$BUILD/tests/fakes/libnvidia-ml.so.1" "$BUILD/tests/fakes/fake_nvml_energy"; do
    [[ -e $f ]] || { echo "bench: $f is missing; run make BUILD=$BUILD all" >&2; exit 1; }
done
if ! $PY -c 'import psutil, prometheus_client' 2>/dev/null; then
    echo "bench: $PY lacks psutil or prometheus_client (make deps-test installs them)" >&2
    exit 1
fi

failed=""
section() { # section NAME ARGS...: runs one bench.py section; a crash is noted, not fatal yet
    local name=$1
    shift
    echo "bench: $name ..." >&2
    if ! $PY bench/bench.py "$@"; then
        failed="$failed $name"
        echo "{\"section\": \"Failed\", \"what\": \"$name: the benchmark broke (see stderr)\", \"unit\": \"\", \"wattage\": null, \"peer\": null, \"peer_name\": null, \"ratio\": null}" \
            >"$OUT/rows-failed-$name.jsonl"
    fi
}
missing_row() { # missing_row SECTION WHAT
    echo "{\"section\": \"$1\", \"what\": \"$2\", \"unit\": \"\", \"wattage\": null, \"peer\": null, \"peer_name\": null, \"ratio\": null}" \
        >"$OUT/rows-missing-${2%%:*}.jsonl"
}

start=$SECONDS
# Energy accuracy needs one ~60 s run of an idle daemon: it goes on in the background while
# the others run (it costs them ~1 ms of CPU a second; its accuracy does not depend on them).
$PY bench/bench.py energy "$BUILD" "$OUT" &
energy_pid=$!

section agent agent "$BUILD" "$OUT"
section idle idle "$BUILD" "$OUT"
if command -v valgrind >/dev/null; then
    section callgrind callgrind "$BUILD" "$OUT"
else
    missing_row "Agent cost per tick" "callgrind: valgrind not installed"
fi
if [[ -x /usr/bin/prometheus-node-exporter ]] && command -v wrk >/dev/null; then
    section serve serve "$BUILD" "$OUT"
else
    missing_row "Host metrics cost" "serve: prometheus-node-exporter or wrk not installed"
fi
section nvml nvml "$BUILD" "$OUT"
# Other engineers' benchmarks: their JSON lines become rows (see bench/README.md).
section store_bench external "$BUILD" "$OUT" store_bench "$BUILD/bench/store_bench"
section skew_bytes external "$BUILD" "$OUT" skew_bytes "$BUILD/bench/skew_bytes"
section alert_eval external "$BUILD" "$OUT" alert_eval "$BUILD/bench/alert_eval"
section remote_write_bench external "$BUILD" "$OUT" remote_write_bench "$BUILD/bench/remote_write_bench"
if [[ -x $BUILD/bench/kafka_bench ]]; then
    section kafka_bench external "$BUILD" "$OUT" kafka_bench "$BUILD/bench/kafka_bench"
else
    missing_row "Kafka" "kafka_bench: not built (librdkafka-dev missing)"
fi
section otlp_bench external "$BUILD" "$OUT" otlp_bench "$BUILD/bench/otlp_bench"
section cap_release external "$BUILD" "$OUT" cap_release $PY bench/cap_release.py "$BUILD"
section cap_release_idle external "$BUILD" "$OUT" cap_release_idle $PY bench/cap_release.py "$BUILD" 1 idle
section report_bench external "$BUILD" "$OUT" report_bench "$BUILD/bench/report_bench"
section expo_parse_bench external "$BUILD" "$OUT" expo_parse_bench "$BUILD/bench/expo_parse_bench"
section hwmon_walk external "$BUILD" "$OUT" hwmon_walk "$BUILD/bench/hwmon_walk"
section gpu_poll external "$BUILD" "$OUT" gpu_poll "$BUILD/bench/gpu_poll" "$BUILD"
section field_cadence external "$BUILD" "$OUT" field_cadence "$BUILD/bench/field_cadence" "$BUILD"
section energy_eval external "$BUILD" "$OUT" energy_eval "$BUILD/bench/energy_eval"
section energy_eval_fast external "$BUILD" "$OUT" energy_eval_fast "$BUILD/bench/energy_eval" 1800 1000 0.2
section energy_eval_irregular external "$BUILD" "$OUT" energy_eval_irregular \
    /usr/bin/env FAKE_NVML_WAVE=irregular "$BUILD/bench/energy_eval"
# 1-s ticks with 0.2-s energy sub-polls (collectors.nvml.energy_interval's auto), on both waves.
section energy_eval_sub external "$BUILD" "$OUT" energy_eval_sub \
    "$BUILD/bench/energy_eval" 1800 1000 1 0.2
section energy_eval_sub_irregular external "$BUILD" "$OUT" energy_eval_sub_irregular \
    /usr/bin/env FAKE_NVML_WAVE=irregular "$BUILD/bench/energy_eval" 1800 1000 1 0.2
if command -v victoria-metrics >/dev/null; then
    section fleet_query external "$BUILD" "$OUT" fleet_query bench/fleet_query.sh "$BUILD"
else
    missing_row "Fleet" "fleet_query.sh: victoria-metrics not installed"
fi
if [[ -x bench/http_load.sh ]]; then
    section http_load external "$BUILD" "$OUT" http_load bench/http_load.sh "$BUILD"
else
    missing_row "Exposition throughput" "http_load.sh: not present"
fi
wait "$energy_pid" || failed="$failed energy"

$PY bench/bench.py table "$BUILD" "$OUT"
echo "bench: $((SECONDS - start)) s; details in $OUT/*.txt"
if [[ -n $failed ]]; then
    echo "bench: broken:$failed" >&2
    exit 1
fi
