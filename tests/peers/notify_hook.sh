#!/bin/sh
# An exec hook for the delivery tests: appends the alert's WATTAGE_ALERT_* variables and its JSON
# (stdin) to the file named by its first argument, one block per call.
out=$1
{
    echo "--- call"
    env | grep '^WATTAGE_ALERT_' | sort
    printf 'stdin='
    cat
    echo
} >>"$out"
