"""The host side's faults, one row each: a NIC port, the node's kernel and NCCL state, PCIe, firmware, the
physical layer of a host link (what verification must catch, and readiness below the fabric)."""

import ipaddress

from linerate_lab import linkphys, nccl_tuning
from linerate_lab.faults.engine import FABRIC, GPU, NIC, NODE, SLOT, Fault, FaultError, cabled_port, fold_switch_side, node_exec, rail

# ---------------------------------------------------------------- a port, the node's kernel and NCCL state


def _cable(up):
    def plug(hit):
        hit.it["cable"] = "up" if up else "down"
        hit.lab.set_cable(hit.node, rail(hit.m, hit.node, hit.device), up)

    return plug


def _speed(hit):
    try:
        gbps = int(hit.gbps)
    except ValueError:
        raise FaultError(f"fault: speed {hit.gbps!r} is not allowed (allowed: Gb/s as an integer)") from None
    hit.it["speed_gbps"] = gbps
    hit.note = [gbps]
    return f"{hit.node} {hit.device}: link trained at {gbps} Gb/s"


def _no_peermem(hit):
    hit.it["peermem_available"] = False
    hit.it["modules"] = [x for x in hit.it.get("modules", []) if x != "nvidia_peermem"]


def _peermem(hit):
    hit.it["peermem_available"] = True
    if "nvidia_peermem" not in hit.it.setdefault("modules", []):
        hit.it["modules"].append("nvidia_peermem")


def _mtu(hit):
    if not str(hit.value).isdigit() or not 576 <= int(hit.value) <= 9216:
        raise FaultError(f"fault: mtu {hit.value!r} is not allowed (allowed: 576..9216)")
    node_exec(hit.lab, hit.node, "ip", "link", "set", hit.it["netdev"], "mtu", str(hit.value))
    hit.note = [int(hit.value)]


def _gid_remove(hit):
    node_exec(hit.lab, hit.node, "ip", "-4", "addr", "flush", "dev", hit.it["netdev"])


def _gid_restore(hit):
    nic = hit.it
    if not nic.get("address"):
        raise FaultError(f"fault: {hit.node} {hit.device} has no rail address in the model")
    have = node_exec(hit.lab, hit.node, "ip", "-4", "-o", "addr", "show", "dev", nic["netdev"])
    if nic["address"].split("/")[0] + "/" not in have:
        node_exec(hit.lab, hit.node, "ip", "addr", "add", nic["address"], "dev", nic["netdev"])


def _nccl_conf(key, value, backup):
    """Apply: ``key=value`` (``value`` None: the HCAS argument) in the node's /etc/nccl.conf, the file as it
    was kept in ``backup`` (the first time)."""

    def put(hit):
        if value is None and not all(c.isalnum() or c in "_,^=:" for c in hit.hcas):
            raise FaultError(f"fault: NCCL_IB_HCA value {hit.hcas!r} is not allowed (allowed: device names, ',', '^', '=')")
        v = hit.hcas if value is None else value
        node_exec(
            hit.lab,
            hit.node,
            "sh",
            "-c",
            f"cp -n /etc/nccl.conf {backup} 2>/dev/null || true; grep -v '^{key}=' {backup} > /etc/nccl.conf; echo '{key}={v}' >> /etc/nccl.conf",
        )
        if value is None:
            hit.note = [hit.hcas]

    return put


def _nccl_conf_restore(backup):
    """Undo: the node's /etc/nccl.conf back from ``backup``, where one was kept."""

    def restore(hit):
        node_exec(hit.lab, hit.node, "sh", "-c", f"if [ -f {backup} ]; then mv {backup} /etc/nccl.conf; fi")

    return restore


def _host_pfc(pfc):
    def put(hit):
        hit.it.setdefault("qos", {})["pfc"] = list(pfc)

    return put


def _host_pfc_back(hit):
    for pfc in hit.saved:
        hit.it.setdefault("qos", {})["pfc"] = pfc
    return f"{hit.node} {hit.device}: PFC back to {hit.it.get('qos', {}).get('pfc')}"


def _host_pfc_now(nic):
    return list((nic.get("qos") or {}).get("pfc") or [0] * 8)


