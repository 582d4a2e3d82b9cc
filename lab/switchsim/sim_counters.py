"""Congestion counters of the simulated switches, served in each platform's real format.

A NIC that keeps sending pause frames (lab fault pfc-storm) adds, live, to the switch port's
received pauses; where the port's PFC watchdog guards that priority, its stats show the storm
detected and the queue dropping (``pfcwd_queue_stats``; SONiC ``show pfcwd stats``, EOS
``show priority-flow-control counters watchdog | json``).

The counters live in the fabric model, per switch port:
``switches.<sw>.ports.<port>.counters`` =
``{"rx_pause"|"pfc_rx": per-priority, "tx_pause"|"pfc_tx": per-priority,
"drops"|"queue_drop": per-priority, "ecn_marked": int or per-priority, "cnp_tx": int, ...}``
where per-priority is a list of 8 ints or ``{"<prio>": int}`` (missing keys are zero). The lab's data-path physics adds to them (an incast on a rail pauses,
marks or drops at the receiver's switch port); the switch only reports them,
as a real switch's CLI reports its hardware counters.

- SONiC ``show pfc counters`` (sonic-utilities pfcstat: an Rx and a Tx table,
  tabulate "simple" layout, thousands separators);
- NVUE ``nv show interface <swp> qos roce counters`` (Cumulus Linux 5.x layout;
  the RoCE class only: NVUE has no per-priority split there);
- EOS ``show priority-flow-control counters | json`` (eAPI revision 3 shape:
  rxFrames / txFrames per interface).

Interface error counters (link health) come from the same port ``counters``
(``rx_errors``, ``tx_errors``, ``link_down``: what the port has counted so far)
plus the physical faults of the cable on the port, live: a damaged cable
(lab fault ``crc-errors`` on the NIC at its other end) corrupts frames in both
directions, so the switch port's receiver counts FCS/symbol errors at the same
rate the NIC does; a flapping link (``flap``) goes down on both ends. Served as

- SONiC ``show interfaces counters`` (portstat: RX_ERR, RX_DRP, RX_OVR, TX_ERR ...);
- NVUE ``nv show interface <swp> link stats`` (in-errors, out-errors,
  carrier-transitions: two per flap, down and up);
- EOS ``show interfaces counters errors | json`` (fcsErrors, symbolErrors,
  inErrors, outErrors ...).
"""

import json

from simcore import model
from linerate_lab import linkphys


# Either spelling the data-path physics may use: a list of 8 per-priority values,
# or {"<prio>": n}; pfc_tx / pfc_rx / queue_drop are the physics' names.
ALIASES = {"tx_pause": ("tx_pause", "pfc_tx"), "rx_pause": ("rx_pause", "pfc_rx"), "drops": ("drops", "queue_drop")}


def _per_prio(value):
    if isinstance(value, dict):
        out = [0] * 8
        for prio, n in value.items():
            if str(prio).isdigit() and 0 <= int(prio) < 8:
                out[int(prio)] += int(n or 0)
        return out
    vals = [int(x or 0) for x in (value or [])][:8]
    return vals + [0] * (8 - len(vals))


def _total(value):
    return sum(_per_prio(value)) if isinstance(value, (dict, list)) else int(value or 0)


def _raw(switch, port, m=None):
    """(model, the counters the model keeps for one switch port)."""
    if m is None:
        try:
            m = model.load()
        except model.ModelMissing:
            m = {}
    return m, ((((m.get("switches") or {}).get(switch) or {}).get("ports") or {}).get(str(port)) or {}).get("counters") or {}


def storm(switch, port, m=None):
    """(priority, pause frames so far) of a PFC storm the NIC at the other end of the port's cable
    is sending now (lab fault pfc-storm, linkphys), or None."""
    m = _raw(switch, port, m)[0]
    nic = _cable_nic(m, switch, port)
    st = ((nic or {}).get("phy_faults") or {}).get("pfc_storm")
    if not st:
        return None
    prio = int(st.get("prio", 3))
    return prio, linkphys.accrued(nic, kinds=("pfc_storm",)).get(f"tx_prio{prio}_pause", 0)


