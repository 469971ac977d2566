#!/usr/bin/env bash
# The real binary: `wattage status` and `wattage run` with 8 fake GPUs and with no NVML at all;
# config errors; the counter and power-integration energy against the fake's exact integral;
# a GPU lost mid-run and coming back.
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
EXACT=$(dirname "$FAKE_NVML")/fake_nvml_energy

# --- status with 8 fake GPUs
out=$(WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" status --json 2>"$TMP/err")
rc=$?
check "status --json exits 0 with the fake NVML" test $rc -eq 0
n=$(printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["gpus"]))' 2>/dev/null)
check "status --json lists 8 GPUs" test "${n:-0}" = 8
fields=$(printf '%s' "$out" | python3 -c '
import json,sys
g=json.load(sys.stdin)["gpus"][3]
need=["index","uuid","model","power_watts","energy_joules","temperature_celsius",
      "slowdown_temperature_celsius","utilization_ratio","memory_utilization_ratio",
      "memory_used_bytes","sm_clock_hertz","throttle_reasons","power_limit_watts"]
print(",".join(k for k in need if k not in g) or "all")' 2>&1)
check "status --json has every per-GPU field (missing: $fields)" test "$fields" = all
check "status --json has the total GPU power" \
    python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["gpu_power_watts"] > 0' "$out"
human=$(WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" status 2>&1)
check "status prints a table with the model and total power" \
    bash -c '[[ $1 == *"NVIDIA H200"* && $1 == *"total GPU power"* ]]' _ "$human"

# --- status without NVML
out=$(WATTAGE_NVML_LIBRARY=$TMP/no-such-lib.so "$BIN" status --json 2>/dev/null)
check "status --json works without NVML" \
    python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["gpus"]==[]; assert any(c["name"]=="nvml" and not c["present"] for c in d["collectors"])' "$out"
human=$(WATTAGE_NVML_LIBRARY=$TMP/no-such-lib.so "$BIN" status 2>&1)
check "status says GPUs are unavailable without NVML" bash -c '[[ $1 == *"GPUs: unavailable"* ]]' _ "$human"

# --- unsupported energy counter: absent, never zero
out=$(FAKE_NVML_NOT_SUPPORTED=energy WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" status --json 2>/dev/null)
check "an unsupported metric is absent from status, not zero" \
    python3 -c 'import json,sys; g=json.loads(sys.argv[1])["gpus"][0]; assert "energy_joules" not in g and g["power_watts"]>0' "$out"

# --- config errors name file:line and key, exit 2
printf 'daemon:\n  interval: 1s\n  intervall: 2s\n' >"$TMP/bad.yaml"
msg=$("$BIN" check-config "$TMP/bad.yaml" 2>&1); rc=$?
check "check-config: unknown key exits 2" test $rc -eq 2
check "check-config: message names file:line and key ($msg)" \
    bash -c '[[ $1 == *"bad.yaml:3"* && $1 == *"intervall"* ]]' _ "$msg"
printf 'collectors:\n  nvml:\n    interval: -1\n' >"$TMP/bad2.yaml"
msg=$("$BIN" run -c "$TMP/bad2.yaml" 2>&1); rc=$?
check "run refuses a bad value with file:line (exit $rc: $msg)" \
    bash -c '[[ $0 == 2 && $1 == *"bad2.yaml:3"* && $1 == *"collectors.nvml.interval"* ]]' "$rc" "$msg"
printf 'daemon:\n  interval: 2s\n' >"$TMP/good.yaml"
check "check-config accepts a good file" "$BIN" check-config "$TMP/good.yaml"
"$BIN" run --interval nonsense >/dev/null 2>&1; rc=$?
check "a bad flag exits 2" test $rc -eq 2
msg=$("$BIN" run --listen 127.0.0.1:99999 2>&1); rc=$?
check "a bad --listen exits 2 and says why" bash -c '[[ $0 == 2 && $1 == *"--listen"* ]]' "$rc" "$msg"

# --- the daemon: counter energy and power integration against the exact integral
t0=$(python3 -c 'import time; print(time.time())')
# the power an H200 reads is its 1-s average (the daemon places it at the middle of that second)
export FAKE_NVML_T0=$t0 FAKE_NVML_POWER=300,100,7 FAKE_NVML_POWER_AVG=1
WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" run --interval 0.2 --listen 127.0.0.1:$(free_port) --db "$TMP/run.db" --duration 6 --summary-interval 2 \
    >"$TMP/run.log" 2>&1
rc=$?
check "run --duration exits 0" test $rc -eq 0
check "run logs a summary line" grep -q 'summary gpus_up=8/8' "$TMP/run.log"
check "run reports nvml collecting" grep -q 'nvml: collecting every 0.2 s' "$TMP/run.log"
verify_energy() { # $1 method ("" for counter), $2 tolerance ratio
    python3 - "$TMP/run.log" "$1" "$2" "$EXACT" <<'PY'
import re, subprocess, sys
log, method, tol, exact = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
seen = 0
for line in open(log):
    m = re.search(r'energy wattage_gpu_energy_(integrated_)?joules_total\{gpu="(\d+)"[^}]*\} joules=([\d.]+) .*from_ns=(\d+) to_ns=(\d+)', line)
    if not m or bool(m.group(1)) != (method == "integrated"):
        continue
    gpu, j, a, b = m.group(2), float(m.group(3)), int(m.group(4)), int(m.group(5))
    want = float(subprocess.check_output([exact, gpu, repr(a / 1e9), repr(b / 1e9)]))
    err = abs(j - want) / want
    if err > tol:
        sys.exit(f"gpu {gpu}: {j} J vs exact {want} J ({err:.3%})")
    seen += 1
sys.exit(0 if seen == 8 else f"saw {seen} series")
PY
}
check "counter energy within 0.5% of the exact integral, 8 GPUs" verify_energy "" 0.005
check "integrated power within 3% of the exact integral, 8 GPUs" verify_energy integrated 0.03

# --- power integration as the only method when the counter is unsupported
FAKE_NVML_NOT_SUPPORTED=energy WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" run --interval 0.2 --listen 127.0.0.1:$(free_port) --db "$TMP/run.db" \
    --duration 4 >"$TMP/run.log" 2>&1
check "without a counter only the integrated series exists" \
    bash -c '! grep -q "energy wattage_gpu_energy_joules_total{" "$1" && grep -q "energy wattage_gpu_energy_integrated_joules_total{gpu=\"0\",[^}]*} joules" "$1"' _ "$TMP/run.log"
check "fallback integration within 3% of the exact integral" verify_energy integrated 0.03

# --- no NVML at all: the daemon runs and says so once
WATTAGE_NVML_LIBRARY=$TMP/no-such-lib.so "$BIN" run --interval 0.2 --listen 127.0.0.1:$(free_port) --db "$TMP/run.db" --duration 2 \
    --summary-interval 1 >"$TMP/run.log" 2>&1
rc=$?
check "run works without NVML" test $rc -eq 0
check "GPU collection reported unavailable exactly once" test "$(grep -c 'nvml: not available' "$TMP/run.log")" = 1
check "the other collectors still run" grep -q 'summary gpus_up=0/0' "$TMP/run.log"

# --- a GPU lost mid-run comes back; the others go on
FAKE_NVML_LOST=3:1:2.5 WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_T0=$(python3 -c 'import time; print(time.time())') \
    "$BIN" run --interval 0.2 --listen 127.0.0.1:$(free_port) --db "$TMP/run.db" --duration 4 --log-level debug >"$TMP/run.log" 2>&1
rc=$?
check "run survives a lost GPU" test $rc -eq 0
check "the lost GPU is logged" grep -qi 'gpu=3.*lost\|lost.*gpu=3\|GPU 3.*lost' "$TMP/run.log"
check "the GPU's recovery is logged" grep -qi 'gpu=3.*\(back\|recover\)\|\(back\|recover\).*gpu=3\|GPU 3.*\(back\|recover\)' "$TMP/run.log"

# --- SIGHUP reloads the configuration; a bad one is refused and the daemon goes on
printf 'daemon:\n  interval: 0.2s\n  log_level: info\n' >"$TMP/hup.yaml"
port=$(free_port)
WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" run -c "$TMP/hup.yaml" --listen 127.0.0.1:$port --db "$TMP/hup.db" >"$TMP/hup.log" 2>&1 &
pid=$!
sleep 1
printf 'daemon:\n  interval: 0.2s\n  log_level: debug\nstore:\n  flush_interval: 2s\n' >"$TMP/hup.yaml"
kill -HUP $pid
wait_for 5 grep -q 'nvml: tick' "$TMP/hup.log"
check "SIGHUP applies the new configuration (debug ticks appear)" grep -q 'nvml: tick' "$TMP/hup.log"
check "SIGHUP says a store change needs a restart" grep -q 'take effect at the next restart' "$TMP/hup.log"
printf 'daemon:\n  interval: 0.2s\n  bogus: 1\n' >"$TMP/hup.yaml"
kill -HUP $pid
wait_for 5 grep -q 'reload failed' "$TMP/hup.log"
check "a bad configuration on SIGHUP is refused with file:line" \
    bash -c 'grep -q "hup.yaml:3: daemon.bogus: unknown key" "$1" && grep -q "reload failed" "$1"' _ "$TMP/hup.log"
check "the refused reload is one log line with the daemon's prefix, not a bare line" \
    bash -c 'grep -qE "^[0-9-]+T[0-9:.]+Z error +run: reload failed: .*hup.yaml:3: daemon.bogus: unknown key" "$1" && ! grep -q "^wattage: " "$1"' _ "$TMP/hup.log"
sleep 0.5
check "the daemon goes on after a refused reload" kill -0 $pid
kill -TERM $pid; wait $pid

# --- SIGTERM stops it cleanly
# The port first: a $(...) inside the background command leaves a subshell (carrying lib.sh's
# cleanup trap) between this shell and the daemon, and the SIGTERM would stop that instead.
port=$(free_port)
WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" run --interval 0.2 --listen 127.0.0.1:$port --db "$TMP/run.db" >"$TMP/run.log" 2>&1 &
pid=$!
sleep 1
kill -TERM $pid
wait $pid
rc=$?
check "SIGTERM stops the daemon with status 0" test $rc -eq 0
check "the stop is logged" grep -q 'stopping on SIGTERM' "$TMP/run.log"
finish
