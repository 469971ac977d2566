#!/usr/bin/env bash
# The deployment files, each read the way its consumer reads it: the Kubernetes manifests
# (deploy/kubernetes) parse as YAML and carry what the API server and the NVIDIA device plugin's
# conventions need; the DaemonSet's own start command, run here with the fake NVML, renders the
# configuration with the node's name and starts a daemon that answers the probes on the port
# named "metrics"; the Dockerfile (deploy/docker) builds on Debian 12 through make targets that
# exist, and its runtime stage installs the package of every library the binary links; the
# Prometheus snippets (deploy/prometheus) pass promtool, their rules' unit tests hold the rules
# to their delays, every metric they name is on a real daemon's /metrics, and the real Prometheus
# run with the shipped scrape job gives the scraped series their node label.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
PROMTOOL=${PROMTOOL:-promtool}
PROMETHEUS=${PROMETHEUS:-prometheus}
K8S=deploy/kubernetes
PROM=deploy/prometheus
DOCKERFILE=deploy/docker/Dockerfile

# --- deploy/slurm: POSIX sh (dash parses each), the prolog and epilog executable; their
# behaviour under a real Slurm is tests/cli/test_slurm.sh's
for f in deploy/slurm/*.sh; do
    check "$f parses as POSIX sh (dash -n)" dash -n "$f"
done
for f in deploy/slurm/wattage-prolog.sh deploy/slurm/wattage-epilog.sh; do
    check "$f is executable and run by tests/cli/test_slurm.sh" \
        bash -c 'test -x "$0" && grep -q "${0##*/}" tests/cli/test_slurm.sh' "$f"
done

if ! "$PY" -c 'import yaml' 2>/dev/null; then
    skip "the deployment files" "python3-yaml is not installed (scripts/deps.sh --test)"
    finish
fi

