"""Bit error rate and FEC counters of the simulated switches' ports, served in each platform's real
format (docs/conformance.md, each platform's "Bit error rate and FEC counters").

A cabled port that is up receives a healthy signal: a pre-FEC BER between 1e-9 and 1e-8 (fixed per
switch and port), which RS-FEC corrects whole - post-FEC BER 0, no uncorrected codeword; its
corrected codewords grow with time (one bit error per codeword at that rate), counted since the
counters were last cleared (``CLEARED``). A port that is down or has no cable measures nothing: its
rates are N/A, its counters stay 0.

The fabric model degrades a port with ``switches.<sw>.ports.<port>.ber =
{"pre_fec_ber": x, "uncorrected_per_s": n, "since": epoch seconds}`` (lab fault switch-ber-degrade):
from ``since`` the port receives at that pre-FEC BER and FEC fails on n codewords a second, each
leaving ``UNCORRECTED_BITS`` bit errors; post-FEC BER is those bits over the bits received. NVUE
prints rates since the last clear: for a degraded port the simulator takes ``since`` as that clear
(real switches keep their counters until an operator clears them).

- SONiC ``show interfaces counters fec-stats`` (portstat -f, tabulate "simple", right-aligned): the
  columns of the configured release (``sonic_release``: ``SONIC_FEC_COLUMNS``), refused before 202205;
- NVUE ``nv show interface <swp> link phy-detail`` (5.10 - 5.14) / ``... link phy health`` (5.15+):
  the user guides' ``key  value`` layouts, BER as NVIDIA prints it (``5E-9``, zero ``15E-255``);
- EOS ``show interfaces phy detail | json``: the revision-2 model (one PHY per port: preFecBer,
  fec.correctedCodewords / uncorrectedCodewords, fec.encoding).
"""

import json
import math
import time
import zlib

from simcore import model

CLEARED = 1700000000.0  # when the healthy ports' counters were last cleared (epoch seconds)
UNCORRECTED_BITS = 160  # bit errors a codeword FEC fails on leaves (16 10-bit symbols, RS(544,514) t=15)
DEGRADED = {"pre_fec_ber": 1e-5, "uncorrected_per_s": 50}  # switch-ber-degrade

# sonic-utilities utilities_common/portstat.py header_fec_only per release branch (docs/conformance.md, SONiC)
_BASE = ("IFACE", "STATE", "FEC_CORR", "FEC_UNCORR", "FEC_SYMBOL_ERR")
_BER = ("FEC_PRE_BER", "FEC_POST_BER")
_FLR = ("FEC_PRE_BER_MAX", "FLR(O)", "FLR(P) (Accuracy)")
SONIC_FEC_COLUMNS = {
    "202205": _BASE,
    "202211": _BASE,
    "202305": _BASE,
    "202311": _BASE,
    "202405": _BASE,
    "202411": _BASE + _BER,
    "202505": _BASE + _BER + _FLR,
    "202511": _BASE + _BER + _FLR + ("FEC_MAX_T",),
}
SONIC_RELEASES = ("202111",) + tuple(SONIC_FEC_COLUMNS)
SONIC_DEFAULT_RELEASE = "202511"


def healthy_pre_fec_ber(switch, port):
    """A healthy port's pre-FEC BER: 1e-9 .. 1e-8, fixed per switch and port."""
    frac = (zlib.crc32(f"{switch}/{port}".encode()) % 1000) / 1000.0
    return 10 ** (-9 + frac)


def state(switch, port, speed_gbps, up, m=None, now=None):
    """What one switch port has measured: {"up", "pre_fec_ber", "post_fec_ber" (None while down),
    "corrected", "uncorrected" (codewords), "effective_errors" (bits FEC did not correct),
    "received_bits", "seconds" (since the last clear), "lanes"}."""
    now = time.time() if now is None else now
    lanes = 8 if int(speed_gbps or 400) >= 400 else 4
    if not up:
        return {
            "up": False,
            "pre_fec_ber": None,
            "post_fec_ber": None,
            "corrected": 0,
            "uncorrected": 0,
            "effective_errors": 0,
            "received_bits": 0,
            "seconds": 0.0,
            "lanes": lanes,
        }
    if m is None:
        try:
            m = model.load()
        except model.ModelMissing:
            m = {}
    over = ((((m.get("switches") or {}).get(switch) or {}).get("ports") or {}).get(str(port)) or {}).get("ber") or {}
    bps = float(speed_gbps or 400) * 1e9
    healthy = healthy_pre_fec_ber(switch, port)
    if over:
        since = float(over.get("since") or now)
        seconds = max(now - since, 0.001)
        pre = float(over.get("pre_fec_ber", DEGRADED["pre_fec_ber"]))
        rate = float(over.get("uncorrected_per_s", DEGRADED["uncorrected_per_s"]))
        uncorrected = int(rate * seconds)
        corrected = int(healthy * bps * (since - CLEARED) + pre * bps * seconds)
        post = rate * UNCORRECTED_BITS / bps
    else:
        seconds = max(now - CLEARED, 0.001)
        pre, post, uncorrected = healthy, 0.0, 0
        corrected = int(pre * bps * seconds)
    return {
        "up": True,
        "pre_fec_ber": pre,
        "post_fec_ber": post,
        "corrected": corrected,
        "uncorrected": uncorrected,
        "effective_errors": uncorrected * UNCORRECTED_BITS,
        "received_bits": int(bps * seconds),
        "seconds": seconds,
        "lanes": lanes,
    }


# ---------------------------------------------------------------- SONiC


def _comma(n):
    return f"{n:,}"


def _ber(v):
    """A BER cell as portstat prints it: 1.48e-20, or N/A where the port has none."""
    return "N/A" if v is None else f"{v:.2e}"


