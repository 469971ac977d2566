#!/bin/bash
# An idle daemon's threads wake only for work: with nobody connected the request-deadline
# thread (wt-http-dl) sleeps without a timer, and the alert thread evaluates about once a tick,
# not once per collector; the jobs exporter (wt-jobs) sleeps without a timer while no job is
# there to show, and a job's start wakes it. Counts of voluntary context switches over an idle span, with bounds
# several times what the event-driven code makes: a loaded machine delays wake-ups, it does not
# add voluntary ones (the old deadline thread woke 4 times a second, 16 in this span).
source "$(dirname "$0")/lib.sh"

port=$(free_port)
FAKE_NVML_GPUS=8 WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" run --interval 0.5 \
    --listen 127.0.0.1:$port --db "$TMP/w.db" >"$TMP/run.log" 2>&1 &
pid=$!
T_PIDS="$T_PIDS $pid"
check "the daemon answers" wait_for 20 curl -sf "http://127.0.0.1:$port/healthz" -o /dev/null
# tid of the thread named $1, empty when none
tid_of() {
    local t
    for t in /proc/$pid/task/*; do
        [[ $(cat "$t/comm" 2>/dev/null) == "$1" ]] && { basename "$t"; return; }
    done
}
vol() { awk '/^voluntary_ctxt_switches/{print $2}' "/proc/$pid/task/$1/status"; }
dl=$(tid_of wt-http-dl)
al=$(tid_of wt-alerts)
jb=$(tid_of wt-jobs)
check "the deadline thread is there ($dl)" test -n "$dl"
check "the alert thread is there ($al)" test -n "$al"
check "the jobs exporter is there ($jb)" test -n "$jb"
# curl closed its connection at once: a second for libmicrohttpd to see it go.
sleep 1
dl0=$(vol "$dl") al0=$(vol "$al") jb0=$(vol "$jb")
t0=$(date +%s.%N)
sleep 4
dl1=$(vol "$dl") al1=$(vol "$al") jb1=$(vol "$jb")
t1=$(date +%s.%N)
ticks=$(python3 -c "print(int(($t1 - $t0) / 0.5 + 0.999))")
check "the deadline thread did not wake while nobody was connected ($((dl1 - dl0)) in 4 s)" \
    test $((dl1 - dl0)) -le 2
check "the alert thread woke about once a tick ($((al1 - al0)) in $ticks ticks, at most 2 a tick + 2)" \
    test $((al1 - al0)) -le $((2 * ticks + 2))
check "and at all ($((al1 - al0)))" test $((al1 - al0)) -ge 1
check "the jobs exporter did not wake with no job ($((jb1 - jb0)) in 4 s; it was once a second)" \
    test $((jb1 - jb0)) -le 1
curl -sf -X POST -d '{"name":"wake"}' "http://127.0.0.1:$port/api/v1/jobs" -o /dev/null
check "a job's start wakes it: its series are on /metrics" \
    wait_for 10 sh -c "curl -sf http://127.0.0.1:$port/metrics | grep -q '^wattage_job_start_time_seconds{.*job=\"wake\"'"
kill -TERM $pid
wait $pid
check "it stops cleanly" test $? -eq 0
finish
