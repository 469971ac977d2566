#!/bin/sh
# SPDX-License-Identifier: MIT
# Slurm Epilog (slurm.conf Epilog=, run by slurmd as root on every node of a job after it ends):
# ends the wattage job the prolog opened (by its name, slurm-ID: the latest job of that name on
# this node's daemon). Settings as in wattage-prolog.sh. It never fails: exit 0 and one
# log line, so that a daemon that is down never drains a node.
lib="$(dirname "$0")/wattage-slurm-lib.sh"
if [ ! -r "$lib" ]; then
    echo "wattage-slurm: $lib not found (install it beside $0); no wattage job" >&2
    exit 0
fi
# shellcheck source-path=SCRIPTDIR source=wattage-slurm-lib.sh
. "$lib"

wt_load_settings
if [ -z "${SLURM_JOB_ID:-}" ]; then
    wt_log "epilog: SLURM_JOB_ID not set; no wattage job ended"
    exit 0
fi
if ! seg=$(wt_url_seg "$SLURM_JOB_ID"); then
    wt_log "epilog: SLURM_JOB_ID=$SLURM_JOB_ID is not a job id; no wattage job ended"
elif wt_post "/api/v1/jobs/slurm-$seg/end" '{}'; then
    wt_log "epilog: wattage job slurm-$SLURM_JOB_ID ended"
else
    wt_log "epilog: wattage job slurm-$SLURM_JOB_ID not ended ($WT_ERR)"
fi
exit 0
