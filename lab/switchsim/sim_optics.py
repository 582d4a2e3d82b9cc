"""Optical modules of the simulated switches' ports (transceiver DOM), served in each platform's
real format.

Every cabled port holds a healthy SR/DR module: Rx power about -0.4 to -0.9 dBm per lane
(4 lanes up to 200G, 8 from 400G), 45 C, with the alarm thresholds the host side's modules
carry (lab/sim/linerate_lab/tools/mlxlink.py DDM_THRESHOLDS: Rx -10.41 / 6 dBm, -5 / 75 C).
A port with no cable (no ``peer`` in the topology) is an empty cage.

The fabric model overrides a port's module with
``switches.<sw>.ports.<port>.optics = {"rx_power_dbm": one value for every lane, "temperature_c": C}``
(the keys the host-side optic-degrade fault uses for NICs).

- NVUE ``nv show platform transceiver <swp>`` (Cumulus Linux 5.11+ reference layout);
- SONiC ``show interfaces transceiver eeprom --dom <port>`` (sonic-utilities sfpshow);
- EOS ``show interfaces transceiver detail | json`` (one entry per lane interface).
"""

import json

from simcore import model
from linerate_lab.tools.mlxlink import DDM_THRESHOLDS

RX_LOW, RX_HIGH = DDM_THRESHOLDS["rx_power_dbm"]
TEMP_LOW, TEMP_HIGH = DDM_THRESHOLDS["temperature_c"]
RX_WARN = (-7.4, 3.0)
TEMP_WARN = (0.0, 70.0)
HEALTHY_RX = (-0.42, -0.57, -0.35, -0.61, -0.48, -0.72, -0.39, -0.88)
HEALTHY_TEMP = 45.0


def lanes_for(speed_gbps):
    return 8 if int(speed_gbps or 400) >= 400 else 4


def module(switch, port, speed_gbps, cabled, m=None):
    """The module in one switch port: None for an empty cage, else {"lanes": n, "rx": [dBm per lane],
    "temperature": C, "vendor", "part_number", "identifier", "media"}."""
    if not cabled:
        return None
    if m is None:
        try:
            m = model.load()
        except model.ModelMissing:
            m = {}
    over = ((((m.get("switches") or {}).get(switch) or {}).get("ports") or {}).get(str(port)) or {}).get("optics") or {}
    n = lanes_for(speed_gbps)
    rx = [float(over["rx_power_dbm"])] * n if over.get("rx_power_dbm") is not None else list(HEALTHY_RX[:n])
    big = n == 8
    return {
        "lanes": n,
        "rx": rx,
        "temperature": float(over.get("temperature_c", HEALTHY_TEMP)),
        "vendor": "NVIDIA",
        "part_number": "MMS4X00-NS" if big else "MMA1B00-C100D",
        "identifier": "OSFP" if big else "QSFP28",
        "media": "400GBASE-DR4" if big else "100GBASE-SR4",
    }


def _mw(dbm):
    return 10 ** (dbm / 10)


# ---------------------------------------------------------------- NVUE


def render_nvue(mod):
    """``nv show platform transceiver <swp>``: the reference's ``key : value`` layout."""
    if mod is None:
        return "\n".join(["status                 : unplugged", "error-status           : N/A", "identifier             : N/A"])
    t = mod["temperature"]
    out = [
        "cable-type             : Optical module",
        "cable-length           : 0m",
        "diagnostics-status     : Diagnostic Data Available",
        "status                 : plugged_enabled",
        "error-status           : N/A",
        f"identifier             : {mod['identifier']}",
        "vendor-rev             : A1",
        f"vendor-name            : {mod['vendor']}",
        f"vendor-pn              : {mod['part_number']}",
        "vendor-sn              : MT2409FT00001",
        "temperature: ",
        f"  temperature           : {t:.2f} C",
        f"  high-alarm-threshold  : {TEMP_HIGH:.2f} C",
        f"  low-alarm-threshold   : {TEMP_LOW:.2f} C",
        f"  high-warning-threshold: {TEMP_WARN[1]:.2f} C",
        f"  low-warning-threshold : {TEMP_WARN[0]:.2f} C",
        f"  alarm                 : {'On' if not TEMP_LOW <= t <= TEMP_HIGH else 'Off'}",
        "voltage: ",
        "  voltage               : 3.2862 V",
        "  high-alarm-threshold  : 3.6300 V",
        "  low-alarm-threshold   : 2.9700 V",
        "  high-warning-threshold: 3.4650 V",
        "  low-warning-threshold : 3.1350 V",
        "  alarm                 : Off",
        "channel: ",
    ]
    for i, dbm in enumerate(mod["rx"], 1):
        out += [
            f"  channel-{i}: ",
            "    rx-power: ",
            f"        power                 : {_mw(dbm):.4f} mW / {dbm:.2f} dBm",
            f"        high-alarm-threshold  : {RX_HIGH:.2f} dBm",
            f"        low-alarm-threshold   : {RX_LOW:.2f} dBm",
            f"        high-warning-threshold: {RX_WARN[1]:.2f} dBm",
            f"        low-warning-threshold : {RX_WARN[0]:.2f} dBm",
            f"        alarm                 : {'On' if not RX_LOW <= dbm <= RX_HIGH else 'Off'}",
        ]
    return "\n".join(out)