# --- every YAML file parses
for f in $K8S/*.yaml $PROM/*.yml; do
    msg=$("$PY" -c 'import sys, yaml; list(yaml.safe_load_all(open(sys.argv[1])))' "$f" 2>&1)
    check "$f is well-formed YAML${msg:+ ($msg)}" test -z "$msg"
done

# kube PYTHON-EXPR...: each must hold, with o(kind) the one object of that kind in
# deploy/kubernetes, ds the DaemonSet, pod its pod spec, c its container, env its environment.
kube() {
    "$PY" - "$K8S" "$@" <<'PY'
import glob, sys, yaml
objs = [d for f in sorted(glob.glob(sys.argv[1] + "/*.yaml")) for d in yaml.safe_load_all(open(f)) if d]
def o(kind):
    m = [x for x in objs if x["kind"] == kind]
    assert len(m) == 1, f"{len(m)} objects of kind {kind}"
    return m[0]
ds = o("DaemonSet")
pod = ds["spec"]["template"]["spec"]
c = pod["containers"][0]
env = {e["name"]: e for e in c.get("env", [])}
for e in sys.argv[2:]:
    try:
        ok = eval(e)
    except Exception as x:
        ok, e = False, f"{e} ({x!r})"
    if not ok:
        print("false:", e)
        sys.exit(1)
PY
}

check "every object has apiVersion, kind, metadata.name, and lives in namespace wattage" kube \
    'all(x.get("apiVersion") and x.get("kind") and x["metadata"].get("name") for x in objs)' \
    'all(x["metadata"].get("namespace") == "wattage" for x in objs if x["kind"] != "Namespace")' \
    '{x["kind"] for x in objs} >= {"Namespace", "ServiceAccount", "ConfigMap", "DaemonSet", "Service", "ServiceMonitor"}'
check "DaemonSet: apps/v1, its selector matches its pods' labels" kube \
    'ds["apiVersion"] == "apps/v1"' \
    'ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()'
check "NVIDIA conventions: GPU nodes, the nvidia.com/gpu toleration, all GPUs visible, no GPU taken" kube \
    'pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}' \
    'any(t["key"] == "nvidia.com/gpu" and t["operator"] == "Exists" and t["effect"] == "NoSchedule" for t in pod["tolerations"])' \
    'env["NVIDIA_VISIBLE_DEVICES"]["value"] == "all" and "utility" in env["NVIDIA_DRIVER_CAPABILITIES"]["value"]' \
    '"nvidia.com/gpu" not in str(c.get("resources", {}))' 'pod["runtimeClassName"] == "nvidia"'
check "the node name from the downward API" kube \
    'env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"'
check "a read-only root, no privileges, no capabilities, not root" kube \
    'c["securityContext"]["readOnlyRootFilesystem"] is True' \
    'c["securityContext"]["allowPrivilegeEscalation"] is False and c["securityContext"]["capabilities"]["drop"] == ["ALL"]' \
    'pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] > 0'
check "the port is named metrics, and the probes use it" kube \
    '[(p["name"], p["containerPort"]) for p in c["ports"]] == [("metrics", 9747)]' \
    'c["livenessProbe"]["httpGet"]["port"] == "metrics" and c["readinessProbe"]["httpGet"]["port"] == "metrics"'
check "every mount has its volume; the store on the node, the config from the ConfigMap" kube \
    '{m["name"] for m in c["volumeMounts"]} == {v["name"] for v in pod["volumes"]}' \
    'any(v.get("hostPath", {}).get("path") == "/var/lib/wattage" for v in pod["volumes"])' \
    'any(v.get("configMap", {}).get("name") == o("ConfigMap")["metadata"]["name"] for v in pod["volumes"])' \
    'yaml.safe_load(o("ConfigMap")["data"]["wattage.yaml"])["store"]["path"].startswith(next(m["mountPath"] for m in c["volumeMounts"] if m["name"] == "state"))'
check "the Service selects the pods, its port named metrics targets the container's" kube \
    'o("Service")["spec"]["selector"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()' \
    '[(p["name"], p["targetPort"]) for p in o("Service")["spec"]["ports"]] == [("metrics", "metrics")]'
check "the ServiceMonitor selects the Service, scrapes port metrics, sets node from the pod's node" kube \
    'o("ServiceMonitor")["apiVersion"] == "monitoring.coreos.com/v1"' \
    'o("ServiceMonitor")["spec"]["selector"]["matchLabels"].items() <= o("Service")["metadata"]["labels"].items()' \
    '[e["port"] for e in o("ServiceMonitor")["spec"]["endpoints"]] == ["metrics"]' \
    'any(r["sourceLabels"] == ["__meta_kubernetes_pod_node_name"] and r["targetLabel"] == "node" for r in o("ServiceMonitor")["spec"]["endpoints"][0]["relabelings"])'

# --- the DaemonSet's start command, run here: the mounts are directories of $TMP, the image's
# /usr/bin/wattage the binary under test (through a wrapper that keeps its arguments and puts
# the test's store and port in, as flags override the file)
port=$(free_port)
mkdir -p "$TMP/pod/template" "$TMP/pod/run" "$TMP/pod/state" "$TMP/bin"
cat >"$TMP/bin/wattage" <<EOF
#!/bin/sh
printf '%s\n' "\$@" >"$TMP/pod/argv"
exec "$PWD/$BIN" "\$@" --db "$TMP/pod/state/w.db" --listen 127.0.0.1:$port --duration 300s
EOF
chmod +x "$TMP/bin/wattage"
"$PY" - "$K8S/wattage-daemonset.yaml" "$TMP" >"$TMP/pod/cmd" <<'PY'
import sys, yaml
objs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
cm = next(x for x in objs if x["kind"] == "ConfigMap")
ds = next(x for x in objs if x["kind"] == "DaemonSet")
c = ds["spec"]["template"]["spec"]["containers"][0]
mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
with open(sys.argv[2] + "/pod/template/wattage.yaml", "w") as f:
    f.write(cm["data"]["wattage.yaml"])
assert c["command"] == ["/bin/sh", "-c"], c["command"]
cmd = c["args"][0]
for name, where in (("config", "template"), ("run", "run"), ("state", "state")):
    cmd = cmd.replace(mounts[name], f"{sys.argv[2]}/pod/{where}")
print(cmd.replace("/usr/bin/wattage", sys.argv[2] + "/bin/wattage"))
PY
mkdir -p "$TMP/empty"
NODE_NAME=gpu-node-7 WATTAGE_NVML_LIBRARY=$FAKE_NVML WATTAGE_SYSFS_ROOT=$TMP/empty \
    WATTAGE_PROCFS_ROOT=$TMP/empty bg /bin/sh -c "$(cat "$TMP/pod/cmd")" 2>"$TMP/pod/log"
check "the pod's daemon answers /healthz on the port" wait_for 15 curl -sf "127.0.0.1:$port/healthz" -o /dev/null
check "the probes' paths are served" bash -c 'for p in "$@"; do curl -sf "127.0.0.1:'"$port"'$p" -o /dev/null || exit 1; done' _ \
    $("$PY" -c 'import sys, yaml
ds = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "DaemonSet"][0]
c = ds["spec"]["template"]["spec"]["containers"][0]
print(c["livenessProbe"]["httpGet"]["path"], c["readinessProbe"]["httpGet"]["path"])' "$K8S/wattage-daemonset.yaml")
check "it runs \`wattage run --config\` on the rendered file" \
    bash -c '[[ $(head -n 3 "$1" | paste -sd" ") == "run --config $2/pod/run/wattage.yaml" ]]' _ "$TMP/pod/argv" "$TMP"
check "the rendered configuration names the node (topology.node) and passes check-config" bash -c \
    '"$0" check-config "$1" >/dev/null && "$2" -c "import sys, yaml; assert yaml.safe_load(open(sys.argv[1]))[\"topology\"][\"node\"] == \"gpu-node-7\"" "$1"' \
    "$BIN" "$TMP/pod/run/wattage.yaml" "$PY"
curl -s "127.0.0.1:$port/metrics" >"$TMP/metrics"

# --- the Dockerfile
# Its instructions, continuation lines joined, comments dropped: "INSTRUCTION rest" per line.
"$PY" - "$DOCKERFILE" >"$TMP/docker.txt" <<'PY'
import re, sys
text = re.sub(r"\\\n", " ", "".join(l for l in open(sys.argv[1]) if not l.lstrip().startswith("#")))
for line in text.splitlines():
    if line.strip():
        print(re.sub(r"\s+", " ", line.strip()))
PY
froms=$(grep '^FROM ' "$TMP/docker.txt")
check "every stage is FROM Debian 12 ($(paste -sd';' <<<"$froms"))" \
    bash -c '[[ -n $0 ]] && ! grep -vqE "^FROM debian:12(-slim)?( AS [a-z]+)?$" <<<"$0"' "$froms"
check "the runtime stage takes the binary from the build stage" \
    grep -qE "^COPY --from=$(grep -m1 '^FROM ' "$TMP/docker.txt" | awk '{print $4}') /src/build/wattage /usr/bin/wattage$" "$TMP/docker.txt"
targets=$(grep '^RUN ' "$TMP/docker.txt" | grep -oE '\bmake( -j"?\$\(nproc\)"?)? [A-Za-z0-9_/.-]+' | awk '{print $NF}')
check "its RUN lines use make targets ($(paste -sd' ' <<<"$targets"))" test -n "$targets"
for t in $targets; do
    check "make $t is a target of the Makefile" bash -c 'make -n --no-print-directory "$0" >/dev/null 2>&1' "$t"
done
for src in $(grep '^COPY ' "$TMP/docker.txt" | grep -v -- '--from' | awk '{for (i = 2; i < NF; i++) print $i}'); do
    check "COPY $src exists in the repository" test -e "$src"
done
# The context it sends: only what it copies (Dockerfile.dockerignore, read by BuildKit).
copied=$(grep '^COPY ' "$TMP/docker.txt" | grep -v -- '--from' | awk '{for (i = 2; i < NF; i++) print $i}' | sort)
kept=$(grep '^!' deploy/docker/Dockerfile.dockerignore | cut -c2- | sort)
check "the .dockerignore sends exactly what the Dockerfile copies" test "$copied" = "$kept"
user=$(grep '^USER ' "$TMP/docker.txt" | tail -n1 | awk '{print $2}')
check "it runs as a non-root numeric user ($user), the DaemonSet's runAsUser" kube \
    "'$user'.split(':')[0].isdigit() and int('$user'.split(':')[0]) > 0" \
    "pod['securityContext']['runAsUser'] == int('$user'.split(':')[0])"
# The packages of the libraries the binary needs (its NEEDED entries, found with ldd, owned
# per dpkg), less libc6 which every Debian image has.
# One dpkg -S for all of them (each call reads the whole database).
paths=$(for l in $(readelf -d "$BIN" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
    p=$(ldd "$BIN" | awk -v l="$l" '$1 == l {print $3}')
    [[ -n $p ]] && readlink -f "$p"
done)
# Under /usr/lib or, on a system merged later, /lib (as dpkg registered it): ask for both.
both=$(for p in $paths; do echo "$p"; [[ $p == /usr/* ]] && echo "${p#/usr}"; done)
owned=$(dpkg -S $both 2>/dev/null)
needed=$(cut -d: -f1 <<<"$owned" | sort -u | grep -vx libc6)
nlibs=$(wc -w <<<"$paths")
nowned=$(grep -c . <<<"$owned")
check "dpkg owns each of the $nlibs libraries the binary links" test "$nlibs" -gt 5 -a "$nowned" -eq "$nlibs"
runtime=$(awk '/^FROM /{n++} n == 2' "$TMP/docker.txt" | grep 'apt-get install')
missing=$(for p in $needed; do grep -qw -- "$p" <<<"$runtime" || echo "$p"; done)
check "the runtime stage installs every library package the binary needs ($(paste -sd' ' <<<"$needed"))" \
    bash -c '[[ -n $1 && -z $2 ]] || { echo "# missing: $2"; false; }' _ "$needed" "$missing"
entry=$(grep '^ENTRYPOINT ' "$TMP/docker.txt")
check "the entry point is the DaemonSet's binary, /usr/bin/wattage" kube \
    "'$entry' == 'ENTRYPOINT [\"/usr/bin/wattage\"]'" '"exec /usr/bin/wattage run" in c["args"][0]'
cmd=$(grep '^CMD ' "$TMP/docker.txt")
check "its CMD is options wattage run has" bash -c \
    'h=$("$0" run --help); for o in $(grep -oE -- "--[a-z-]+" <<<"$1"); do grep -q -- "$o " <<<"$h" || exit 1; done' \
    "$BIN" "$cmd"

# --- the Prometheus snippets
if ! command -v "$PROMTOOL" >/dev/null; then
    skip "the Prometheus snippets" "promtool is not installed (scripts/deps.sh --test)"
    finish
fi
out=$(cd $PROM && "$PROMTOOL" check config prometheus-scrape.yml 2>&1)
check "promtool check config: the scrape snippet and the three rule files it loads" \
    bash -c 'grep -q "SUCCESS: 3 rule files found" <<<"$0" && [[ $(grep -c "SUCCESS: 5 rules found" <<<"$0") == 2 ]]' "$out"
out=$("$PROMTOOL" test rules $PROM/wattage-node-rules.test.yml 2>&1)
check "promtool test rules: the node alerts' cases pass" grep -q SUCCESS <<<"$out" ||
    printf '%s\n' "$out" | sed 's/^/# /'
mutant() { # SED_EXPR
    mkdir -p "$TMP/m"
    sed "$1" $PROM/wattage-node-rules.yml >"$TMP/m/wattage-node-rules.yml"
    cp $PROM/wattage-node-rules.test.yml "$TMP/m/"
    ! "$PROMTOOL" test rules "$TMP/m/wattage-node-rules.test.yml" >"$TMP/m/out" 2>&1
}
check "a changed delay fails the tests" mutant '0,/for: 2m/s//for: 4m/'
check "a GPU with its counter flagged fails the tests" mutant 's/unless on (instance, uuid)/or on (instance, uuid)/'
names=$(grep -v '^ *#' $PROM/wattage-node-rules.yml | grep -oE '\bwattage_[a-z_]+' | sort -u)
absent=$(for n in $names; do grep -qE "^$n(\{| )" "$TMP/metrics" || echo "$n"; done)
check "every metric the node rules name is on the daemon's /metrics ($(paste -sd' ' <<<"$names"))" \
    bash -c '[[ -n $1 && -z $2 ]] || { echo "# not on /metrics: $2"; false; }' _ "$names" "$absent"
check "the Kubernetes scrape job keeps the DaemonSet's pods and port, node from the pod's node" kube \
    "(lambda j: {r.get('regex') for r in j['relabel_configs'] if r.get('action') == 'keep'} == {ds['spec']['template']['metadata']['labels']['app.kubernetes.io/name'], c['ports'][0]['name']} and any(r['source_labels'] == ['__meta_kubernetes_pod_node_name'] and r['target_label'] == 'node' for r in j['relabel_configs']))(yaml.safe_load(open('$PROM/prometheus-kubernetes-scrape.yml'))['scrape_configs'][0])"

# The real Prometheus with the shipped scrape job, its targets replaced by the pod's daemon and
# its interval shortened: the scraped series carry node="127.0.0.1" (the target's host).
if ! command -v "$PROMETHEUS" >/dev/null; then
    skip "the scrape job on the real Prometheus" "prometheus is not installed (scripts/deps.sh --test)"
    finish
fi
mkdir -p "$TMP/prom"
cp $PROM/*.yml "$TMP/prom/"
sed -i -e "s/\[\"gpu-01:9747\", \"gpu-02:9747\"\]/[\"127.0.0.1:$port\"]/" \
    -e 's/scrape_interval: 15s/scrape_interval: 1s/' -e 's/scrape_timeout: 10s/scrape_timeout: 1s/' \
    "$TMP/prom/prometheus-scrape.yml"
pport=$(free_port)
bg "$PROMETHEUS" --config.file="$TMP/prom/prometheus-scrape.yml" --storage.tsdb.path="$TMP/prom/data" \
    --web.listen-address="127.0.0.1:$pport" --log.level=warn 2>"$TMP/prom/log"
q() { curl -s "127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1"; }
has_node() { q "$1" | "$PY" -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
sys.exit(0 if r and all(s["metric"].get("node") == "127.0.0.1" for s in r) else 1)'; }
check "Prometheus scrapes the daemon, up has node=\"127.0.0.1\"" wait_for 30 has_node 'up{job="wattage"} == 1'
check "and so do the daemon's series (wattage_gpu_up, 8 GPUs)" bash -c \
    'has() { curl -s "127.0.0.1:$1/api/v1/query" --data-urlencode "query=count(wattage_gpu_up{node=\"127.0.0.1\"})" | grep -q "\"8\""; }
     for i in $(seq 50); do has "$1" && exit 0; sleep 0.2; done; exit 1' _ "$pport"
finish
