#!/usr/bin/env bash
# Builds the seed corpus of each fuzz harness under OUT/NAME/ from the real data sets
# (../shared/data, or WATTAGE_DATA_DIR) and the fixtures in tests/fixtures; nothing of it is
# kept in the repository. A harness whose data set is missing still gets the seeds made here.
# Usage: tests/fuzz/seeds.sh OUT
set -euo pipefail
out=${1:?usage: seeds.sh OUT}
data=${WATTAGE_DATA_DIR:-../shared/data}
# A clone made away from ../shared finds the data sets beside the repository it was cloned
# from, as tests/run.sh does.
if [[ ! -d $data ]]; then
    origin=$(git config --get remote.origin.url 2>/dev/null || true)
    [[ -n $origin && -d $origin/../shared/data ]] && data=$origin/../shared/data
fi
[[ -d $data ]] || echo "# seeds: $data is missing: only the fixtures' seeds" >&2
rm -rf "$out"
mkdir -p "$out"/{config,api,import,carbon,snmp,redfish,modbus,chunk,ticks,expo_parse,promsrc}

# copy DIR GLOB...: the matching files of the data sets into DIR, named by their path.
copy() {
    local dir=$1 f
    shift
    for f in "$@"; do
        [[ -f $f ]] && cp "$f" "$out/$dir/$(echo "$f" | tr '/' '_')"
    done
    return 0
}

shopt -s nullglob globstar
copy config tests/fixtures/config/*.yaml deploy/*.yaml
# The deployed example with its commented target and rule examples switched on (check-config
# accepts it so): every module section with content.
for f in deploy/*.yaml; do
    sed -E 's/^(    +)#  /\1  /; s/: \[\]$/:/' "$f" >"$out/config/examples-$(basename "$f")"
done
# nvidia-smi CSV: the fixtures cut to what has their features (the h200 one's [N/A] cell, cut
# line and impossible date, the a100 one's header again mid-file and a GPU missing for a while),
# not whole. The largest seed sets libFuzzer's input length: the whole h200 fixture (75 KiB) made
# every input a store write of thousands of readings, under 10 runs a second.
nv=tests/fixtures/nvidia-smi
sed -n '1,56p;99,103p' $nv/h200-4gpu-units.csv >"$out/import/h200-4gpu-units-cut.csv"
{
    head -n 1 $nv/a100-nounits.csv
    sed -n 88,112p $nv/a100-nounits.csv
} >"$out/import/a100-nounits-header-again.csv"
copy carbon "$data"/carbon-intensity/**/*.csv "$data"/carbon-intensity/**/*.json
# SNMP: each recording cut to its first 20 lines, sysObjectID and the OIDs under a column or
# scalar that a built-in profile or the harness's generic one reads (their OIDs of more than 8
# arcs, from the sources): the same coverage at start as the whole recordings (up to 330 KiB of
# other MIBs), which held the harness near 15 runs a second.
oids=$(grep -oh '"1\.3\.6\.1\.[0-9.]*"' src/collect/snmp*.c tests/fuzz/fuzz_snmp.c | tr -d '"' |
    awk -F. 'NF > 8' | sort -u)
for f in "$data"/snmp/**/*.snmprec; do
    awk -v oids="$oids" 'BEGIN { n = split(oids, p, "\n") }
        { o = substr($0, 1, index($0, "|") - 1) }
        NR <= 20 || o == "1.3.6.1.2.1.1.2.0" { print; next }
        { for (i = 1; i <= n; i++) if (o == p[i] || index(o, p[i] ".") == 1) { print; next } }' \
        "$f" >"$out/snmp/$(echo "$f" | tr / _)"
done

# Electricity Maps' replies (no recording of them is in the data sets) and the CSV layouts.
printf '{"zone":"DE","history":[{"carbonIntensity":320,"datetime":"2026-11-29T18:00:00.000Z","isEstimated":false},{"carbonIntensity":301,"datetime":"2026-11-29T19:00:00.000Z","isEstimated":true}]}' >"$out/carbon/em-history.json"
printf '{"zone":"DE","forecast":[{"carbonIntensity":280,"datetime":"2026-11-29T20:00:00.000Z"}]}' >"$out/carbon/em-forecast.json"
printf '{"zone":"DE","carbonIntensity":302,"datetime":"2026-11-29T18:00:00.000Z","isEstimated":true}' >"$out/carbon/em-latest.json"
printf 'timestamp,gco2_per_kwh,kind\n2026-11-29T18:00:00Z,120,actual\n2026-11-29T18:30:00Z,130,forecast\n' >"$out/carbon/plain.csv"