def _gid_index_moved(hit):
    nic = hit.it
    # canonical form: the kernel prints fd00:5ca1::2 for rail 0, and show_gids matches it as printed
    addr = str(ipaddress.IPv6Address(f"fd00:5ca1:{rail(hit.m, hit.node, hit.device)}::{list(hit.m['nodes']).index(hit.node) + 1}"))
    have = node_exec(hit.lab, hit.node, "ip", "-6", "-o", "addr", "show", "dev", nic["netdev"])
    if addr + "/" not in have:
        node_exec(hit.lab, hit.node, "ip", "-6", "addr", "add", f"{addr}/64", "dev", nic["netdev"], "nodad")
    nic["gids_first"] = [addr]
    hit.note = [addr]
    return f"{hit.node} {hit.device}: {addr} on {nic['netdev']} holds GID 2/3; the RoCE v2 IPv4 GID is now at index 5"


def _gid_index_restore(hit):
    nic = hit.it
    for addr in nic.pop("gids_first", None) or []:
        have = node_exec(hit.lab, hit.node, "ip", "-6", "-o", "addr", "show", "dev", nic["netdev"])
        if addr + "/" in have:
            node_exec(hit.lab, hit.node, "ip", "-6", "addr", "del", f"{addr}/64", "dev", nic["netdev"])


def _quirk(hit):
    q = hit.m["nccl_quirk"] = dict(nccl_tuning.QUIRK)
    return f"fabric: NCCL's {q['protocol']} at {q['factor']:g} of the cost model over {q['min_bytes'] >> 20}M..{q['max_bytes'] >> 20}M"


NODE_STATE = (
    Fault(
        "port-down NODE DEVICE   pull the cable of one NIC port",
        NIC,
        _cable(False),
        "{node} {device}: cable pulled (no carrier on {netdev})",
        "port-up NODE DEVICE     plug it back in",
        _cable(True),
        "{node} {device}: cable plugged in",
    ),
    Fault("speed NODE DEVICE GBPS  the link trains at a lower speed (bad cable/optic)", NIC, _speed, params=("gbps",)),
    Fault(
        "no-peermem NODE         the GPU driver build lacks nvidia-peermem",
        NODE,
        _no_peermem,
        "{node}: nvidia-peermem unavailable and unloaded",
        "peermem-restore NODE    nvidia-peermem available and loaded again",
        _peermem,
        "{node}: nvidia-peermem loaded",
    ),
    Fault(
        "mtu NODE DEVICE MTU      set the NIC's netdev MTU (kernel state), e.g. 1500 or 9000",
        NIC,
        _mtu,
        "{node} {device}: {netdev} MTU {value}",
        params=("value",),
    ),
    Fault(
        "gid-remove NODE DEVICE  remove the rail address: no RoCE v2 IPv4 GID at index 3",
        NIC,
        _gid_remove,
        "{node} {device}: IPv4 addresses of {netdev} removed (GID table has no RoCE v2 IPv4 entry)",
        "gid-restore NODE DEVICE put the rail address back",
        _gid_restore,
        "{node} {device}: {address} back on {netdev}",
    ),
    Fault(
        "gid-index-moved NODE DEVICE  an IPv6 address came up on the rail first: the RoCE v2 IPv4 GID moves from index 3 to 5",
        NIC,
        _gid_index_moved,
        "",
        "gid-index-restore NODE DEVICE  undo gid-index-moved (the IPv4 GID back at 3)",
        _gid_index_restore,
        "{node} {device}: the RoCE v2 IPv4 GID back at index 3",
    ),
    Fault(
        "nccl-hca NODE HCAS      write NCCL_IB_HCA=HCAS into the node's /etc/nccl.conf (wrong HCA)",
        NODE,
        _nccl_conf("NCCL_IB_HCA", None, "/etc/nccl.conf.linerate-fault"),
        "{node}: /etc/nccl.conf NCCL_IB_HCA={hcas}",
        "nccl-hca-restore NODE   put the node's /etc/nccl.conf back",
        _nccl_conf_restore("/etc/nccl.conf.linerate-fault"),
        "{node}: /etc/nccl.conf restored",
        params=("hcas",),
    ),
    Fault(
        "tc-mismatch NODE        NCCL_IB_TC=0 in the node's /etc/nccl.conf (NCCL off the intent's class)",
        NODE,
        _nccl_conf("NCCL_IB_TC", 0, "/etc/nccl.conf.linerate-tc"),
        "{node}: /etc/nccl.conf NCCL_IB_TC=0",
        "tc-restore NODE         undo tc-mismatch",
        _nccl_conf_restore("/etc/nccl.conf.linerate-tc"),
        "{node}: /etc/nccl.conf restored",
    ),
    Fault(
        "pfc-off NODE DEVICE     PFC off on every priority of one host port (mlnx_qos --pfc 0,...)",
        NIC,
        _host_pfc([0] * 8),
        "{node} {device}: PFC disabled on all priorities",
        "pfc-restore NODE DEVICE undo pfc-off",
        _host_pfc_back,
        save=_host_pfc_now,
    ),
    Fault(
        "pfc-wrong-prio NODE DEVICE  PFC on priority 4 instead of the no-drop one (host port)",
        NIC,
        _host_pfc([1 if i == 4 else 0 for i in range(8)]),
        "{node} {device}: PFC on priority 4 only",
        "pfc-wrong-prio-restore NODE DEVICE  undo pfc-wrong-prio",
        _host_pfc_back,
        save=_host_pfc_now,
    ),
    Fault(
        "nccl-proto-quirk        the fabric serves NCCL's Simple protocol at 0.8 of NCCL's cost model over "
        "64M..256M (linerate_lab/nccl_tuning.py QUIRK): LL128 beats NCCL's pick there, nowhere else",
        FABRIC,
        _quirk,
        "",
        "nccl-proto-quirk-clear  undo nccl-proto-quirk",
        ("nccl_quirk",),
        "fabric: NCCL's protocols as its cost model expects",
    ),
)


