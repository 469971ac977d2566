#!/usr/bin/env bash
# test_store_kill.sh with store.packed_ticks: a write a flush in one packed ticks row survives
# kill -9 at random moments as the rows do: integrity, at most a flush lost, exact energy.
WATTAGE_STORE_PACKED=1 exec bash "$(dirname "$0")/test_store_kill.sh" "$@"