# ---------------------------------------------------------------- SONiC


def render_sonic(port, mod):
    """``show interfaces transceiver eeprom --dom <port>`` (sfpshow, CMIS module layout)."""
    if mod is None:
        return f"{port}: SFP EEPROM Not detected\n"
    i8, i16 = " " * 8, " " * 16
    out = [
        f"{port}: SFP EEPROM detected",
        f"{i8}CMIS Rev: 5.0",
        f"{i8}Connector: MPOx12",
        f"{i8}Host Lane Count: {mod['lanes']}",
        f"{i8}Identifier: {'OSFP 8X Pluggable Transceiver' if mod['lanes'] == 8 else 'QSFP28 or later'}",
        f"{i8}Media Interface Technology: {'1310 nm EML' if mod['lanes'] == 8 else '850 nm VCSEL'}",
        f"{i8}Media Lane Count: {mod['lanes'] // 2 if mod['lanes'] == 8 else 4}",
        f"{i8}Vendor Name: {mod['vendor']}",
        f"{i8}Vendor PN: {mod['part_number']}",
        f"{i8}Vendor Rev: A1",
        f"{i8}Vendor SN: MT2409FT00001",
        f"{i8}ChannelMonitorValues:",
    ]
    for i, dbm in enumerate(mod["rx"], 1):
        out.append(f"{i16}RX{i}Power: {dbm:.4f}dBm")
    for i in range(1, mod["lanes"] + 1):
        out.append(f"{i16}TX{i}Bias: 8.3800mA")
    out += [
        f"{i8}ChannelThresholdValues:",
        f"{i16}RxPowerHighAlarm  : {RX_HIGH:.4f}dBm",
        f"{i16}RxPowerHighWarning: {RX_WARN[1]:.4f}dBm",
        f"{i16}RxPowerLowAlarm   : {RX_LOW:.4f}dBm",
        f"{i16}RxPowerLowWarning : {RX_WARN[0]:.4f}dBm",
        f"{i8}ModuleMonitorValues:",
        f"{i16}Temperature: {mod['temperature']:.4f}C",
        f"{i16}Vcc: 3.2862Volts",
        f"{i8}ModuleThresholdValues:",
        f"{i16}TempHighAlarm  : {TEMP_HIGH:.4f}C",
        f"{i16}TempHighWarning: {TEMP_WARN[1]:.4f}C",
        f"{i16}TempLowAlarm   : {TEMP_LOW:.4f}C",
        f"{i16}TempLowWarning : {TEMP_WARN[0]:.4f}C",
    ]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- EOS


def _levels(low, high, warn):
    return {"highWarn": warn[1], "lowWarn": warn[0], "highAlarm": high, "lowAlarm": low}


def render_eos_json(modules):
    """``show interfaces transceiver detail | json`` for {port: module} (``EthernetN/1`` ports): one
    entry per lane interface ``EthernetN/1`` .. ``EthernetN/<lanes>``; temperature and voltage on
    the first lane; an empty cage is not listed (EOS lists modules with DOM only)."""
    doc = {"interfaces": {}}
    for port, mod in modules.items():
        if mod is None:
            continue
        cage = port.rsplit("/", 1)[0] if port.count("/") else port
        for i, dbm in enumerate(mod["rx"], 1):
            entry = {
                "updateTime": 1700000000.0,
                "mediaType": mod["media"],
                "narrowBand": False,
                "vendorSn": "XKT2409FT001",
                "txBias": 8.38,
                "txPower": 1.5,
                "rxPower": round(dbm, 2),
                "details": {
                    "rxPower": _levels(RX_LOW, RX_HIGH, RX_WARN),
                    "txPower": _levels(-8.508, 5.0, (-5.5, 3.0)),
                    "txBias": _levels(2.0, 15.0, (3.0, 13.0)),
                },
            }
            if i == 1:
                entry.update(temperature=mod["temperature"], voltage=3.286)
                entry["details"].update(temperature=_levels(TEMP_LOW, TEMP_HIGH, TEMP_WARN), voltage=_levels(2.97, 3.63, (3.135, 3.465)))
            doc["interfaces"][f"{cage}/{i}" if cage != port else port] = entry
    return json.dumps(doc, indent=2)