# ---------------------------------------------------------------- below the fabric (host readiness)


def _pcie_how(fault, how):
    """{"width": N} or {"gen": N} of a HOW argument (x1..x8, gen1..gen4)."""
    how = str(how).lower()
    if how in ("x1", "x2", "x4", "x8"):
        return how, {"width": int(how[1:])}
    if how in ("gen1", "gen2", "gen3", "gen4"):
        return how, {"gen": int(how[3:])}
    allowed = "x1, x2, x4, x8, gen1..gen4" if fault == "pcie-degrade" else "gen1..gen4, x1, x2, x4, x8"
    raise FaultError(f"fault: {fault} {how!r} is not allowed (allowed: {allowed})")


def _pcie_degrade(hit):
    how, spec = _pcie_how("pcie-degrade", hit.how)
    hit.it["pcie"] = dict(hit.it.get("pcie") or {}, **spec)
    hit.note = [how]
    return f"{hit.node} {hit.device}: PCIe link of {hit.it['pci']} trained at {how} (lspci LnkSta downgraded)"


def _pcie_slot(hit):
    how, spec = _pcie_how("pcie-slot", hit.how)
    holder, key, label = hit.it
    holder[key] = spec
    hit.note = [how]
    return f"{hit.node} {label}: its slot (upstream port) is capable of {how} only; the link trains there"


def _pcie_slot_restore(hit):
    holder, key, label = hit.it
    holder.pop(key, None)
    return f"{hit.node} {label}: in a Gen5 x16 slot"


def _gpu_stuck(hit):
    node, idx = hit.it
    node.setdefault("gpu_pcie_stuck", {})[idx] = 1
    return f"{hit.node} GPU{idx}: PCIe link stays at Gen1 (2.5GT/s) under load"


def _gpu_unstuck(hit):
    node, idx = hit.it
    stuck = node.get("gpu_pcie_stuck") or {}
    stuck.pop(idx, None)
    if not stuck:
        node.pop("gpu_pcie_stuck", None)
    return f"{hit.node} GPU{idx}: PCIe link trains up under load"


SKEW_FW = "28.38.1002"


def _fw_skew(hit):
    for n in hit.it["nics"]:
        n["fw_version"] = SKEW_FW
    return f"{hit.node}: ConnectX firmware {SKEW_FW} on {', '.join(n['device'] for n in hit.it['nics'])}"


def _fw_back(hit):
    for saved in hit.saved:
        for n, fw in zip(hit.it["nics"], saved):
            n["fw_version"] = fw
    return f"{hit.node}: ConnectX firmware {', '.join(n['fw_version'] for n in hit.it['nics'])}"