# API bodies: the first byte picks the request (0 start, 1 marks, 2 end, 3 gpus, 4 a request
# line), as fuzz_api.c reads them.
api() { printf "$1" >"$out/api/$2"; }
api '\000{"name": "train-llama", "tags": {"team": "ml", "target_accuracy": "0.9"}, "gpus": [0, "GPU-abc"], "target": {"accuracy": 0.9}}' start
api '\000{"name": "a", "tags": null, "gpus": null}' start-null
api '\001{"kind": "epoch", "index": 3, "tokens": 1200000, "samples": 4096, "accuracy": 0.71}' mark
api '\001{"kind": "eval", "begin": true}' mark-begin
api '\002{}' end
api '\002' end-empty
api '\003{"gpus": [1, "GPU-0123"]}' gpus
api '\004POST /api/v1/jobs/fz/marks\n{"kind": "step", "tokens": 1}' line
api '\004GET /api/v1/jobs/fz\n' get

python3 - "$data" "$out" <<'PY'
import json, os, struct, sys
data, out = sys.argv[1], sys.argv[2]

# Redfish: each DMTF mockup tree as one service (the resources the walk can reach), each
# vendor's responses as another (keyed by their @odata.id, with the root and collections made).
def records(res):
    return "".join(">%s\n%s\n" % (p, json.dumps(b, separators=(",", ":"))) for p, b in sorted(res.items()))

skip = ("AccountService", "EventService", "Registries", "JsonSchemas", "SessionService",
        "UpdateService", "TaskService", "Managers", "Systems", "CertificateService",
        "LicenseService", "KeyService", "AggregationService", "ComponentIntegrity",
        "Fabrics", "JobService", "TelemetryService")
rf = os.path.join(data, "redfish")
if os.path.isdir(rf):
    for tree in sorted(os.listdir(rf)):
        top = os.path.join(rf, tree)
        if not tree.startswith("public-") or not os.path.isdir(top):
            continue
        res = {}
        for d, dirs, files in os.walk(top):
            rel = os.path.relpath(d, top)
            if rel != "." and rel.split(os.sep)[0] in skip:
                continue
            if "index.json" in files:
                with open(os.path.join(d, "index.json"), encoding="utf-8") as f:
                    try:
                        body = json.load(f)
                    except ValueError:
                        continue
                path = "/redfish/v1" + ("" if rel == "." else "/" + rel.replace(os.sep, "/"))
                res[path] = body
        if res:
            with open(os.path.join(out, "redfish", tree), "w") as f:
                f.write(records(res))
    for vendor in ("dell", "hp"):
        d = os.path.join(rf, "vendor-responses-telegraf", vendor)
        if not os.path.isdir(d):
            continue
        res = {}
        for name in sorted(os.listdir(d)):
            p = os.path.join(d, name)
            if not name.endswith(".json") or not os.path.isfile(p):
                continue
            with open(p, encoding="utf-8") as f:
                try:
                    body = json.load(f)
                except ValueError:
                    continue
            oid = body.get("@odata.id") if isinstance(body, dict) else None
            if oid:
                res[oid.rstrip("/")] = body
        chassis = sorted(p for p in res if p.startswith("/redfish/v1/Chassis/") and p.count("/") == 4)
        res.setdefault("/redfish/v1", {"Chassis": {"@odata.id": "/redfish/v1/Chassis"}})
        res.setdefault("/redfish/v1/Chassis", {"Members": [{"@odata.id": c} for c in chassis]})
        with open(os.path.join(out, "redfish", "vendor-" + vendor), "w") as f:
            f.write(records(res))

# Modbus: the SunSpec meter models' points as registers (fuzz_modbus.c's binary layout): the
# first eight with a unit wattage knows, their scale factors, and two polls of plausible words.
types = {"uint16": 0, "int16": 1, "acc32": 2, "uint32": 2, "int32": 3, "float32": 4, "acc64": 5,
         "uint64": 5}
