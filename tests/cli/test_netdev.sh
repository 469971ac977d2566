#!/usr/bin/env bash
# Network and InfiniBand traffic on the real binary over a fake sysfs tree: the daemon exports
# the counters of device-backed interfaces and InfiniBand ports on /metrics (IB data words × 4),
# stores them, leaves lo out, and keeps polling when an interface vanishes mid-run.
source "$(dirname "$0")/lib.sh"
sys=$TMP/sysfs/sys/class
mkdir -p "$TMP/empty" "$sys/net/eth0/device" "$sys/net/eth0/statistics" "$sys/net/lo/statistics" \
    "$sys/infiniband/mlx5_0/ports/1/counters"
put() { printf '%s\n' "$2" >"$1.tmp" && mv "$1.tmp" "$1"; }
for f in rx_bytes tx_bytes rx_packets tx_packets; do
    put "$sys/net/eth0/statistics/$f" 1000
    put "$sys/net/lo/statistics/$f" 5
done
for f in port_rcv_data port_xmit_data port_rcv_packets port_xmit_packets; do
    put "$sys/infiniband/mlx5_0/ports/1/counters/$f" 250
done
export WATTAGE_SYSFS_ROOT=$TMP/sysfs WATTAGE_PROCFS_ROOT=$TMP/empty WATTAGE_NVML_LIBRARY=$TMP/none.so
port=$(free_port)
bg "$BIN" run --interval 0.2 --db "$TMP/w.db" --listen "127.0.0.1:$port" >"$TMP/run.log" 2>&1
pid=$!
metrics() { curl -s "http://127.0.0.1:$port/metrics"; }
check "eth0's received bytes are on /metrics" wait_for 15 bash -c \
    "curl -s http://127.0.0.1:$port/metrics | grep -qx 'wattage_network_receive_bytes_total{device=\"eth0\"} 1000'"
m=$(metrics)
check "the family is a counter with its help" bash -c \
    '[[ $1 == *"# TYPE wattage_network_receive_bytes_total counter"* ]]' _ "$m"
check "lo is left out" bash -c '[[ $1 != *"device=\"lo\""* ]]' _ "$m"
check "InfiniBand data words are bytes (250 words = 1000 bytes)" bash -c \
    '[[ $1 == *"wattage_infiniband_transmit_bytes_total{device=\"mlx5_0\",port=\"1\"} 1000"* ]]' _ "$m"
check "InfiniBand packets are as counted" bash -c \
    '[[ $1 == *"wattage_infiniband_receive_packets_total{device=\"mlx5_0\",port=\"1\"} 250"* ]]' _ "$m"
put "$sys/net/eth0/statistics/rx_bytes" 5000
check "a new counter value reaches /metrics" wait_for 10 bash -c \
    "curl -s http://127.0.0.1:$port/metrics | grep -qx 'wattage_network_receive_bytes_total{device=\"eth0\"} 5000'"
rm -rf "$sys/infiniband/mlx5_0"
put "$sys/net/eth0/statistics/tx_bytes" 7000
check "polling goes on after the InfiniBand device vanished" wait_for 10 bash -c \
    "curl -s http://127.0.0.1:$port/metrics | grep -qx 'wattage_network_transmit_bytes_total{device=\"eth0\"} 7000'"
sleep 1.5 # one store flush
kill -TERM "$pid"; wait "$pid"
out=$("$BIN" query --db "$TMP/w.db" --from -5m --csv 'wattage_network_receive_bytes_total{device="eth0"}' 2>&1)
check "the store holds eth0's counter, 1000 then 5000" python3 -c '
import sys
vals = [float(l.rsplit(",", 1)[1]) for l in sys.argv[1].splitlines()[1:] if l]
assert vals and vals[0] == 1000 and vals[-1] == 5000 and vals == sorted(vals), sys.argv[1]' "$out"
check "the daemon did not complain about netdev" bash -c '! grep -q "netdev.*error" "$1"' _ "$TMP/run.log"
finish