def port_counters(switch, port, m=None):
    """The counters of one switch port from the model (zeros where none were counted), plus the
    pause frames a storming NIC on its cable has sent it so far."""
    m, raw = _raw(switch, port, m)
    out = {}
    for key, names in ALIASES.items():
        per = [0] * 8
        for name in names:
            per = [a + b for a, b in zip(per, _per_prio(raw.get(name)))]
        out[key] = per
    live = storm(switch, port, m)
    if live:
        out["rx_pause"][live[0]] += live[1]
    for k in ("ecn_marked", "cnp_tx", "roce_tx_packets", "roce_tx_bytes", "rx_roce_discards"):
        out[k] = _total(raw.get(k))
    # per-priority ECN marks where the physics keeps them per priority (None: only a total)
    out["ecn_marked_prio"] = _per_prio(raw.get("ecn_marked")) if isinstance(raw.get("ecn_marked"), (dict, list)) else None
    return out


def _comma(n):
    return f"{n:,}"


def _simple_table(headers, rows):
    """tabulate(tablefmt="simple", numalign="right", stralign="right") as pfcstat prints it."""
    widths = [max([len(h) + 2] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths)), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return lines


def render_sonic_pfc_counters(switch, ports, m=None):
    out = []
    for direction, key in (("Rx", "rx_pause"), ("Tx", "tx_pause")):
        rows = [[p] + [_comma(v) for v in port_counters(switch, p, m)[key]] for p in ports]
        out += _simple_table([f"Port {direction}"] + [f"PFC{i}" for i in range(8)], rows)
        out.append("")
    return "\n".join(out).rstrip("\n")


def render_sonic_queue_counters(switch, ports, m=None):
    """``show queue counters`` of a platform with ECN statistics (EcnMarked columns), unicast
    queues UC0..UC7 (the lab's TC_TO_QUEUE map is the identity: queue n carries priority n)."""
    headers = ["Port", "TxQ", "Counter/pkts", "Counter/bytes", "Drop/pkts", "Drop/bytes", "EcnMarked/pkts", "EcnMarked/bytes"]
    rows = []
    for p in ports:
        c = port_counters(switch, p, m)
        ecn = c["ecn_marked_prio"] or [0] * 8
        for q in range(8):
            rows.append([p, f"UC{q}", _comma(0), _comma(0), _comma(c["drops"][q]), _comma(c["drops"][q] * 4160), _comma(ecn[q]), _comma(ecn[q] * 4160)])
    return "\n".join(_simple_table(headers, rows))


