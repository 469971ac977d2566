#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The GPU power poller that tutorials teach, as the peer wattage is measured against.

Written the way the blog posts and notebooks do it: ctypes calls into libnvidia-ml (here the
project's fake, the same library wattage loads), psutil for host CPU and memory, and
prometheus_client gauges served on a port, in a `while True: ...; time.sleep(interval)` loop.
It reads the same fields as wattage's tick for every GPU: power, energy counter, temperature and
its slowdown/shutdown thresholds, utilization, memory, SM and memory clocks, throttle reasons,
enforced power limit and pstate. As tutorials do, it looks each GPU's handle up every tick and
keeps nothing between ticks but the gauges.

With --seed it reads what the seed tutorial's poller reads and nothing more: each GPU's name,
power and temperature, and psutil's host CPU and memory. That is the smallest poller a person
writes, the foil issue 49 measures the whole daemon against; the default is the fuller one.

    baseline_poller.py --library PATH --port N [--interval S] [--duration S] [--seed]

Use Debian's interpreter (/usr/bin/python3) with python3-psutil and python3-prometheus-client.
"""
import argparse
import ctypes
import sys
import time

import psutil
from prometheus_client import Gauge, start_http_server


class Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


NVML_TEMPERATURE_GPU = 0
NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0
NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2

LABELS = ["gpu"]
g_power = Gauge("gpu_power_watts", "GPU power draw", LABELS)
g_energy = Gauge("gpu_energy_joules", "GPU energy counter", LABELS)
g_temp = Gauge("gpu_temperature_celsius", "GPU temperature", LABELS)
g_slowdown = Gauge("gpu_slowdown_temperature_celsius", "slowdown threshold", LABELS)
g_shutdown = Gauge("gpu_shutdown_temperature_celsius", "shutdown threshold", LABELS)
g_util = Gauge("gpu_utilization_ratio", "GPU utilization", LABELS)
g_mem_util = Gauge("gpu_memory_utilization_ratio", "memory controller utilization", LABELS)
g_mem_used = Gauge("gpu_memory_used_bytes", "GPU memory used", LABELS)
g_mem_total = Gauge("gpu_memory_total_bytes", "GPU memory total", LABELS)
g_sm_clock = Gauge("gpu_sm_clock_hertz", "SM clock", LABELS)
g_mem_clock = Gauge("gpu_memory_clock_hertz", "memory clock", LABELS)
g_throttle = Gauge("gpu_throttle_reasons", "clocks event reasons bitmask", LABELS)
g_limit = Gauge("gpu_power_limit_watts", "enforced power limit", LABELS)
g_pstate = Gauge("gpu_pstate", "performance state", LABELS)
g_cpu = Gauge("host_cpu_utilization_ratio", "host CPU utilization")
g_host_mem = Gauge("host_memory_used_ratio", "host memory used")
g_info = Gauge("gpu_info", "GPU name", ["gpu", "name"])


def check(ret, what):
    if ret != 0:
        raise RuntimeError(f"{what} failed: {ret}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--library", default="libnvidia-ml.so.1")
    ap.add_argument("--port", type=int, default=9400)
    ap.add_argument("--interval", type=float, default=5.0)
    ap.add_argument("--duration", type=float, default=0, help="seconds; 0 = forever")
    ap.add_argument("--seed", action="store_true",
                    help="read only name, power and temperature per GPU (the seed tutorial's)")
    args = ap.parse_args()

    nvml = ctypes.CDLL(args.library)
    check(nvml.nvmlInit_v2(), "nvmlInit_v2")
    count = ctypes.c_uint()
    check(nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)), "nvmlDeviceGetCount_v2")
    start_http_server(args.port, addr="127.0.0.1")
    psutil.cpu_percent()

    start = time.time()
    while True:
        for i in range(count.value):
            handle = ctypes.c_void_p()
            check(nvml.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)), "handle")
            gpu = str(i)
            mw = ctypes.c_uint()
            check(nvml.nvmlDeviceGetPowerUsage(handle, ctypes.byref(mw)), "power")
            g_power.labels(gpu).set(mw.value / 1000.0)
            if args.seed:
                t = ctypes.c_uint()
                check(nvml.nvmlDeviceGetTemperature(handle, NVML_TEMPERATURE_GPU,
                                                    ctypes.byref(t)), "temperature")
                g_temp.labels(gpu).set(t.value)
                name = ctypes.create_string_buffer(96)
                check(nvml.nvmlDeviceGetName(handle, name, 96), "name")
                g_info.labels(gpu, name.value.decode(errors="replace")).set(1)
                continue
            mj = ctypes.c_ulonglong()
            check(nvml.nvmlDeviceGetTotalEnergyConsumption(handle, ctypes.byref(mj)), "energy")
            g_energy.labels(gpu).set(mj.value / 1000.0)
            t = ctypes.c_uint()
            check(nvml.nvmlDeviceGetTemperature(handle, NVML_TEMPERATURE_GPU, ctypes.byref(t)),
                  "temperature")
            g_temp.labels(gpu).set(t.value)
            check(nvml.nvmlDeviceGetTemperatureThreshold(
                handle, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, ctypes.byref(t)), "threshold")
            g_slowdown.labels(gpu).set(t.value)
            check(nvml.nvmlDeviceGetTemperatureThreshold(
                handle, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, ctypes.byref(t)), "threshold")
            g_shutdown.labels(gpu).set(t.value)
            u = Utilization()
            check(nvml.nvmlDeviceGetUtilizationRates(handle, ctypes.byref(u)), "utilization")
            g_util.labels(gpu).set(u.gpu / 100.0)
            g_mem_util.labels(gpu).set(u.memory / 100.0)
            m = Memory()
            check(nvml.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(m)), "memory")
            g_mem_used.labels(gpu).set(m.used)
            g_mem_total.labels(gpu).set(m.total)
            clk = ctypes.c_uint()
            check(nvml.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_SM, ctypes.byref(clk)), "clock")
            g_sm_clock.labels(gpu).set(clk.value * 1e6)
            check(nvml.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_MEM, ctypes.byref(clk)), "clock")
            g_mem_clock.labels(gpu).set(clk.value * 1e6)
            reasons = ctypes.c_ulonglong()
            check(nvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle, ctypes.byref(reasons)),
                  "throttle")
            g_throttle.labels(gpu).set(reasons.value)
            check(nvml.nvmlDeviceGetEnforcedPowerLimit(handle, ctypes.byref(mw)), "power limit")
            g_limit.labels(gpu).set(mw.value / 1000.0)
            ps = ctypes.c_int()
            check(nvml.nvmlDeviceGetPerformanceState(handle, ctypes.byref(ps)), "pstate")
            g_pstate.labels(gpu).set(ps.value)
        g_cpu.set(psutil.cpu_percent() / 100.0)
        g_host_mem.set(psutil.virtual_memory().percent / 100.0)
        if args.duration and time.time() - start >= args.duration:
            break
        time.sleep(args.interval)
    nvml.nvmlShutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
