#!/usr/bin/env bash
# The shipped inference recording rules (deploy/prometheus/wattage-inference-rules.yml): promtool
# checks them and runs their unit tests (wattage-inference-rules.test.yml: a target's GPU energy
# from its processes joined on node, instance and pid, generated tokens, J/token, tokens/kWh and
# p99 e2e latency, for three nodes, a process that exits, a target that generates nothing, one
# configured with its GPUs). The tests must notice a changed join, a changed token or latency
# kind, a lost guard against +Inf.
source "$(dirname "$0")/lib.sh"
PROMTOOL=${PROMTOOL:-promtool}
DIR=deploy/prometheus
RULES=wattage-inference-rules.yml
TESTS=wattage-inference-rules.test.yml
if ! command -v "$PROMTOOL" >/dev/null; then
    skip "the Prometheus inference rules" "promtool is not installed (scripts/deps.sh --test)"
    finish
fi
out=$("$PROMTOOL" check rules "$DIR/$RULES" 2>&1)
check "promtool check rules: valid ($out)" grep -q "SUCCESS: 5 rules found" <<<"$out"
out=$("$PROMTOOL" test rules "$DIR/$TESTS" 2>&1)
check "promtool test rules: every case passes" grep -q "SUCCESS" <<<"$out" ||
    printf '%s\n' "$out" | sed 's/^/# /'
names=$(grep -oE 'record: [a-z_:0-9]+' "$DIR/$RULES" | cut -d' ' -f2 | paste -sd' ')
check "the rules are the five documented ($names)" test "$names" = \
    "wattage:inference_energy_joules:rate5m wattage:inference_generated_tokens:rate5m wattage:inference_joules_per_generated_token:ratio_rate5m wattage:inference_generated_tokens_per_kwh:ratio_rate5m wattage:inference_e2e_latency_seconds:p99_5m"
# every series the rules read is one wattage exports (src/core/reading.c's names)
read_names=$(grep -v '^ *#' "$DIR/$RULES" | grep -oE '\bwattage_[a-z_]+' | sort -u)
absent=$(for n in $read_names; do grep -q "\"${n%_bucket}" src/core/reading.c || echo "$n"; done)
check "every series the rules read is a wattage metric ($(paste -sd' ' <<<"$read_names"))" \
    bash -c '[[ -n $1 && -z $2 ]] || { echo "# not in src/core/reading.c: $2"; false; }' _ "$read_names" "$absent"

# the unit tests hold the rules to their figures: each mutant fails them
mutant() { # SED_EXPR
    rm -rf "$TMP/m"
    mkdir -p "$TMP/m"
    sed "$1" "$DIR/$RULES" >"$TMP/m/$RULES"
    cmp -s "$DIR/$RULES" "$TMP/m/$RULES" && { echo "# the mutant $1 changes nothing"; return 1; }
    cp "$DIR/$TESTS" "$TMP/m/"
    ! "$PROMTOOL" test rules "$TMP/m/$TESTS" >"$TMP/m/out" 2>&1
}
check "a join without node (pids repeat across nodes) fails the tests" \
    mutant 's/on (node, instance, pid)/on (instance, pid)/'
check "a join on gpu-less labels (uuid) fails the tests" \
    mutant 's/on (node, instance, pid)/on (node, instance, uuid)/'
check "a join without pid fails the tests" \
    mutant 's/on (node, instance, pid) group_left (target)/on (node, instance) group_left (target)/'
check "a process that exits dropped at once (no max_over_time) fails the tests" \
    mutant 's/max_over_time(wattage_inference_process_info\[5m\])/wattage_inference_process_info/'
check "a target with gpus: given its first GPU only fails the tests" mutant '/,){1}(/d'
check "a target with gpus: and two models given its GPUs twice fails the tests" \
    mutant 's/max by (node, instance, job, gpu, target)/sum by (node, instance, job, gpu, target)/'
check "a target with gpus: given only its GPUs' processes (no idle) fails the tests" \
    mutant 's/sum by (node, instance, gpu) (rate(wattage_process_gpu_energy_joules_total\[5m\]))/sum by (node, instance, gpu) (rate(wattage_process_gpu_energy_joules_total{pid!=""}[5m]))/'
check "prompt tokens counted as generated fails the tests" \
    mutant 's/kind="generated"/kind=~"generated|prompt"/'
check "computed prompt tokens instead of generated fails the tests" \
    mutant 's/kind="generated"/kind="prompt_computed"/'
check "ttft instead of e2e fails the tests" mutant 's/kind="e2e"/kind="ttft"/'
check "p95 instead of p99 fails the tests" mutant 's/histogram_quantile(0.99,/histogram_quantile(0.95,/'
check "the quantile summed over models fails the tests" \
    mutant 's/by (node, instance, job, target, model, le)/by (node, instance, job, target, le)/'
check "a target with no tokens given +Inf J/token fails the tests" \
    mutant 's/(wattage:inference_generated_tokens:rate5m > 0)/wattage:inference_generated_tokens:rate5m/'
check "a target that used no energy given +Inf tokens/kWh fails the tests" \
    mutant 's/(wattage:inference_energy_joules:rate5m > 0)/wattage:inference_energy_joules:rate5m/'
check "a kWh of 3.6e3 J fails the tests" mutant 's/\* 3.6e6/* 3.6e3/'
finish
