#!/bin/sh
# SPDX-License-Identifier: MIT
# Slurm Prolog (slurm.conf Prolog=, run by slurmd as root on every node of a job before it
# starts): opens the wattage job slurm-ID (ID the Slurm job id; a job name cannot be all digits,
# which would read as a job's own number), so that a job over several nodes is one job of the
# fleet (the same name on every node). Tags slurm_job=ID, and user= and
# partition= where Slurm says them. GPUs: SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES, else
# GPU_DEVICE_ORDINAL; none set: every GPU of the node.
# It never fails the Slurm job: whatever wattage does, it exits 0 with one line in the log.
#
# Settings (the environment, or a file of shell assignments read when present: wattage-slurm.conf
# beside this script, else /etc/default/wattage-slurm):
#   WATTAGE_URL          the daemon (default http://127.0.0.1:9747)
#   WATTAGE_TOKEN_FILE   a file with the bearer token (else WATTAGE_TOKEN)
#   WATTAGE_CACERT       CA for an https:// URL; WATTAGE_CERT, WATTAGE_KEY for mutual TLS
#   WATTAGE_SLURM_LOG    log file (default: syslog, tag wattage-slurm)
#   WATTAGE_SLURM_TIMEOUT  seconds per request (default 3)
lib="$(dirname "$0")/wattage-slurm-lib.sh"
if [ ! -r "$lib" ]; then
    echo "wattage-slurm: $lib not found (install it beside $0); no wattage job" >&2
    exit 0
fi
# shellcheck source-path=SCRIPTDIR source=wattage-slurm-lib.sh
. "$lib"

wt_load_settings
if [ -z "${SLURM_JOB_ID:-}" ]; then
    wt_log "prolog: SLURM_JOB_ID not set; no wattage job opened"
    exit 0
fi

gpus=$(wt_gpus_json)
tags="\"slurm_job\": \"$(wt_json_str "$SLURM_JOB_ID")\""
[ -n "${SLURM_JOB_USER:-}" ] && tags="$tags, \"user\": \"$(wt_json_str "$SLURM_JOB_USER")\""
[ -n "${SLURM_JOB_PARTITION:-}" ] && tags="$tags, \"partition\": \"$(wt_json_str "$SLURM_JOB_PARTITION")\""
body="{\"name\": \"slurm-$(wt_json_str "$SLURM_JOB_ID")\", \"tags\": {$tags}"
[ -n "$gpus" ] && body="$body, \"gpus\": $gpus"
body="$body}"

if wt_post /api/v1/jobs "$body"; then
    wt_log "prolog: wattage job slurm-$SLURM_JOB_ID opened gpus=${gpus:-all}"
else
    wt_log "prolog: wattage job slurm-$SLURM_JOB_ID not opened ($WT_ERR); the Slurm job runs without it"
fi
exit 0