metric = {"W": 0, "Wh": 1, "A": 2, "V": 3, "VA": 4}
unit_off = {"Wh": 4}  # the unit index within the metric's list (Wh is the 5th energy unit)
sm = os.path.join(data, "other", "modbus-sunspec-models")
if os.path.isdir(sm):
    for name in sorted(os.listdir(sm)):
        with open(os.path.join(sm, name), encoding="utf-8") as f:
            model = json.load(f)
        pts, addr, where = model["group"]["points"], 0, {}
        for p in pts:
            where[p["name"]] = addr
            addr += p.get("size", 1)
        regs = []
        for p in pts:
            if p.get("units") in metric and p["type"] in types and where[p["name"]] < 60:
                regs.append(p)
            if len(regs) == 8:
                break
        if not regs:
            continue
        b = bytes([len(regs) - 1])
        for p in regs:
            sf = p.get("sf")
            t = types[p["type"]] + (24 if sf in where else 0)
            m = metric[p["units"]]
            u = unit_off.get(p["units"], 0)
            b += bytes([t, where[p["name"]] % 64, m + 13 * u, 0, where.get(sf, 0) % 64])
        for poll in range(2):
            words = [0] * 68
            for p in regs:
                a = where[p["name"]] % 64
                v = 2300 + 100 * poll if p["units"] != "Wh" else 1000000 + 250 * poll
                if p["type"] == "float32":
                    hi, lo = struct.unpack(">HH", struct.pack(">f", float(v)))
                    words[a:a + 2] = [hi, lo]
                elif p.get("size", 1) == 2:
                    words[a:a + 2] = [v >> 16, v & 0xFFFF]
                elif p.get("size", 1) == 4:
                    words[a:a + 4] = [0, 0, v >> 16, v & 0xFFFF]
                else:
                    words[a] = v & 0xFFFF
                sf = p.get("sf")
                if sf in where:
                    words[where[sf] % 64] = 0xFFFF  # 10^-1
            b += struct.pack(">68H", *words[:68]) + struct.pack(">68H", *([0] * 68))
        with open(os.path.join(out, "modbus", "sunspec-" + name.replace(".json", "")), "wb") as f:
            f.write(b)
PY
# chunk: a few hand-made blobs of the store's chunk codec (src/store/chunk.h)
printf '\x01\x01\x02\x00\x00' >"$out/chunk/one-point"
printf '\x01\x02\x02\x02\xff\x00\x08\x00\x00\x00\x00\x00\x00\xf8\x7f' >"$out/chunk/nan-xor"
head -c 4096 /dev/zero >"$out/chunk/zeros"
# ticks: hand-made blobs of the ticks codec (src/store/ticks.h): one reading; two series, one of
# two points; and a run of zeros
printf '\x01\x01\x00\x01\x01\x01\x03\x00\x03\x00' >"$out/ticks/one-reading"
printf '\x01\x03\x00\x02\x01\x02\x05\x00\x02\x00\x00\x02\x04\x01\x03\x00\x03\x08' >"$out/ticks/two-series"
head -c 4096 /dev/zero >"$out/ticks/zeros"

# expo_parse: the example /metrics bodies of the field notes (each ```text block) and hand-made
# OpenMetrics with exemplars, _created, units and # EOF.
notes=$data/../notes/inference-metrics.md
if [[ -f $notes ]]; then
    awk -v d="$out/expo_parse" '/^```text$/ { n++; f = d "/notes-" n; next }
        /^```$/ { f = ""; next } f != "" { print > f }' "$notes"
fi
printf '# TYPE a counter\n# HELP a Help with \\\\ and \\" and \\n.\na_total{m="x\\\\y\\"z\\n"} 1.5 # {trace_id="ab"} 1 1700000000.5\na_created{m="x"} 1.7e+09\n# TYPE h histogram\n# UNIT h seconds\nh_bucket{le="0.1"} 1\nh_bucket{le="+Inf"} 2 # {t="1"} 0.05\nh_count 2\nh_sum 0.1\n# TYPE g gaugehistogram\ng_bucket{le="+Inf"} 1\ng_gcount 1\ng_gsum 1\n# TYPE s summary\ns{quantile="0.5"} NaN\ns_count 0 1700000000\n# TYPE i info\ni_info{v="1"} 1\n# EOF\n' >"$out/expo_parse/om-all-types"
printf '# TYPE tgi_request_count counter\ntgi_request_count 12\n\n  # comment\nx{a="1",} -Inf 1700000000000\n' >"$out/expo_parse/text-bare"
# promsrc: answers of the query API as Prometheus and VictoriaMetrics send them (a matrix, a
# vector with escapes, an error, a partial answer).
printf '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"wattage_gpu_energy_joules_total","node":"n1","gpu":"0","uuid":"GPU-a"},"values":[[1700000000,"10"],[1700000001.5,"12.25"]]}]},"stats":{"seriesFetched":"1"}}' >"$out/promsrc/matrix"
printf '{"status":"success","isPartial":false,"data":{"resultType":"vector","result":[{"value":[1700000000,"NaN"],"metric":{"node":"n\\"1","job":"caf\\u00e9 \\ud83d\\ude00"}}]},"warnings":["w"]}' >"$out/promsrc/vector"
printf '{"status":"error","errorType":"422","error":"cannot select more than -search.maxSamplesPerQuery=1000 samples"}' >"$out/promsrc/error"
printf '{"status":"success","isPartial":true,"data":{"resultType":"vector","result":[]}}' >"$out/promsrc/partial"
for d in "$out"/*/; do
    echo "# seeds: $(basename "$d"): $(find "$d" -type f | wc -l) files, $(du -sk "$d" | cut -f1) KiB"
done
