#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Checks a /metrics page against DMTF Redfish mockup trees: computes, from the mockup JSON
alone, every wattage_facility_* series the Redfish collector must export for a target and
compares values exactly.

  redfish_expect.py METRICS_FILE TARGET=MOCKUP_DIR [TARGET=MOCKUP_DIR...]

Rules (the contract of src/collect/redfish.h):
* each resource kept by the walk gives readings at its point ("1U", "1U/Bay1", "pdu1/A1",
  "cdu1/primary1"...) with qualifiers ("/input", "/supply", "/L1N", "/intake"...);
* an excerpt with a DataSourceUri is one measurement: among every place that quotes the same
  URI exactly one series exists, with the value given (never two: sums must not double-count);
* a Sensor that no excerpt quotes appears as kind="sensor" at "<chassis>/<Id>";
* kWh become joules, L/min m3/s, kPa Pa, percent humidity a ratio.
Prints what is missing, wrong or duplicated; exits 1 when anything is.
"""
import json
import math
import os
import re
import sys

ROOT = "/redfish/v1"


def load(tree, uri):
    if not uri or not uri.startswith(ROOT):
        return None
    p = os.path.join(tree, uri[len(ROOT):].strip("/"), "index.json")
    try:
        with open(p) as f:
            return json.load(f)
    except OSError:
        return None


def members(tree, obj, key):
    coll = load(tree, (obj.get(key) or {}).get("@odata.id"))
    if not coll:
        return []
    out = []
    for m in coll.get("Members", []):
        j = load(tree, m.get("@odata.id"))
        if j is not None:
            out.append((m["@odata.id"], j))
    return out


def ident(j, uri):
    # The URI's last segment: unique in its collection (an Id may be copied by mistake).
    i = uri.rstrip("/").rsplit("/", 1)[-1] or j.get("Id", "")
    return re.sub(r"[^A-Za-z0-9_.-]", "_", i)


def sanitize(s):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", s)


PROPS = [("PowerWatts", "power_watts", 1, None), ("InputPowerWatts", "power_watts", 1, "input"),
         ("OutputPowerWatts", "power_watts", 1, "output"),
         ("EnergykWh", "energy_joules_total", 3.6e6, None),
         ("Voltage", "voltage_volts", 1, None), ("InputVoltage", "voltage_volts", 1, "input"),
         ("CurrentAmps", "current_amperes", 1, None),
         ("InputCurrentAmps", "current_amperes", 1, "input"),
         ("TemperatureCelsius", "temperature_celsius", 1, None),
         ("HumidityPercent", "humidity_ratio", 0.01, None),
         ("SupplyTemperatureCelsius", "temperature_celsius", 1, "supply"),
         ("ReturnTemperatureCelsius", "temperature_celsius", 1, "return"),
         ("FlowLitersPerMinute", "liquid_flow_cubic_meters_per_second", 1 / 60000, None),
         ("SupplyPressurekPa", "pressure_pascals", 1e3, "supply"),
         ("ReturnPressurekPa", "pressure_pascals", 1e3, "return")]
POLY = [("PolyPhasePowerWatts", "power_watts", "PowerWatts"),
        ("PolyPhaseCurrentAmps", "current_amperes", "CurrentAmps"),
        ("PolyPhaseVoltage", "voltage_volts", "Voltage")]
SENSOR = {"Power": ("power_watts", 1), "EnergykWh": ("energy_joules_total", 3.6e6),
          "EnergyWh": ("energy_joules_total", 3600), "EnergyJoules": ("energy_joules_total", 1),
          "Temperature": ("temperature_celsius", 1), "Current": ("current_amperes", 1),
          "Voltage": ("voltage_volts", 1), "Rotational": ("fan_rpm", 1),
          "Humidity": ("humidity_ratio", 0.01),
          "LiquidFlowLPM": ("liquid_flow_cubic_meters_per_second", 1 / 60000),
          "PressurekPa": ("pressure_pascals", 1e3), "PressurePa": ("pressure_pascals", 1)}


def line(key):
    return key.replace("Line", "L").replace("Neutral", "N").replace("To", "")


class Expect:
    def __init__(self, target):
        self.target = target
        self.cands = []   # (group, metric, point, kind, value)
        self.quoted = set()

    def add(self, uri, metric, point, kind, value, key=None):
        if any(c[1:4] == (metric, point, kind) for c in self.cands):
            return  # one series per labels: the first place that gives it
        group = key or uri or f"{metric}|{point}|{kind}"
        if uri:
            self.quoted.add(uri)
        self.cands.append((group, metric, point, kind, value))

    def excerpt(self, v, metric, point, kind, factor):
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            self.add(None, metric, point, kind, v * factor)
            return
        if not isinstance(v, dict):
            return
        uri = v.get("DataSourceUri")
        if isinstance(v.get("Reading"), (int, float)):
            self.add(uri, metric, point, kind, v["Reading"] * factor)
        if metric == "power_watts":
            if isinstance(v.get("ApparentVA"), (int, float)):
                self.add(uri, "apparent_power_voltamperes", point, kind, v["ApparentVA"],
                         key=f"va|{uri}" if uri else None)
            if isinstance(v.get("PowerFactor"), (int, float)):
                self.add(uri, "power_factor_ratio", point, kind, v["PowerFactor"],
                         key=f"pf|{uri}" if uri else None)

    def mark(self, j):
        # Every Sensor a kept resource quotes, exported or not, is left out of the Sensors walk.
        if isinstance(j, dict):
            for k, v in j.items():
                if k == "DataSourceUri" and isinstance(v, str):
                    self.quoted.add(v)
                else:
                    self.mark(v)
        elif isinstance(j, list):
            for v in j:
                self.mark(v)

    def generic(self, j, point, kind):
        self.mark(j)
        for key, metric, factor, qual in PROPS:
            if key in j:
                self.excerpt(j[key], metric, point + ("/" + qual if qual else ""), kind, factor)
        for key, metric, single in POLY:
            pp = j.get(key)
            if not isinstance(pp, dict) or (len(pp) == 1 and single in j):
                continue
            for lk, lv in pp.items():
                self.excerpt(lv, metric, f"{point}/{line(lk)}", kind, 1)

        def fan(v, pt):
            if isinstance(v, dict) and isinstance(v.get("SpeedRPM"), (int, float)):
                u = v.get("DataSourceUri")
                self.add(None, "fan_rpm", pt, "fan", v["SpeedRPM"], key=f"rpm|{u}" if u else None)
        fan(j.get("SpeedPercent"), point)
        fan(j.get("FanSpeedPercent"), point + "/fan")
        for i, v in enumerate(j.get("FanSpeedsPercent", []) or []):
            fan(v, point + "/" + (sanitize(v["DeviceName"]) if "DeviceName" in v else f"fan{i}"))
        for k, v in (j.get("TemperatureSummaryCelsius") or {}).items():
            self.excerpt(v, "temperature_celsius", f"{point}/{k.lower()}", kind, 1)
        for i, v in enumerate(j.get("TemperatureReadingsCelsius", []) or []):
            q = sanitize(v["DeviceName"]) if "DeviceName" in v else f"temp{i}"
            self.excerpt(v, "temperature_celsius", f"{point}/{q}", kind, 1)


def num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def legacy_power(self, j, cid, have_env):
    pcs = j.get("PowerControl", []) or []
    for i, v in enumerate(pcs):
        q = sanitize(v.get("MemberId", str(i)))
        if not have_env and num(v.get("PowerConsumedWatts")):
            self.add(None, "power_watts", cid + (f"/{q}" if len(pcs) > 1 else ""), "chassis",
                     v["PowerConsumedWatts"])
    for i, v in enumerate(j.get("PowerSupplies", []) or []):
        sid = sanitize(v["MemberId"]) if "MemberId" in v else str(i)
        pre = "psu" if sid[:1].isdigit() else ""
        if num(v.get("PowerInputWatts")):
            self.add(None, "power_watts", f"{cid}/{pre}{sid}/input", "psu", v["PowerInputWatts"])
        if num(v.get("LineInputVoltage")):
            self.add(None, "voltage_volts", f"{cid}/{pre}{sid}/input", "psu",
                     v["LineInputVoltage"])
        if num(v.get("LastPowerOutputWatts")):
            self.add(None, "power_watts", f"{cid}/{pre}{sid}/output", "psu",
                     v["LastPowerOutputWatts"])


def legacy_thermal(self, j, cid):
    for i, v in enumerate(j.get("Temperatures", []) or []):
        q = sanitize(v["Name"]) if "Name" in v else f"temp{i}"
        if num(v.get("ReadingCelsius")):
            self.add(None, "temperature_celsius", f"{cid}/{q}", "chassis", v["ReadingCelsius"])
    for i, v in enumerate(j.get("Fans", []) or []):
        n = v.get("Name") or v.get("FanName")
        q = sanitize(n) if n else f"fan{i}"
        if v.get("ReadingUnits") in (None, "RPM") and num(v.get("Reading")):
            self.add(None, "fan_rpm", f"{cid}/{q}", "fan", v["Reading"])


Expect.legacy_power = legacy_power
Expect.legacy_thermal = legacy_thermal


def expect(tree, target):
    e = Expect(target)
    root = load(tree, ROOT)
    pe = load(tree, (root.get("PowerEquipment") or {}).get("@odata.id"))
    for coll, prefix, kind in [("RackPDUs", "pdu", "pdu"), ("FloorPDUs", "floorpdu", "floor_pdu"),
                               ("PowerShelves", "shelf", "power_shelf"),
                               ("TransferSwitches", "ats", "transfer_switch"),
                               ("ElectricalBuses", "bus", "bus")]:
        for uri, u in members(tree, pe or {}, coll):
            i = ident(u, uri)
            point = prefix + ("" if i[0].isdigit() else "-") + i
            m = load(tree, (u.get("Metrics") or {}).get("@odata.id"))
            if m:
                e.generic(m, point, kind)
            for sub, skind in [("Mains", "mains"), ("Branches", "branch"), ("Feeders", "feeder"),
                               ("Subfeeds", "subfeed"), ("Outlets", "outlet")]:
                for su, sj in members(tree, u, sub):
                    e.generic(sj, f"{point}/{ident(sj, su)}", skind)
    te = load(tree, (root.get("ThermalEquipment") or {}).get("@odata.id"))
    for coll, prefix, kind in [("CDUs", "cdu", "cdu"), ("HeatExchangers", "hx", "heat_exchanger"),
                               ("ImmersionUnits", "immersion", "immersion_unit")]:
        for uri, u in members(tree, te or {}, coll):
            i = ident(u, uri)
            point = prefix + ("" if i[0].isdigit() else "-") + i
            env = load(tree, (u.get("EnvironmentMetrics") or {}).get("@odata.id"))
            if env:
                e.generic(env, point, kind)
            for sub, sp, skind in [("PrimaryCoolantConnectors", "primary", "coolant_primary"),
                                   ("SecondaryCoolantConnectors", "secondary", "coolant_secondary"),
                                   ("Pumps", "pump", "pump")]:
                for su, sj in members(tree, u, sub):
                    e.generic(sj, f"{point}/{sp}{ident(sj, su)}", skind)
    sensors = []
    for uri, c in members(tree, root, "Chassis"):
        cid = ident(c, uri)
        ts = load(tree, (c.get("ThermalSubsystem") or {}).get("@odata.id"))
        if ts:
            tm = load(tree, (ts.get("ThermalMetrics") or {}).get("@odata.id"))
            if tm:
                e.generic(tm, cid, "chassis")
            for fu, fj in members(tree, ts, "Fans"):
                e.generic(fj, f"{cid}/{ident(fj, fu)}", "fan")
        env = load(tree, (c.get("EnvironmentMetrics") or {}).get("@odata.id"))
        if env:
            e.generic(env, cid, "chassis")
        ps = load(tree, (c.get("PowerSubsystem") or {}).get("@odata.id"))
        for pu, pj in members(tree, ps or {}, "PowerSupplies"):
            m = load(tree, (pj.get("Metrics") or {}).get("@odata.id"))
            if m:
                e.generic(m, f"{cid}/{ident(pj, pu)}", "psu")
        # The deprecated Power and Thermal, only where the new resources are missing.
        power = load(tree, (c.get("Power") or {}).get("@odata.id"))
        if power is not None and ps is None:
            e.legacy_power(power, cid, env is not None)
        thermal = load(tree, (c.get("Thermal") or {}).get("@odata.id"))
        if thermal is not None and ts is None:
            e.legacy_thermal(thermal, cid)
        for su, sj in members(tree, c, "Sensors"):
            sensors.append((cid, su, sj))
    for cid, su, sj in sensors:
        if su in e.quoted or sj.get("ReadingType") not in SENSOR:
            continue
        if not isinstance(sj.get("Reading"), (int, float)):
            continue
        metric, factor = SENSOR[sj["ReadingType"]]
        if sj["ReadingType"] == "Power" and sj.get("ReadingUnits") == "kW":
            factor = 1e3
        e.add(su, metric, f"{cid}/{ident(sj, su)}", "sensor", sj["Reading"] * factor)
    return e


def parse_metrics(path):
    out = {}
    pat = re.compile(r'^wattage_facility_(\w+)\{([^}]*)\} (\S+)$')
    for ln in open(path):
        m = pat.match(ln.strip())
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        if labels.get("source") != "redfish":
            continue
        key = (labels.get("target"), m.group(1), labels.get("point"), labels.get("kind"))
        if key in out:
            print(f"duplicate series {key}")
        out[key] = float(m.group(3))
    return out


def main():
    got = parse_metrics(sys.argv[1])
    bad = 0
    checked = 0
    for arg in sys.argv[2:]:
        target, tree = arg.split("=", 1)
        e = expect(tree, target)
        groups = {}
        for g, metric, point, kind, value in e.cands:
            groups.setdefault(g, []).append((metric, point, kind, value))
        for g, cands in groups.items():
            present = [c for c in cands if (target, c[0], c[1], c[2]) in got]
            if len(present) != 1:
                bad += 1
                print(f"{target}: {g}: {len(present)} series among {cands}")
                continue
            metric, point, kind, value = present[0]
            v = got[(target, metric, point, kind)]
            if not math.isclose(v, value, rel_tol=1e-9, abs_tol=1e-9):
                bad += 1
                print(f"{target}: {metric}{{point={point},kind={kind}}} = {v}, mockup says {value}")
            checked += 1
        # Nothing beyond what the mockup gives (info and up aside).
        mine = {k for k in got if k[0] == target and k[1] not in ("info", "up")}
        allowed = {(target, c[1], c[2], c[3]) for c in e.cands}
        for k in sorted(mine - allowed):
            bad += 1
            print(f"{target}: unexpected series {k}")
        if checked == 0:
            bad += 1
        print(f"# {target}: {len(groups)} measurements checked")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