def _bytes(n):
    """NVUE's human sizes: '0 Bytes', '144 Bytes', '56.52 MB', '92824.38 GB'."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} Bytes"


def render_nvue_roce_counters(switch, port, roce_prio, m=None):
    c = port_counters(switch, port, m)
    p = roce_prio
    rows = [
        ("rx-stats", None, None),
        ("  rx-non-roce-stats", None, None),
        ("    buffer-max-usage", _bytes(0), "Max Ingress Pool-buffer usage for non-RoCE traffic"),
        ("    buffer-usage", _bytes(0), "Current Ingress Pool-buffer usage for non-RoCE traffic"),
        ("    no-buffer-discard", str(sum(c["drops"]) - c["drops"][p]), "Rx buffer discards for non-RoCE traffic"),
        ("    non-roce-bytes", _bytes(0), "non-roce rx bytes"),
        ("    non-roce-packets", "0", "non-roce rx packets"),
        ("    pg-max-usage", _bytes(0), "Max PG-buffer usage for non-RoCE traffic"),
        ("    pg-usage", _bytes(0), "Current PG-buffer usage for non-RoCE traffic"),
        ("  rx-pfc-stats", None, None),
        ("    pause-duration", "0", "Rx PFC pause duration for RoCE traffic"),
        ("    pause-packets", str(c["rx_pause"][p]), "Rx PFC pause packets for RoCE traffic"),
        ("  rx-roce-stats", None, None),
        ("    buffer-max-usage", _bytes(0), "Max Ingress Pool-buffer usage for RoCE traffic"),
        ("    buffer-usage", _bytes(0), "Current Ingress Pool-buffer usage for RoCE traffic"),
        ("    no-buffer-discard", str(c["rx_roce_discards"]), "Rx buffer discards for RoCE traffic"),
        ("    pg-max-usage", _bytes(0), "Max PG-buffer usage for RoCE traffic"),
        ("    pg-usage", _bytes(0), "Current PG-buffer usage for RoCE traffic"),
        ("    roce-bytes", _bytes(0), "Rx RoCE Bytes"),
        ("    roce-packets", "0", "Rx RoCE Packets"),
        ("tx-stats", None, None),
        ("  tx-cnp-stats", None, None),
        ("    buffer-max-usage", _bytes(0), "Max Egress Pool-buffer usage for CNP traffic"),
        ("    buffer-usage", _bytes(0), "Current Egress Pool-buffer usage for CNP traffic"),
        ("    cnp-bytes", _bytes(c["cnp_tx"] * 64), "Tx CNP Packet Bytes"),
        ("    cnp-packets", str(c["cnp_tx"]), "Tx CNP Packets"),
        ("    tc-max-usage", _bytes(0), "Max TC-buffer usage for CNP traffic"),
        ("    tc-usage", _bytes(0), "Current TC-buffer usage for CNP traffic"),
        ("    unicast-no-buffer-discard", "0", "Tx buffer discards for CNP traffic"),
        ("  tx-ecn-stats", None, None),
        ("    ecn-marked-packets", str(c["ecn_marked"]), "Tx ECN marked packets"),
        ("  tx-pfc-stats", None, None),
        ("    pause-duration", "0", "Tx PFC pause duration for RoCE traffic"),
        ("    pause-packets", str(c["tx_pause"][p]), "Tx PFC pause packets for RoCE traffic"),
        ("  tx-roce-stats", None, None),
        ("    buffer-max-usage", _bytes(0), "Max Egress Pool-buffer usage for RoCE traffic"),
        ("    buffer-usage", _bytes(0), "Current Egress Pool-buffer usage for RoCE traffic"),
        ("    roce-bytes", _bytes(c["roce_tx_bytes"]), "Tx RoCE Packet bytes"),
        ("    roce-packets", str(c["roce_tx_packets"]), "Tx RoCE Packets"),
        ("    tc-max-usage", _bytes(0), "Max TC-buffer usage for RoCE traffic"),
        ("    tc-usage", _bytes(0), "Current TC-buffer usage for RoCE traffic"),
        ("    unicast-no-buffer-discard", str(c["drops"][p]), "Tx buffer discards for RoCE traffic"),
    ]
    lines = [
        "                               operational   applied  description",
        "-----------------------------  ------------  -------  ------------------------------------------------------",
    ]
    for key, value, desc in rows:
        if value is None:
            lines.append(key)
        else:
            lines.append(f"{key:<29}  {value:<12}  {'':<7}  {desc}")
    return "\n".join(lines)


def render_eos_pfc_counters_json(switch, ports, m=None):
    doc = {"interfaceCounters": {}}
    for p in ports:
        c = port_counters(switch, p, m)
        doc["interfaceCounters"][p] = {"rxFrames": sum(c["rx_pause"]), "txFrames": sum(c["tx_pause"])}
    return json.dumps(doc, indent=2)


def _cable_nic(m, switch, port):
    """The NIC at the other end of a switch port's cable (None: an uplink or nothing)."""
    peer = ((((m.get("switches") or {}).get(switch) or {}).get("ports") or {}).get(str(port)) or {}).get("peer") or ""
    name, _, dev = peer.partition(":")
    for nic in ((m.get("nodes") or {}).get(name) or {}).get("nics") or []:
        if dev in (nic.get("device"), nic.get("netdev")):
            return nic
    return None


