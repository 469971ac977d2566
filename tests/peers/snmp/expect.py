#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks wattage's /metrics against the sensors LibreNMS decodes from the same SNMP recordings.

usage: expect.py METRICS_FILE ORACLE_DIR NAME...

For every recording NAME (served by snmpsim with community NAME and configured as the wattage
target NAME), every expected sensor of ORACLE_DIR/NAME.json whose class is in scope (power,
current, voltage, power_factor, power_consumed) must be matched by a distinct series of that
target and metric with the same value; an outlet's series must carry the outlet's name (the
oracle's description contains it). Sensors outside the issue's scope are listed in OUT_OF_SCOPE.
Prints one line per recording and exits 1 when anything is unmatched.
"""
import json
import re
import sys

METRIC = {
    "power": "wattage_facility_power_watts",
    "current": "wattage_facility_current_amperes",
    "voltage": "wattage_facility_voltage_volts",
    "power_factor": "wattage_facility_power_factor_ratio",
    "power_consumed": "wattage_facility_energy_joules_total",
}
# OID prefixes of in-scope classes that are no facility measurement: a BMC's board voltage rails.
OUT_OF_SCOPE = {"1.3.6.1.4.1.21317.1.3.1.2": "BMC board voltage rails (sensorReading)"}

LINE = re.compile(r'^([a-z_]+)\{(.*)\} (\S+)$')
PAIR = re.compile(r'([a-z_]+)="((?:[^"\\]|\\.)*)"')


def unescape(s):
    return s.replace('\\"', '"').replace('\\n', '\n').replace('\\\\', '\\')


def load_metrics(path):
    series = []
    for line in open(path):
        m = LINE.match(line.strip())
        if not m:
            continue
        labels = {k: unescape(v) for k, v in PAIR.findall(m.group(2))}
        series.append((m.group(1), labels, float(m.group(3))))
    return series


def expected(v, cls):
    if cls == "power_consumed":
        return v * 3.6e6  # kWh
    if cls == "power_factor" and v > 1.0:
        return v / 100  # recorded undivided, as a percentage
    return v


def main():
    series = load_metrics(sys.argv[1])
    odir = sys.argv[2]
    bad = 0
    for name in sys.argv[3:]:
        sensors = json.load(open(f"{odir}/{name}.json"))["sensors"]["discovery"]["sensors"]
        mine = [s for s in series if s[1].get("target") == name]
        used = set()
        checked = skipped = 0
        for s in sensors:
            cls, oid = s["sensor_class"], s["sensor_oid"].lstrip(".")
            if cls not in METRIC or s["sensor_current"] is None:
                continue
            if any(oid.startswith(p) for p in OUT_OF_SCOPE):
                skipped += 1
                continue
            want = expected(float(s["sensor_current"]), cls)
            descr = s.get("sensor_descr") or ""
            hit = None
            for i, (metric, labels, value) in enumerate(mine):
                if i in used or metric != METRIC[cls]:
                    continue
                if abs(value - want) > 1e-6 * max(1.0, abs(want)):
                    continue
                if labels.get("kind") == "outlet" and labels.get("name") and \
                        labels["name"] not in descr:
                    continue
                hit = i
                break
            if hit is None:
                bad += 1
                print(f"# {name}: no {METRIC[cls]} = {want} for {oid} ({descr})")
                continue
            used.add(hit)
            checked += 1
        if checked == 0:
            bad += 1
        print(f"# {name}: {checked} expected sensors matched, {skipped} out of scope")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