def render_sonic(rows, release=SONIC_DEFAULT_RELEASE):
    """``show interfaces counters fec-stats`` for [(port, state)] in the release's columns (tabulate
    "simple", every cell right-aligned as portstat prints it)."""
    columns = SONIC_FEC_COLUMNS[release]
    table = []
    for port, st in rows:
        cells = {
            "IFACE": port,
            "STATE": "U" if st["up"] else "D",
            "FEC_CORR": _comma(st["corrected"]),
            "FEC_UNCORR": _comma(st["uncorrected"]),
            "FEC_SYMBOL_ERR": _comma(st["corrected"]),
            "FEC_PRE_BER": _ber(st["pre_fec_ber"]),
            "FEC_POST_BER": _ber(st["post_fec_ber"]),
            "FEC_PRE_BER_MAX": _ber(st["pre_fec_ber"]),
            "FLR(O)": "N/A" if not st["up"] else ("0" if not st["uncorrected"] else f"{st['uncorrected'] / max(st['corrected'], 1):.2e}"),
            "FLR(P) (Accuracy)": "N/A" if not st["up"] else "0",
            "FEC_MAX_T": "N/A" if not st["up"] else ("15.0" if st["uncorrected"] else "2.0"),
        }
        table.append([cells[c] for c in columns])
    # tabulate pads a header by two (MIN_PADDING) when the table has headers: "    IFACE" over 9 dashes
    widths = [max([len(c) + 2] + [len(r[i]) for r in table]) for i, c in enumerate(columns)]
    out = ["  ".join(c.rjust(w) for c, w in zip(columns, widths)), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in table]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- NVUE


def nvidia_ber(v):
    """A BER as NVUE prints it: one significant digit, ``5E-9``; zero (nothing measured) ``15E-255``."""
    if v is None or v <= 0:
        return "15E-255"
    exp = math.floor(math.log10(v))
    mant = round(v / 10**exp)
    if mant >= 10:
        mant, exp = 1, exp + 1
    return f"{mant}E{exp}"


def render_nvue(st, release):
    """``nv show interface <swp> link phy-detail`` (up to 5.14) or ``... link phy health`` (5.15+): the
    user guides' ``key  value`` rows under an ``operational`` header; 5.15 adds SNR per lane."""
    lanes = st["lanes"]
    raw_lane = st["corrected"] // lanes
    rows = [
        ("time-since-last-clear-min", str(int(st["seconds"] // 60))),
        ("phy-received-bits", str(st["received_bits"])),
        ("symbol-errors", str(st["effective_errors"])),
        ("effective-errors", str(st["effective_errors"])),
    ]
    rows += [(f"phy-raw-errors-lane{i}", str(raw_lane if st["up"] else 0)) for i in range(lanes)]
    rows += [("raw-ber", nvidia_ber(st["pre_fec_ber"])), ("symbol-ber", nvidia_ber(st["post_fec_ber"])), ("effective-ber", nvidia_ber(st["post_fec_ber"]))]
    rows += [(f"raw-ber-lane{i}", nvidia_ber(st["pre_fec_ber"]) if st["up"] else "0") for i in range(lanes)]
    total = st["received_bits"] // 5440
    bins = [max(total - st["corrected"], 0), int(st["corrected"] * 0.9), st["corrected"] - int(st["corrected"] * 0.9)]
    rows += [(f"rs-num-corr-err-bin{i}", str(bins[i] if i < len(bins) else 0)) for i in range(16)]
    if tuple(int(x) for x in release.split(".")[:2]) >= (5, 15):
        rows += [(f"snr-host-lane{i}", "25.12 dB" if st["up"] else "0     dB") for i in range(lanes)]
        rows += [(f"snr-media-lane{i}", "24.05 dB" if st["up"] else "0     dB") for i in range(lanes)]
    width = max(len(k) for k, _ in rows)
    value_w = max(len("operational"), max(len(v) for _, v in rows))
    out = [" " * (width + 2) + "operational", "-" * width + "  " + "-" * value_w]
    out += [f"{k:<{width}}  {v}" for k, v in rows]
    return "\n".join(out)


# ---------------------------------------------------------------- EOS


def render_eos_json(rows, now=None):
    """``show interfaces phy detail | json`` for [(port, state)]: the revision-2 model, one PHY per port
    (the switch chip's line side); a port that is down has no fec or preFecBer."""
    now = time.time() if now is None else now
    doc = {"interfacePhyStatuses": {}}
    for port, st in rows:
        phy = {
            "description": {"phyChipName": "BCM56880-BH", "location": "line"},
            "operSpeed": "400Gbps" if st["up"] else "unknown",
            "phyState": {"value": "linkUp" if st["up"] else "linkDown", "changes": 1, "lastChange": CLEARED},
        }
        if st["up"]:
            phy["fec"] = {
                "encoding": "reedSolomon",
                "codewordSize": "544",
                "alignmentLock": {"value": True, "changes": 1, "lastChange": CLEARED},
                "correctedCodewords": {"value": st["corrected"], "changes": 1, "lastChange": now},
                "uncorrectedCodewords": {"value": st["uncorrected"], "changes": 1 if st["uncorrected"] else 0, "lastChange": now if st["uncorrected"] else 0.0},
            }
            phy["preFecBer"] = {"value": st["pre_fec_ber"]}
        doc["interfacePhyStatuses"][port] = {
            "phyStatuses": [phy],
            "interfaceState": {"current": "up" if st["up"] else "down", "changes": 1, "lastChange": CLEARED},
            "transceiver": {},
            "macFaults": {"localFault": {"value": not st["up"], "changes": 0, "lastChange": 0.0}},
        }
    return json.dumps(doc, indent=2)