def error_counters(switch, port, m=None):
    """{rx_errors, tx_errors, rx_drops, tx_drops, link_down} of one switch port: what the model has
    counted plus what a live physical fault on the port's cable adds now (linkphys)."""
    m, raw = _raw(switch, port, m)
    out = {k: int(raw.get(k) or 0) for k in ("rx_errors", "tx_errors", "rx_drops", "tx_drops", "link_down")}
    nic = _cable_nic(m, switch, port)
    if nic is not None:
        live = linkphys.accrued(nic)
        out["rx_errors"] += live.get("rx_crc_errors_phy", 0)
        out["link_down"] += live.get("link_down_events_phy", 0)
    return out


def render_sonic_intf_counters(switch, ports, m=None):
    """``show interfaces counters`` (portstat, STATE and RX_BPS columns) of ``ports``."""
    headers = ["IFACE", "STATE", "RX_OK", "RX_BPS", "RX_UTIL", "RX_ERR", "RX_DRP", "RX_OVR", "TX_OK", "TX_BPS", "TX_UTIL", "TX_ERR", "TX_DRP", "TX_OVR"]
    rows = []
    for p in ports:
        c = error_counters(switch, p, m)
        rows.append(
            [
                p,
                "U",
                "0",
                "0.00 B/s",
                "0.00%",
                _comma(c["rx_errors"]),
                _comma(c["rx_drops"]),
                "0",
                "0",
                "0.00 B/s",
                "0.00%",
                _comma(c["tx_errors"]),
                _comma(c["tx_drops"]),
                "0",
            ]
        )
    return "\n".join(_simple_table(headers, rows))


def render_nvue_link_stats(switch, port, m=None):
    """``nv show interface <swp> link stats`` (Cumulus Linux 5.x reference layout)."""
    c = error_counters(switch, port, m)
    rows = [
        ("carrier-transitions", str(2 * c["link_down"])),
        ("in-bytes", _bytes(0)),
        ("in-drops", str(c["rx_drops"])),
        ("in-errors", str(c["rx_errors"])),
        ("in-pkts", "0"),
        ("out-bytes", _bytes(0)),
        ("out-drops", str(c["tx_drops"])),
        ("out-errors", str(c["tx_errors"])),
        ("out-pkts", "0"),
    ]
    lines = ["                     operational  applied  pending", "-------------------  -----------  -------  -------"]
    lines += [f"{k:<19}  {v:<11}  {'':<7}  " for k, v in rows]
    return "\n".join(line.rstrip() if i == len(lines) - 1 else line for i, line in enumerate(lines))


def _nvue_titled_table(title, headers, rows):
    """One titled table of ``nv show interface <swp> counters``: the title underlined with ``=``, then the
    header, its dashed rule and the rows, four spaces in, columns two apart and as wide as their widest cell."""
    widths = [max(len(r[i]) for r in [headers] + rows) for i in range(len(headers))]
    out = [title, "=" * (len(title) + 3)]
    for r in [headers, ["-" * w for w in widths]] + rows:
        out.append("    " + "  ".join(c.ljust(w) for c, w in zip(r, widths)))
    return out