READINESS = (
    Fault(
        "pcie-degrade NODE DEVICE HOW  the NIC's PCIe link trains lower: x8 (width) or gen3/gen4 (speed)",
        NIC,
        _pcie_degrade,
        "",
        "pcie-restore NODE DEVICE  undo pcie-degrade (full width and speed)",
        ("pcie",),
        "{node} {device}: PCIe link of {pci} at full width and speed",
        params=("how",),
    ),
    Fault(
        "pcie-slot NODE DEVICE HOW  the slot (upstream port) of a NIC or GPU<i> is older or narrower: gen3/gen4 or x8 (the link trains at the slot's limit)",
        SLOT,
        _pcie_slot,
        "",
        "pcie-slot-restore NODE DEVICE  undo pcie-slot (a Gen5 x16 slot again)",
        _pcie_slot_restore,
        params=("how",),
    ),
    Fault(
        "pcie-gpu-stuck NODE GPU<i>  the GPU's PCIe link stays at Gen1 under load (a riser or "
        "retimer that fails to train up): idle it reads like every healthy GPU at rest",
        GPU,
        _gpu_stuck,
        "",
        "pcie-gpu-stuck-restore NODE GPU<i>  undo pcie-gpu-stuck (the link trains up under load again)",
        _gpu_unstuck,
    ),
    Fault(
        "acs-on NODE              the BIOS leaves ACS on: the PCIe switch ports redirect peer-to-peer traffic",
        NODE,
        {"pcie_acs": True},
        "{node}: ACS request/completion redirect on every PCIe switch downstream port",
        "acs-off NODE             undo acs-on",
        {"pcie_acs": False},
        "{node}: ACS off on the PCIe switch ports",
    ),
    Fault(
        "version-skew NODE        the node's ConnectX cards run another firmware (28.38.1002)",
        NODE,
        _fw_skew,
        "",
        "version-restore NODE     undo version-skew (the firmware the cards ran before)",
        _fw_back,
        save=lambda node: [n["fw_version"] for n in node["nics"]],
    ),
)


# ---------------------------------------------------------------- the physical layer of a host link


def _crc(hit):
    linkphys.start(hit.it, "crc", rate=linkphys.CRC_ERRORS_PER_S)
    return (
        f"{hit.node} {hit.device}: {linkphys.CRC_ERRORS_PER_S} CRC/symbol errors per second on {hit.it['netdev']} "
        "(ethtool -S rx_crc_errors_phy, mlxlink BER) until crc-errors-restore"
    )


def _crc_stop(hit):
    fold_switch_side(hit.m, hit.it, "crc")
    linkphys.stop(hit.it, "crc")
    # A technician who replaces the cable clears the port's physical counters
    # (mlxlink --pc: the PPCNT group ethtool's *_phy counters read too), so the
    # BER mlxlink reports starts again from the new cable.
    linkphys.clear(hit.it)


def _flap(hit):
    linkphys.start(hit.it, "flap", period=linkphys.FLAP_PERIOD_S)
    # the first bounce now, on the wire (carrier off and on); link_down_events_phy counts every one
    hit.lab.set_cable(hit.node, rail(hit.m, hit.node, hit.device), False)
    hit.lab.set_cable(hit.node, rail(hit.m, hit.node, hit.device), hit.it.get("cable", "up") == "up")
    return f"{hit.node} {hit.device}: link flapping every {linkphys.FLAP_PERIOD_S:g} s (link_down_events_phy rises)"


def _flap_stop(hit):
    fold_switch_side(hit.m, hit.it, "flap")
    linkphys.stop(hit.it, "flap")


def _storm_prio(nic):
    """The priority a storming NIC pauses: the one its PFC is on (the no-drop priority), else 3."""
    pfc = list((nic.get("qos") or {}).get("pfc") or [])
    return next((p for p, on in enumerate(pfc) if on), 3)


def _storm(hit):
    nic = hit.it
    prio = _storm_prio(nic)
    linkphys.start(nic, "pfc_storm", prio=prio, rate=linkphys.PFC_STORM_FRAMES_PER_S)
    return (
        f"{hit.node} {hit.device}: {linkphys.PFC_STORM_FRAMES_PER_S} pause frames per second on priority {prio} "
        f"towards {nic.get('switch')} {nic.get('switch_port')} until pfc-storm-stop"
    )


def _storm_stop(hit):
    storm = (hit.it.get("phy_faults") or {}).get("pfc_storm")
    if storm:
        _fold_storm_switch_side(hit.m, hit.it, storm)
    linkphys.stop(hit.it, "pfc_storm")


