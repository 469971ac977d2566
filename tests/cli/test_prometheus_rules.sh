#!/usr/bin/env bash
# The shipped Prometheus rules (deploy/prometheus/wattage-rules.yml): promtool checks them and
# runs their unit tests (wattage-rules.test.yml: node, rack, zone and site power, the budget
# alerts' thresholds and delays). The tests must notice a changed limit or a changed delay.
source "$(dirname "$0")/lib.sh"
PROMTOOL=${PROMTOOL:-promtool}
DIR=deploy/prometheus
if ! command -v "$PROMTOOL" >/dev/null; then
    skip "the Prometheus rules" "promtool is not installed (scripts/deps.sh --test)"
    finish
fi
out=$("$PROMTOOL" check rules "$DIR/wattage-rules.yml" 2>&1)
check "promtool check rules: valid ($out)" grep -q "SUCCESS: 9 rules found" <<<"$out"
out=$("$PROMTOOL" test rules "$DIR/wattage-rules.test.yml" 2>&1)
check "promtool test rules: every case passes" grep -q "SUCCESS" <<<"$out" ||
    printf '%s\n' "$out" | sed 's/^/# /'

# the unit tests hold the rules to their figures: a mutant limit or delay fails them
mutant() { # SED_EXPR NAME
    mkdir -p "$TMP/m"
    sed "$1" "$DIR/wattage-rules.yml" >"$TMP/m/wattage-rules.yml"
    cp "$DIR/wattage-rules.test.yml" "$TMP/m/"
    ! "$PROMTOOL" test rules "$TMP/m/wattage-rules.test.yml" >"$TMP/m/out" 2>&1
}
check "a changed limit fails the tests" mutant 's/vector(1000000)/vector(1100000)/'
check "a changed delay fails the tests" mutant 's/for: 5m/for: 2m/'
check "RAPL core counted twice fails the tests" mutant 's/core|uncore|psys/uncore|psys/'
finish