def render_nvue_interface_counters(switch, port, m=None):
    """``nv show interface <swp> counters`` (Cumulus Linux 5.5.0 and later) in the 5.15 / 5.19 user guides'
    layout: carrier-transitions under the operational/applied header, then Detailed Counters, Drop Counters,
    Error Counters, Packet Size Statistics and Ingress Buffer Statistics. The model's rx/tx errors are the
    Error Counters' Total Errors (received ones as FCS errors, what a damaged cable corrupts), its rx/tx
    drops the Drop Counters' Buffer Drops / Queue Drops and Total Drops; a link down is two transitions."""
    c = error_counters(switch, port, m)
    rx_err, tx_err, rx_drop, tx_drop = (str(c[k]) for k in ("rx_errors", "tx_errors", "rx_drops", "tx_drops"))
    rxtx = ["Counter", "Receive", "Transmit"]
    lines = [
        "                     operational  applied",
        "-------------------  -----------  -------",
        f"{'carrier-transitions':<19}  {str(2 * c['link_down']):<11}  {'':<7}",
        "",
    ]
    lines += _nvue_titled_table(
        "Detailed Counters", rxtx, [[k, "0", "0"] for k in ("Broadcast Packets", "Multicast Packets", "Total Octets", "Total Packets", "Unicast Packets")]
    ) + [""]
    lines += _nvue_titled_table(
        "Drop Counters",
        rxtx,
        [
            ["ACL Drops", "0", "n/a"],
            ["Buffer Drops", rx_drop, "n/a"],
            ["Non-Queue Drops", "n/a", "0"],
            ["Queue Drops", "n/a", tx_drop],
            ["Total Drops", rx_drop, tx_drop],
        ],
    ) + [""]
    lines += _nvue_titled_table(
        "Error Counters",
        rxtx,
        [
            ["Alignment Errors", "0", "n/a"],
            ["FCS Errors", rx_err, "n/a"],
            ["Jabber Errors", "0", "n/a"],
            ["Length Errors", "0", "n/a"],
            ["Oversize Errors", "0", "n/a"],
            ["Symbol Errors", "0", "n/a"],
            ["Total Errors", rx_err, tx_err],
            ["Undersize Errors", "0", "n/a"],
        ],
    ) + [""]
    lines += _nvue_titled_table(
        "Packet Size Statistics",
        rxtx,
        [[k, "0", "0"] for k in ("64", "65-127", "128-255", "256-511", "512-1023", "1024-1518", "1519-2047", "2048-4095", "4096-16383")],
    )
    lines += [""] + _nvue_titled_table(
        "Ingress Buffer Statistics",
        ["priority-group", "rx-frames", "rx-buffer-discards", "rx-shared-buffer-discards"],
        [[str(pg), "0", _bytes(0), _bytes(0)] for pg in range(8)],
    )
    return "\n".join(line.rstrip() if i == len(lines) - 1 else line for i, line in enumerate(lines))


def render_eos_intf_errors_json(switch, ports, m=None):
    """``show interfaces counters errors | json``: a damaged cable's corrupted frames fail the FCS
    check and carry bad symbols; inErrors counts every errored input frame."""
    doc = {"interfaceErrorCounters": {}}
    for p in ports:
        c = error_counters(switch, p, m)
        doc["interfaceErrorCounters"][p] = {
            "inErrors": c["rx_errors"],
            "frameTooLongs": 0,
            "outErrors": c["tx_errors"],
            "frameTooShorts": 0,
            "fcsErrors": c["rx_errors"],
            "alignmentErrors": 0,
            "symbolErrors": c["rx_errors"],
        }
    return json.dumps(doc, indent=2)


def pfcwd_queue_stats(switch, port, prio, m=None):
    """The PFC watchdog's view of one lossless queue (``show pfcwd stats``): storms it detected and
    restored, and what it dropped meanwhile, from the port's model counters ``pfcwd``
    (``{"<prio>": {"detected", "restored", "tx_drop", "rx_drop", "stormed"}}``); zeros where none."""
    m, raw = _raw(switch, port, m)
    st = ((raw.get("pfcwd") or {}).get(str(prio))) or {}
    out = {
        "stormed": bool(st.get("stormed")),
        "detected": int(st.get("detected") or 0),
        "restored": int(st.get("restored") or 0),
        "tx_ok": int(st.get("tx_ok") or 0),
        "tx_drop": int(st.get("tx_drop") or 0),
        "rx_ok": int(st.get("rx_ok") or 0),
        "rx_drop": int(st.get("rx_drop") or 0),
    }
    # a live storm on the port's cable (lab fault pfc-storm): a watchdog that guards the priority has
    # detected it and drops the queue (what would have waited, a tenth of the pauses' worth of packets)
    live = storm(switch, port, m)
    guarded = prio in ((((m.get("switches") or {}).get(switch) or {}).get("ports") or {}).get(str(port)) or {}).get("pfcwd", [])
    if live and live[0] == int(prio) and guarded:
        out["stormed"] = True
        out["detected"] += 1
        out["tx_drop"] += live[1] // 10
        out["rx_drop"] += live[1] // 10
    return out