def _fold_storm_switch_side(m, nic, storm):
    """What the storm counted at the switch end stays in the port's counters: the pause frames it
    received, and (where the port's watchdog guarded the priority) one storm detected and restored
    with what the watchdog dropped meanwhile (switchsim/sim_counters.py reads the live part)."""
    port = cabled_port(m, nic)
    if port is None:
        return
    prio = str(int(storm.get("prio", 3)))
    live = linkphys.accrued(nic, kinds=("pfc_storm",))
    c = port.setdefault("counters", {})
    rx = c.setdefault("pfc_rx", {})  # sim_counters.ALIASES: pfc_rx is rx_pause per priority
    rx[prio] = int(rx.get(prio, 0)) + live.get(f"tx_prio{prio}_pause", 0)
    if int(prio) in (port.get("pfcwd") or []):
        wd = c.setdefault("pfcwd", {}).setdefault(prio, {})
        wd["detected"] = int(wd.get("detected") or 0) + 1
        wd["restored"] = int(wd.get("restored") or 0) + 1
        wd["tx_drop"] = int(wd.get("tx_drop") or 0) + live.get(f"tx_prio{prio}_pause", 0) // 10


RX_DEGRADE_GBPS = 150
FLAKY_SHARE = 0.5

PHYSICAL = (
    Fault(
        "crc-errors NODE DEVICE   a damaged cable/optic: CRC, symbol and corrected-bit counters keep rising",
        NIC,
        _crc,
        "",
        "crc-errors-restore NODE DEVICE  undo crc-errors (the counters keep what they counted)",
        _crc_stop,
        "{node} {device}: cable replaced, physical counters cleared (mlxlink --pc), no new errors",
    ),
    Fault(
        "flap NODE DEVICE         the link flaps: it goes down and retrains every few seconds until flap-stop",
        NIC,
        _flap,
        "",
        "flap-stop NODE DEVICE    undo flap (the link stays up)",
        _flap_stop,
        "{node} {device}: link stable",
    ),
    Fault(
        "pfc-storm NODE DEVICE    the NIC keeps sending PFC pause frames on its no-drop priority "
        "(tx_prioN_pause climbs; the switch port receives them; its PFC watchdog, where on, drops the queue)",
        NIC,
        _storm,
        "",
        "pfc-storm-stop NODE DEVICE  undo pfc-storm (the counters keep what they counted)",
        _storm_stop,
        "{node} {device}: no more pause frames",
    ),
    Fault(
        "optic-degrade NODE DEVICE  the port's optical module receives -14 dBm on every lane "
        "(below its -10.41 dBm low threshold) and runs at 78 C (above 75 C): mlxlink -m and ethtool -m show both",
        NIC,
        {"optics": {"rx_power_dbm": -14.0, "temperature_c": 78}},
        "{node} {device}: optical module Rx power -14 dBm per lane, 78 C",
        "optic-restore NODE DEVICE  undo optic-degrade (a healthy module)",
        ("optics",),
        "{node} {device}: optical module healthy",
    ),
    Fault(
        "module-eeprom-error NODE DEVICE  the kernel's reads of the port's module EEPROM fail "
        "(mlx5 MCIA): ethtool -m fails, mlxlink -m (the firmware's view) still shows the module",
        NIC,
        {"module_eeprom_error": True},
        "{node} {device}: module EEPROM reads fail (ethtool -m: netlink error, exit 1)",
        "module-eeprom-restore NODE DEVICE  undo module-eeprom-error",
        ("module_eeprom_error",),
        "{node} {device}: module EEPROM readable",
    ),
    Fault(
        "rx-degrade NODE DEVICE   bad only when receiving: what the port takes in is limited "
        f"to {RX_DEGRADE_GBPS} Gb/s (a dirty strand towards it), sending stays at line rate",
        NIC,
        {"rx_limit_gbps": RX_DEGRADE_GBPS},
        f"{{node}} {{device}}: receives at most {RX_DEGRADE_GBPS} Gb/s (as ib_write_bw server), sends at line rate",
        "rx-restore NODE DEVICE   undo rx-degrade",
        ("rx_limit_gbps",),
        "{node} {device}: receives at line rate",
    ),
    Fault(
        f"flaky NODE DEVICE        fails {FLAKY_SHARE:.0%} of its tests, either way (each test's draw "
        "fixed by its ends and TCP port: a rerun fails the same tests)",
        NIC,
        {"flaky": FLAKY_SHARE},
        f"{{node}} {{device}}: fails about {FLAKY_SHARE:.0%} of its tests",
        "flaky-stop NODE DEVICE   undo flaky",
        ("flaky",),
        "{node} {device}: every test runs at line rate again",
    ),
)

ROWS = NODE_STATE + READINESS + PHYSICAL
