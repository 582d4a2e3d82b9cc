"""Fault injection: break one thing in the lab on purpose.

Each fault changes the physics (the fabric model, a veth's carrier) the way
the real failure would, and is recorded under ``faults`` in the model so a
report can say what was injected. ``clear`` undoes every recorded fault.
"""
import copy
import ipaddress
import time

from linerate_lab import kmods, linkphys, model, nccl_tuning

FAULTS = {}
# Steps a fault leaves for after the model's lock is released (apply()).
_AFTER = []


def fault(name, usage):
    def deco(fn):
        fn.usage = usage
        FAULTS[name] = fn
        return fn
    return deco


class FaultError(SystemExit):
    pass


def _nic(m, node, device):
    nic = model.nic(m, device, node)
    if nic is None:
        raise FaultError(f"fault: node {node} has no device {device!r} "
                         f"(has: {', '.join(n['device'] for n in m['nodes'][node]['nics'])})")
    return nic


def _rail(m, node, device):
    return [n["device"] for n in m["nodes"][node]["nics"]].index(device)


def _record(m, kind, args):
    m.setdefault("faults", []).append({"kind": kind, "args": list(args)})


@fault("port-down", "port-down NODE DEVICE   pull the cable of one NIC port")
def port_down(lab, m, node, device):
    nic = _nic(m, node, device)
    nic["cable"] = "down"
    lab.set_cable(node, _rail(m, node, device), False)
    _record(m, "port-down", [node, device])
    return f"{node} {device}: cable pulled (no carrier on {nic['netdev']})"


@fault("port-up", "port-up NODE DEVICE     plug it back in")
def port_up(lab, m, node, device):
    nic = _nic(m, node, device)
    nic["cable"] = "up"
    lab.set_cable(node, _rail(m, node, device), True)
    m["faults"] = [f for f in m.get("faults", []) if f != {"kind": "port-down", "args": [node, device]}]
    return f"{node} {device}: cable plugged in"


@fault("speed", "speed NODE DEVICE GBPS  the link trains at a lower speed (bad cable/optic)")
def speed(lab, m, node, device, gbps):
    nic = _nic(m, node, device)
    try:
        gbps = int(gbps)
    except ValueError:
        raise FaultError(f"fault: speed {gbps!r} is not allowed (allowed: Gb/s as an integer)") from None
    nic["speed_gbps"] = gbps
    _record(m, "speed", [node, device, gbps])
    return f"{node} {device}: link trained at {gbps} Gb/s"


@fault("no-peermem", "no-peermem NODE         the GPU driver build lacks nvidia-peermem")
def no_peermem(lab, m, node):
    n = m["nodes"][node]
    n["peermem_available"] = False
    n["modules"] = [x for x in n.get("modules", []) if x != "nvidia_peermem"]
    _record(m, "no-peermem", [node])
    return f"{node}: nvidia-peermem unavailable and unloaded"


# ---------------------------------------------------------------- what verification must catch

# What a fault runs in a node runs with the capabilities of the node's own processes: labctl starts a node
# with CAP_SYS_ADMIN for lab/sim/node-init.sh, which drops it before systemd, so everything sshd and systemd
# start lacks it while `podman exec` keeps it. A process a fault leaves running (rdma-busy's holder) with a
# capability Ansible's session lacks hides its /proc/<pid>/fd from it (ptrace access needs the caller's
# permitted set to contain the target's), and the in-use check would see nothing.
NODE_CAPS = ("setpriv", "--bounding-set=-sys_admin", "--")


def _exec(lab, node, *argv):
    res = lab.podman("exec", lab.PREFIX + node, *NODE_CAPS, *argv, check=False, capture=True)
    if res.returncode != 0:
        raise FaultError(f"fault: {' '.join(argv)} on {node} failed: {(res.stderr or '').strip()}")
    return res.stdout


def _is(f, kind, args):
    """True when the recorded fault ``f`` is a ``kind`` whose first arguments are ``args``."""
    return f["kind"] == kind and f["args"][:len(args)] == list(args)


def _untrack(m, kind, args):
    m["faults"] = [f for f in m.get("faults", []) if not _is(f, kind, args)]


def _track(m, kind, args, *saved):
    """Record ``kind`` on ``args`` (with what it ``saved`` to restore) in place of an earlier record of it there."""
    _untrack(m, kind, args)
    _record(m, kind, [*args, *saved])


def _tracked(m, kind, args):
    """True when a ``kind`` on ``args`` is recorded (a second injection keeps the first one's saved state)."""
    return any(_is(f, kind, args) for f in m.get("faults", []))


def _saved(m, kind, args):
    """What each recorded ``kind`` on ``args`` saved to restore (its argument after ``args``), oldest first."""
    return (f["args"][len(args)] for f in m.get("faults", []) if _is(f, kind, args))


def _nccl_conf_set(lab, node, key, value, backup):
    """``key=value`` in the node's /etc/nccl.conf, the file as it was kept in ``backup`` (the first time)."""
    _exec(lab, node, "sh", "-c", f"cp -n /etc/nccl.conf {backup} 2>/dev/null || true; "
          f"grep -v '^{key}=' {backup} > /etc/nccl.conf; echo '{key}={value}' >> /etc/nccl.conf")


def _nccl_conf_restore(lab, node, backup):
    """The node's /etc/nccl.conf back from ``backup``, where one was kept."""
    _exec(lab, node, "sh", "-c", f"if [ -f {backup} ]; then mv {backup} /etc/nccl.conf; fi")


def _set_host_pfc(m, kind, node, device, pfc):
    """A host port's PFC vector set to ``pfc``; the one it had is recorded with ``kind`` to restore."""
    nic = _nic(m, node, device)
    qos = nic.setdefault("qos", {})
    _record(m, kind, [node, device, list(qos.get("pfc") or [0] * 8)])
    qos["pfc"] = pfc


def _restore_host_pfc(m, kind, node, device):
    """Undo ``_set_host_pfc``: the PFC vector ``kind`` recorded, and the record gone."""
    nic = _nic(m, node, device)
    for pfc in _saved(m, kind, [node, device]):
        nic.setdefault("qos", {})["pfc"] = pfc
    _untrack(m, kind, [node, device])
    return f"{node} {device}: PFC back to {nic.get('qos', {}).get('pfc')}"


@fault("mtu", "mtu NODE DEVICE MTU      set the NIC's netdev MTU (kernel state), e.g. 1500 or 9000")
def mtu(lab, m, node, device, value):
    nic = _nic(m, node, device)
    if not str(value).isdigit() or not 576 <= int(value) <= 9216:
        raise FaultError(f"fault: mtu {value!r} is not allowed (allowed: 576..9216)")
    _exec(lab, node, "ip", "link", "set", nic["netdev"], "mtu", str(value))
    _track(m, "mtu", [node, device], int(value))
    return f"{node} {device}: {nic['netdev']} MTU {value}"


@fault("gid-remove", "gid-remove NODE DEVICE  remove the rail address: no RoCE v2 IPv4 GID at index 3")
def gid_remove(lab, m, node, device):
    nic = _nic(m, node, device)
    _exec(lab, node, "ip", "-4", "addr", "flush", "dev", nic["netdev"])
    _record(m, "gid-remove", [node, device])
    return f"{node} {device}: IPv4 addresses of {nic['netdev']} removed (GID table has no RoCE v2 IPv4 entry)"


@fault("gid-restore", "gid-restore NODE DEVICE put the rail address back")
def gid_restore(lab, m, node, device):
    nic = _nic(m, node, device)
    if not nic.get("address"):
        raise FaultError(f"fault: {node} {device} has no rail address in the model")
    have = _exec(lab, node, "ip", "-4", "-o", "addr", "show", "dev", nic["netdev"])
    if nic["address"].split("/")[0] + "/" not in have:
        _exec(lab, node, "ip", "addr", "add", nic["address"], "dev", nic["netdev"])
    _untrack(m, "gid-remove", [node, device])
    return f"{node} {device}: {nic['address']} back on {nic['netdev']}"


@fault("nccl-hca", "nccl-hca NODE HCAS      write NCCL_IB_HCA=HCAS into the node's /etc/nccl.conf (wrong HCA)")
def nccl_hca(lab, m, node, hcas):
    if not all(c.isalnum() or c in "_,^=:" for c in hcas):
        raise FaultError(f"fault: NCCL_IB_HCA value {hcas!r} is not allowed (allowed: device names, ',', '^', '=')")
    _nccl_conf_set(lab, node, "NCCL_IB_HCA", hcas, "/etc/nccl.conf.linerate-fault")
    _record(m, "nccl-hca", [node, hcas])
    return f"{node}: /etc/nccl.conf NCCL_IB_HCA={hcas}"


@fault("nccl-hca-restore", "nccl-hca-restore NODE   put the node's /etc/nccl.conf back")
def nccl_hca_restore(lab, m, node):
    _nccl_conf_restore(lab, node, "/etc/nccl.conf.linerate-fault")
    _untrack(m, "nccl-hca", [node])
    return f"{node}: /etc/nccl.conf restored"


@fault("pfc-off", "pfc-off NODE DEVICE     PFC off on every priority of one host port (mlnx_qos --pfc 0,...)")
def pfc_off(lab, m, node, device):
    _set_host_pfc(m, "pfc-off", node, device, [0] * 8)
    return f"{node} {device}: PFC disabled on all priorities"


@fault("pfc-restore", "pfc-restore NODE DEVICE undo pfc-off")
def pfc_restore(lab, m, node, device):
    return _restore_host_pfc(m, "pfc-off", node, device)


@fault("pfc-wrong-prio", "pfc-wrong-prio NODE DEVICE  PFC on priority 4 instead of the no-drop one (host port)")
def pfc_wrong_prio(lab, m, node, device):
    _set_host_pfc(m, "pfc-wrong-prio", node, device, [1 if i == 4 else 0 for i in range(8)])
    return f"{node} {device}: PFC on priority 4 only"


@fault("pfc-wrong-prio-restore", "pfc-wrong-prio-restore NODE DEVICE  undo pfc-wrong-prio")
def pfc_wrong_prio_restore(lab, m, node, device):
    return _restore_host_pfc(m, "pfc-wrong-prio", node, device)


@fault("tc-mismatch", "tc-mismatch NODE        NCCL_IB_TC=0 in the node's /etc/nccl.conf (NCCL off the intent's class)")
def tc_mismatch(lab, m, node):
    _nccl_conf_set(lab, node, "NCCL_IB_TC", 0, "/etc/nccl.conf.linerate-tc")
    _record(m, "tc-mismatch", [node])
    return f"{node}: /etc/nccl.conf NCCL_IB_TC=0"


@fault("tc-restore", "tc-restore NODE         undo tc-mismatch")
def tc_restore(lab, m, node):
    _nccl_conf_restore(lab, node, "/etc/nccl.conf.linerate-tc")
    _untrack(m, "tc-mismatch", [node])
    return f"{node}: /etc/nccl.conf restored"


@fault("switch-pfc-off", "switch-pfc-off SWITCH PORT  PFC off on one switch port (operational state)")
def switch_pfc_off(lab, m, switch, port):
    # The switch simulators publish ports.*.pfc from their running config; this
    # sets the operational state directly, as a port whose PFC config was lost.
    p = _switch_port(m, switch, port)
    _record(m, "switch-pfc-off", [switch, str(port), list(p.get("pfc") or [])])
    p["pfc"] = []
    return f"{switch} {port}: PFC off"


@fault("switch-pfc-restore", "switch-pfc-restore SWITCH PORT  undo switch-pfc-off")
def switch_pfc_restore(lab, m, switch, port):
    p = _switch_port(m, switch, port)
    for pfc in _saved(m, "switch-pfc-off", [switch, str(port)]):
        p["pfc"] = pfc
    _untrack(m, "switch-pfc-off", [switch, str(port)])
    return f"{switch} {port}: PFC on priorities {p.get('pfc')}"


@fault("switch-headroom-zero", "switch-headroom-zero SWITCH PORT  no lossless headroom on one switch port "
       "(operational state: PFC stays on, the port drops under incast; the switch's own config: "
       "lab/switchsim/fault.py SWITCH headroom_zero PORT)")
def switch_headroom_zero(lab, m, switch, port):
    p = _switch_port(m, switch, port)
    if not _tracked(m, "switch-headroom-zero", [switch, str(port)]):
        _record(m, "switch-headroom-zero", [switch, str(port), p.get("headroom")])
    p["headroom"] = []
    return f"{switch} {port}: no lossless headroom (PFC on {p.get('pfc')}, but the port drops under incast)"


@fault("switch-headroom-restore", "switch-headroom-restore SWITCH PORT  undo switch-headroom-zero")
def switch_headroom_restore(lab, m, switch, port):
    p = _switch_port(m, switch, port)
    for headroom in _saved(m, "switch-headroom-zero", [switch, str(port)]):
        if headroom is None:
            p.pop("headroom", None)
        else:
            p["headroom"] = headroom
    _untrack(m, "switch-headroom-zero", [switch, str(port)])
    return f"{switch} {port}: lossless headroom on priorities {p.get('headroom', p.get('pfc'))}"


@fault("pfc-watchdog-off", "pfc-watchdog-off SWITCH  the switch's PFC watchdog stops on every port (operational state)")
def pfc_watchdog_off(lab, m, switch):
    sw = _switch(m, switch)
    if not _tracked(m, "pfc-watchdog-off", [switch]):
        _record(m, "pfc-watchdog-off", [switch, {p: v.get("pfcwd") for p, v in sw.get("ports", {}).items()}])
    for v in sw.get("ports", {}).values():
        v["pfcwd"] = []
    return f"{switch}: PFC watchdog off"


@fault("pfc-watchdog-restore", "pfc-watchdog-restore SWITCH  undo pfc-watchdog-off")
def pfc_watchdog_restore(lab, m, switch):
    sw = _switch(m, switch)
    for saved in _saved(m, "pfc-watchdog-off", [switch]):
        for p, old in saved.items():
            if p in sw.get("ports", {}):
                if old is None:
                    sw["ports"][p].pop("pfcwd", None)
                else:
                    sw["ports"][p]["pfcwd"] = old
    _untrack(m, "pfc-watchdog-off", [switch])
    return f"{switch}: PFC watchdog as configured"


@fault("peermem-restore", "peermem-restore NODE    nvidia-peermem available and loaded again")
def peermem_restore(lab, m, node):
    n = m["nodes"][node]
    n["peermem_available"] = True
    if "nvidia_peermem" not in n.setdefault("modules", []):
        n["modules"].append("nvidia_peermem")
    _untrack(m, "no-peermem", [node])
    return f"{node}: nvidia-peermem loaded"


# ---------------------------------------------------------------- below the fabric (host readiness)

@fault("pcie-degrade", "pcie-degrade NODE DEVICE HOW  the NIC's PCIe link trains lower: x8 (width) or gen3/gen4 (speed)")
def pcie_degrade(lab, m, node, device, how):
    nic = _nic(m, node, device)
    how = how.lower()
    link = dict(nic.get("pcie") or {})
    if how in ("x1", "x2", "x4", "x8"):
        link["width"] = int(how[1:])
    elif how in ("gen1", "gen2", "gen3", "gen4"):
        link["gen"] = int(how[3:])
    else:
        raise FaultError(f"fault: pcie-degrade {how!r} is not allowed (allowed: x1, x2, x4, x8, gen1..gen4)")
    nic["pcie"] = link
    _track(m, "pcie-degrade", [node, device], how)
    return f"{node} {device}: PCIe link of {nic['pci']} trained at {how} (lspci LnkSta downgraded)"


@fault("pcie-restore", "pcie-restore NODE DEVICE  undo pcie-degrade (full width and speed)")
def pcie_restore(lab, m, node, device):
    nic = _nic(m, node, device)
    nic.pop("pcie", None)
    _untrack(m, "pcie-degrade", [node, device])
    return f"{node} {device}: PCIe link of {nic['pci']} at full width and speed"


def _slot_target(m, node, device):
    """(holder dict, key, label) of the slot spec of a NIC (``mlx5_N``) or a GPU (``GPU<i>``)."""
    if str(device).upper().startswith("GPU"):
        n = m["nodes"][node]
        idx = str(device)[3:]
        if not idx.isdigit() or int(idx) >= n.get("gpus", 0):
            raise FaultError(f"fault: node {node} has no GPU {device!r} (has: GPU0..GPU{n.get('gpus', 0) - 1})"
                             if n.get("gpus") else f"fault: node {node} has no GPU")
        return n.setdefault("gpu_pcie_slot", {}), idx, f"GPU{idx}"
    nic = _nic(m, node, device)
    return nic, "pcie_slot", f"{device} ({nic['pci']})"


@fault("pcie-slot", "pcie-slot NODE DEVICE HOW  the slot (upstream port) of a NIC or GPU<i> is older or narrower: "
                    "gen3/gen4 or x8 (the link trains at the slot's limit)")
def pcie_slot(lab, m, node, device, how):
    how = str(how).lower()
    if how in ("gen1", "gen2", "gen3", "gen4"):
        spec = {"gen": int(how[3:])}
    elif how in ("x1", "x2", "x4", "x8"):
        spec = {"width": int(how[1:])}
    else:
        raise FaultError(f"fault: pcie-slot {how!r} is not allowed (allowed: gen1..gen4, x1, x2, x4, x8)")
    holder, key, label = _slot_target(m, node, device)
    holder[key] = spec
    _track(m, "pcie-slot", [node, device], how)
    return f"{node} {label}: its slot (upstream port) is capable of {how} only; the link trains there"


@fault("pcie-slot-restore", "pcie-slot-restore NODE DEVICE  undo pcie-slot (a Gen5 x16 slot again)")
def pcie_slot_restore(lab, m, node, device):
    holder, key, label = _slot_target(m, node, device)
    holder.pop(key, None)
    _untrack(m, "pcie-slot", [node, device])
    return f"{node} {label}: in a Gen5 x16 slot"


def _gpu_index(m, node, gpu):
    """The index of ``GPU<i>`` (or ``<i>``) on ``node``, or a FaultError naming the GPUs it has."""
    n = m["nodes"][node]
    idx = str(gpu).upper().removeprefix("GPU")
    if not idx.isdigit() or int(idx) >= n.get("gpus", 0):
        raise FaultError(f"fault: node {node} has no GPU {gpu!r} (has: GPU0..GPU{n.get('gpus', 0) - 1})"
                         if n.get("gpus") else f"fault: node {node} has no GPU")
    return str(int(idx))


@fault("pcie-gpu-stuck", "pcie-gpu-stuck NODE GPU<i>  the GPU's PCIe link stays at Gen1 under load (a riser or "
                         "retimer that fails to train up): idle it reads like every healthy GPU at rest")
def pcie_gpu_stuck(lab, m, node, gpu):
    idx = _gpu_index(m, node, gpu)
    m["nodes"][node].setdefault("gpu_pcie_stuck", {})[idx] = 1
    _track(m, "pcie-gpu-stuck", [node, f"GPU{idx}"])
    return f"{node} GPU{idx}: PCIe link stays at Gen1 (2.5GT/s) under load"


@fault("pcie-gpu-stuck-restore", "pcie-gpu-stuck-restore NODE GPU<i>  undo pcie-gpu-stuck (the link trains up under "
                                 "load again)")
def pcie_gpu_stuck_restore(lab, m, node, gpu):
    idx = _gpu_index(m, node, gpu)
    stuck = m["nodes"][node].get("gpu_pcie_stuck") or {}
    stuck.pop(idx, None)
    if not stuck:
        m["nodes"][node].pop("gpu_pcie_stuck", None)
    _untrack(m, "pcie-gpu-stuck", [node, f"GPU{idx}"])
    return f"{node} GPU{idx}: PCIe link trains up under load"


@fault("acs-on", "acs-on NODE              the BIOS leaves ACS on: the PCIe switch ports redirect peer-to-peer traffic")
def acs_on(lab, m, node):
    m["nodes"][node]["pcie_acs"] = True
    _track(m, "acs-on", [node])
    return f"{node}: ACS request/completion redirect on every PCIe switch downstream port"


@fault("acs-off", "acs-off NODE             undo acs-on")
def acs_off(lab, m, node):
    m["nodes"][node]["pcie_acs"] = False
    _untrack(m, "acs-on", [node])
    return f"{node}: ACS off on the PCIe switch ports"


SKEW_FW = "28.38.1002"


@fault("version-skew", "version-skew NODE        the node's ConnectX cards run another firmware (28.38.1002)")
def version_skew(lab, m, node):
    nics = m["nodes"][node]["nics"]
    if not _tracked(m, "version-skew", [node]):
        _record(m, "version-skew", [node, [n["fw_version"] for n in nics]])
    for n in nics:
        n["fw_version"] = SKEW_FW
    return f"{node}: ConnectX firmware {SKEW_FW} on {', '.join(n['device'] for n in nics)}"


@fault("version-restore", "version-restore NODE     undo version-skew (the firmware the cards ran before)")
def version_restore(lab, m, node):
    nics = m["nodes"][node]["nics"]
    for saved in _saved(m, "version-skew", [node]):
        for n, fw in zip(nics, saved):
            n["fw_version"] = fw
    _untrack(m, "version-skew", [node])
    return f"{node}: ConnectX firmware {', '.join(n['fw_version'] for n in nics)}"
@fault("crc-errors", "crc-errors NODE DEVICE   a damaged cable/optic: CRC, symbol and corrected-bit counters keep rising")
def crc_errors(lab, m, node, device):
    nic = _nic(m, node, device)
    linkphys.start(nic, "crc", rate=linkphys.CRC_ERRORS_PER_S)
    _track(m, "crc-errors", [node, device])
    return (f"{node} {device}: {linkphys.CRC_ERRORS_PER_S} CRC/symbol errors per second on {nic['netdev']} "
            "(ethtool -S rx_crc_errors_phy, mlxlink BER) until crc-errors-restore")


@fault("crc-errors-restore", "crc-errors-restore NODE DEVICE  undo crc-errors (the counters keep what they counted)")
def crc_errors_restore(lab, m, node, device):
    nic = _nic(m, node, device)
    _fold_switch_side(m, nic, "crc")
    linkphys.stop(nic, "crc")
    # A technician who replaces the cable clears the port's physical counters
    # (mlxlink --pc: the PPCNT group ethtool's *_phy counters read too), so the
    # BER mlxlink reports starts again from the new cable.
    linkphys.clear(nic)
    _untrack(m, "crc-errors", [node, device])
    return f"{node} {device}: cable replaced, physical counters cleared (mlxlink --pc), no new errors"


@fault("flap", "flap NODE DEVICE         the link flaps: it goes down and retrains every few seconds until flap-stop")
def flap(lab, m, node, device):
    nic = _nic(m, node, device)
    linkphys.start(nic, "flap", period=linkphys.FLAP_PERIOD_S)
    # the first bounce now, on the wire (carrier off and on); link_down_events_phy counts every one
    lab.set_cable(node, _rail(m, node, device), False)
    lab.set_cable(node, _rail(m, node, device), nic.get("cable", "up") == "up")
    _track(m, "flap", [node, device])
    return f"{node} {device}: link flapping every {linkphys.FLAP_PERIOD_S:g} s (link_down_events_phy rises)"


@fault("flap-stop", "flap-stop NODE DEVICE    undo flap (the link stays up)")
def flap_stop(lab, m, node, device):
    nic = _nic(m, node, device)
    _fold_switch_side(m, nic, "flap")
    linkphys.stop(nic, "flap")
    _untrack(m, "flap", [node, device])
    return f"{node} {device}: link stable"


def _switch_nics(m, switch):
    """[(node, nic)] of every host port cabled to ``switch``."""
    _switch(m, switch)
    out = [(node, nic) for node, n in sorted(m["nodes"].items()) for nic in n["nics"] if nic.get("switch") == switch]
    if not out:
        raise FaultError(f"fault: no host port is cabled to {switch} (a spine: its leaves' uplinks are not modelled "
                         "as host links)")
    return out


@fault("switch-reboot", "switch-reboot SWITCH     the switch reboots, over and over until switch-reboot-stop (a boot "
       "loop): every host port cabled to it goes down and retrains every few seconds, so each node under it flaps")
def switch_reboot(lab, m, switch):
    nics = _switch_nics(m, switch)
    for node, nic in nics:
        if not _tracked(m, "flap", [node, nic["device"]]):
            linkphys.start(nic, "flap", period=linkphys.FLAP_PERIOD_S)
        rail = _rail(m, node, nic["device"])
        lab.set_cable(node, rail, False)
        lab.set_cable(node, rail, nic.get("cable", "up") == "up")
    _track(m, "switch-reboot", [switch])
    return (f"{switch}: rebooting every {linkphys.FLAP_PERIOD_S:g} s; its host ports flap: "
            + ", ".join(f"{node} {nic['device']}" for node, nic in nics))


@fault("switch-reboot-stop", "switch-reboot-stop SWITCH  undo switch-reboot (the switch stays up, its ports "
       "stable; a port with its own flap fault keeps flapping)")
def switch_reboot_stop(lab, m, switch):
    nics = _switch_nics(m, switch)
    for node, nic in nics:
        if not _tracked(m, "flap", [node, nic["device"]]):
            _fold_switch_side(m, nic, "flap")
            linkphys.stop(nic, "flap")
    _untrack(m, "switch-reboot", [switch])
    return f"{switch}: up and stable"


@fault("optic-degrade", "optic-degrade NODE DEVICE  the port's optical module receives -14 dBm on every lane "
       "(below its -10.41 dBm low threshold) and runs at 78 C (above 75 C): mlxlink -m and ethtool -m show both")
def optic_degrade(lab, m, node, device):
    nic = _nic(m, node, device)
    nic["optics"] = {"rx_power_dbm": -14.0, "temperature_c": 78}
    _track(m, "optic-degrade", [node, device])
    return f"{node} {device}: optical module Rx power -14 dBm per lane, 78 C"


@fault("optic-restore", "optic-restore NODE DEVICE  undo optic-degrade (a healthy module)")
def optic_restore(lab, m, node, device):
    nic = _nic(m, node, device)
    nic.pop("optics", None)
    _untrack(m, "optic-degrade", [node, device])
    return f"{node} {device}: optical module healthy"


@fault("module-eeprom-error", "module-eeprom-error NODE DEVICE  the kernel's reads of the port's module EEPROM fail "
       "(mlx5 MCIA): ethtool -m fails, mlxlink -m (the firmware's view) still shows the module")
def module_eeprom_error(lab, m, node, device):
    nic = _nic(m, node, device)
    nic["module_eeprom_error"] = True
    _track(m, "module-eeprom-error", [node, device])
    return f"{node} {device}: module EEPROM reads fail (ethtool -m: netlink error, exit 1)"


@fault("module-eeprom-restore", "module-eeprom-restore NODE DEVICE  undo module-eeprom-error")
def module_eeprom_restore(lab, m, node, device):
    nic = _nic(m, node, device)
    nic.pop("module_eeprom_error", None)
    _untrack(m, "module-eeprom-error", [node, device])
    return f"{node} {device}: module EEPROM readable"


@fault("nccl-proto-quirk", "nccl-proto-quirk        the fabric serves NCCL's Simple protocol at 0.8 of NCCL's cost "
       "model over 64M..256M (linerate_lab/nccl_tuning.py QUIRK): LL128 beats NCCL's pick there, nowhere else")
def nccl_proto_quirk(lab, m):
    m["nccl_quirk"] = dict(nccl_tuning.QUIRK)
    _track(m, "nccl-proto-quirk", [])
    q = nccl_tuning.QUIRK
    return (f"fabric: NCCL's {q['protocol']} at {q['factor']:g} of the cost model over "
            f"{q['min_bytes'] >> 20}M..{q['max_bytes'] >> 20}M")


@fault("nccl-proto-quirk-clear", "nccl-proto-quirk-clear  undo nccl-proto-quirk")
def nccl_proto_quirk_clear(lab, m):
    m.pop("nccl_quirk", None)
    _untrack(m, "nccl-proto-quirk", [])
    return "fabric: NCCL's protocols as its cost model expects"


@fault("gid-index-moved", "gid-index-moved NODE DEVICE  an IPv6 address came up on the rail first: "
       "the RoCE v2 IPv4 GID moves from index 3 to 5")
def gid_index_moved(lab, m, node, device):
    nic = _nic(m, node, device)
    # canonical form: the kernel prints fd00:5ca1::2 for rail 0, and show_gids matches it as printed
    addr = str(ipaddress.IPv6Address(f"fd00:5ca1:{_rail(m, node, device)}::{list(m['nodes']).index(node) + 1}"))
    have = _exec(lab, node, "ip", "-6", "-o", "addr", "show", "dev", nic["netdev"])
    if addr + "/" not in have:
        _exec(lab, node, "ip", "-6", "addr", "add", f"{addr}/64", "dev", nic["netdev"], "nodad")
    nic["gids_first"] = [addr]
    _track(m, "gid-index-moved", [node, device], addr)
    return f"{node} {device}: {addr} on {nic['netdev']} holds GID 2/3; the RoCE v2 IPv4 GID is now at index 5"


@fault("gid-index-restore", "gid-index-restore NODE DEVICE  undo gid-index-moved (the IPv4 GID back at 3)")
def gid_index_restore(lab, m, node, device):
    nic = _nic(m, node, device)
    for addr in nic.pop("gids_first", None) or []:
        have = _exec(lab, node, "ip", "-6", "-o", "addr", "show", "dev", nic["netdev"])
        if addr + "/" in have:
            _exec(lab, node, "ip", "-6", "addr", "del", f"{addr}/64", "dev", nic["netdev"])
    _untrack(m, "gid-index-moved", [node, device])
    return f"{node} {device}: the RoCE v2 IPv4 GID back at index 3"


@fault("switch-ecn-off", "switch-ecn-off SWITCH PORT  ECN marking off on one switch port (operational state; PFC stays)")
def switch_ecn_off(lab, m, switch, port):
    p = _switch_port(m, switch, port)
    _track(m, "switch-ecn-off", [switch, str(port)], p.get("ecn", True))
    p["ecn"] = False
    return f"{switch} {port}: ECN marking off (no CE marks, so no CNPs under congestion)"


@fault("switch-ecn-restore", "switch-ecn-restore SWITCH PORT  undo switch-ecn-off")
def switch_ecn_restore(lab, m, switch, port):
    p = _switch_port(m, switch, port)
    for ecn in _saved(m, "switch-ecn-off", [switch, str(port)]):
        p["ecn"] = ecn
    _untrack(m, "switch-ecn-off", [switch, str(port)])
    return f"{switch} {port}: ECN marking as configured"


def _ib(lab, m, kind, switch, ports, **kw):
    """InfiniBand faults happen in the subnet (ibsim), under the running SM."""
    if m.get("transport") != "infiniband":
        raise FaultError(f"fault: ib-{kind} needs the InfiniBand lab (this one is {m.get('transport')})")
    if switch not in m.get("switches", {}):
        raise FaultError(f"fault: {switch!r} is not a lab switch (allowed: {', '.join(sorted(m['switches']))})")
    try:
        ports = [int(p) for p in ports]
    except ValueError:
        raise FaultError(f"fault: ports must be numbers, not {ports}")
    rec = lab.ibsimlab().fault(lab.IBSIM_DIR, kind, switch, ports, **kw)
    _record(m, f"ib-{kind}", [switch, *map(str, ports)])
    return rec


@fault("ib-unlink", "ib-unlink SWITCH PORT   InfiniBand: remove the cable on a switch port")
def ib_unlink(lab, m, switch, port):
    _ib(lab, m, "unlink", switch, [port])
    return f"{switch} port {port}: link removed (the SM sees it on its next sweep)"


@fault("ib-relink", "ib-relink SWITCH PORT   InfiniBand: put it back")
def ib_relink(lab, m, switch, port):
    _ib(lab, m, "relink", switch, [port])
    _untrack(m, "ib-unlink", [switch, str(port)])
    _untrack(m, "ib-relink", [switch, str(port)])
    return f"{switch} port {port}: link restored"


@fault("ib-errors", "ib-errors SWITCH PORT COUNTER=N[,COUNTER=N]  InfiniBand: the switch port's PortCounters "
       "error counters (ibsim PerformanceSet), e.g. SymbolErrorCounter=250,LinkDownedCounter=3")
def ib_errors(lab, m, switch, port, settings):
    counters = lab.ibsimlab().parse_counter_settings(settings.split(","))
    _untrack(m, "ib-counters", [switch, str(port)])
    _ib(lab, m, "counters", switch, [port], counters=counters)
    return (f"{switch} port {port}: " + ", ".join(f"{k}={v}" for k, v in counters.items())
            + " (ibqueryerrors and perfquery read them)")


@fault("ib-errors-clear", "ib-errors-clear SWITCH PORT  undo ib-errors (every error counter of the port back to 0)")
def ib_errors_clear(lab, m, switch, port):
    isl = lab.ibsimlab()
    _ib(lab, m, "counters", switch, [port], counters=dict.fromkeys(isl.PERF_ERROR_COUNTERS, 0))
    _untrack(m, "ib-counters", [switch, str(port)])
    return f"{switch} port {port}: error counters cleared"


@fault("ib-swap", "ib-swap SWITCH PORT_A PORT_B  InfiniBand: two host cables on each other's ports")
def ib_swap(lab, m, switch, a, b):
    _ib(lab, m, "swap", switch, [a, b])
    return f"{switch} ports {a} and {b}: cables swapped"


def _swap_cables(m, switch, a, b):
    """Exchange the cables of two ports of one switch: both ends of each cable move."""
    pa, pb = _switch_port(m, switch, a), _switch_port(m, switch, b)
    pa["peer"], pb["peer"] = pb.get("peer"), pa.get("peer")
    for port, p in ((str(a), pa), (str(b), pb)):
        name, _, rport = (p.get("peer") or "").partition(":")
        if name in m.get("nodes", {}):
            nic = model.nic(m, rport, name)
            if nic is not None:
                nic["switch_port"] = port          # the data path follows the cable (rdma.py)
        elif name in m.get("switches", {}) and rport in m["switches"][name].get("ports", {}):
            m["switches"][name]["ports"][rport]["peer"] = f"{switch}:{port}"
    return pa, pb


def _cable_ports(m, switch, a, b):
    if m.get("transport") != "roce":
        raise FaultError(f"fault: cable-swap needs the RoCE lab (this one is {m.get('transport')}; "
                         "InfiniBand: ib-swap)")
    if str(a) == str(b):
        raise FaultError(f"fault: cable-swap needs two different ports (got {a} twice)")


@fault("cable-swap", "cable-swap SWITCH PORT_A PORT_B  RoCE: two cables of a switch on each other's ports")
def cable_swap(lab, m, switch, a, b):
    _cable_ports(m, switch, a, b)
    if any(f["kind"] == "cable-swap" and f["args"][0] == switch and {str(a), str(b)} & set(f["args"][1:])
           for f in m.get("faults", [])):
        raise FaultError(f"fault: {switch} {a}/{b}: a cable-swap there is in force (undo: cable-swap-restore)")
    pa, pb = _swap_cables(m, switch, a, b)
    _record(m, "cable-swap", [switch, str(a), str(b)])
    return f"{switch} ports {a} and {b}: cables swapped ({a} -> {pa.get('peer')}, {b} -> {pb.get('peer')})"


@fault("cable-swap-restore", "cable-swap-restore SWITCH PORT_A PORT_B  undo cable-swap")
def cable_swap_restore(lab, m, switch, a, b):
    _cable_ports(m, switch, a, b)
    recorded = [f for f in m.get("faults", []) if f["kind"] == "cable-swap" and f["args"][0] == switch
                and set(f["args"][1:]) == {str(a), str(b)}]
    if not recorded:
        raise FaultError(f"fault: no cable-swap of {switch} {a} {b} is in force")
    pa, pb = _swap_cables(m, switch, a, b)
    m["faults"] = [f for f in m["faults"] if f not in recorded]
    return f"{switch} ports {a} and {b}: cables back ({a} -> {pa.get('peer')}, {b} -> {pb.get('peer')})"


# ---------------------------------------------------------------- one direction, a share of tests, an uplink

RX_DEGRADE_GBPS = 150


@fault("rx-degrade", "rx-degrade NODE DEVICE   bad only when receiving: what the port takes in is limited "
       f"to {RX_DEGRADE_GBPS} Gb/s (a dirty strand towards it), sending stays at line rate")
def rx_degrade(lab, m, node, device):
    nic = _nic(m, node, device)
    nic["rx_limit_gbps"] = RX_DEGRADE_GBPS
    _track(m, "rx-degrade", [node, device])
    return f"{node} {device}: receives at most {RX_DEGRADE_GBPS} Gb/s (as ib_write_bw server), sends at line rate"


@fault("rx-restore", "rx-restore NODE DEVICE   undo rx-degrade")
def rx_restore(lab, m, node, device):
    nic = _nic(m, node, device)
    nic.pop("rx_limit_gbps", None)
    _untrack(m, "rx-degrade", [node, device])
    return f"{node} {device}: receives at line rate"


FLAKY_SHARE = 0.5


@fault("flaky", f"flaky NODE DEVICE        fails {FLAKY_SHARE:.0%} of its tests, either way (each test's draw "
       "fixed by its ends and TCP port: a rerun fails the same tests)")
def flaky(lab, m, node, device):
    nic = _nic(m, node, device)
    nic["flaky"] = FLAKY_SHARE
    _track(m, "flaky", [node, device])
    return f"{node} {device}: fails about {FLAKY_SHARE:.0%} of its tests"


@fault("flaky-stop", "flaky-stop NODE DEVICE   undo flaky")
def flaky_stop(lab, m, node, device):
    nic = _nic(m, node, device)
    nic.pop("flaky", None)
    _untrack(m, "flaky", [node, device])
    return f"{node} {device}: every test runs at line rate again"


def _uplink(m, leaf, port):
    ups = (m.get("switches", {}).get(leaf) or {}).get("uplinks") or []
    if not ups:
        raise FaultError(f"fault: {leaf!r} is not a lab switch with uplinks (allowed: "
                         f"{', '.join(sorted(n for n, x in m.get('switches', {}).items() if x.get('uplinks')))})")
    for u in ups:
        if str(u["port"]) == str(port):
            return u
    raise FaultError(f"fault: {leaf} has no uplink {port!r} (allowed: {', '.join(str(u['port']) for u in ups)})")


@fault("uplink-degrade", "uplink-degrade LEAF PORT  one leaf-spine uplink degraded: flows ECMP hashes onto it "
       "(cross-leaf only) keep a fraction of line rate")
def uplink_degrade(lab, m, leaf, port):
    _uplink(m, leaf, port)["degraded"] = True
    _track(m, "uplink-degrade", [leaf, str(port)])
    return f"{leaf} {port}: degraded (cross-leaf flows hashed onto it lose bandwidth)"


@fault("uplink-restore", "uplink-restore LEAF PORT  undo uplink-degrade")
def uplink_restore(lab, m, leaf, port):
    _uplink(m, leaf, port).pop("degraded", None)
    _untrack(m, "uplink-degrade", [leaf, str(port)])
    return f"{leaf} {port}: uplink healthy"


def _cabled_port(m, nic):
    """The switch port at the other end of a NIC's cable, or None."""
    return ((m.get("switches", {}).get(nic.get("switch")) or {}).get("ports") or {}).get(str(nic.get("switch_port")))


def _fold_switch_side(m, nic, kind):
    """A physical fault counts at both ends of the cable: the switch simulators add what it
    accrues live to the switch port's error counters (switchsim/sim_counters.py); when it
    ends, that count stays in the port's ``counters`` (hardware counters never go back)."""
    port = _cabled_port(m, nic)
    if port is None:
        return
    live = linkphys.accrued(nic, kinds=(kind,))
    c = port.setdefault("counters", {})
    if kind == "crc":
        c["rx_errors"] = int(c.get("rx_errors") or 0) + live.get("rx_crc_errors_phy", 0)
    elif kind == "flap":
        c["link_down"] = int(c.get("link_down") or 0) + live.get("link_down_events_phy", 0)


def _switch(m, switch):
    sw = m.get("switches", {}).get(switch)
    if sw is None:
        raise FaultError(f"fault: {switch!r} is not a lab switch (allowed: {', '.join(sorted(m.get('switches', {})))})")
    return sw


def _switch_port(m, switch, port):
    sw = _switch(m, switch)
    p = sw["ports"].get(str(port))
    if p is None:
        raise FaultError(f"fault: {switch} has no port {port!r} (allowed: {', '.join(sorted(sw['ports']))})")
    return p


def apply(kind, args, lab):
    if kind in ("list", "help"):
        return "faults:\n  " + "\n  ".join(fn.usage for fn in FAULTS.values())
    fn = FAULTS.get(kind)
    if fn is None:
        raise FaultError(f"fault: {kind!r} is not allowed (allowed: {', '.join(sorted(FAULTS))})")
    nargs = fn.__code__.co_argcount - 2
    if len(args) != nargs:
        raise FaultError(f"fault: usage: {fn.usage}")
    _AFTER.clear()
    with model.locked() as m:
        if args and args[0] not in m["nodes"] and not kind.startswith(("switch-", "ib-", "cable-", "pfc-watchdog", "uplink-")):
            raise FaultError(f"fault: {args[0]!r} is not a lab node (allowed: {', '.join(sorted(m['nodes']))})")
        msg = fn(lab, m, *args)
    # what runs the node's own (simulated) tools, which lock the model themselves
    for step in list(_AFTER):
        msg = step() or msg
    _AFTER.clear()
    return msg


def _storm_prio(nic):
    """The priority a storming NIC pauses: the one its PFC is on (the no-drop priority), else 3."""
    pfc = list((nic.get("qos") or {}).get("pfc") or [])
    return next((p for p, on in enumerate(pfc) if on), 3)


@fault("pfc-storm", "pfc-storm NODE DEVICE    the NIC keeps sending PFC pause frames on its no-drop priority "
       "(tx_prioN_pause climbs; the switch port receives them; its PFC watchdog, where on, drops the queue)")
def pfc_storm(lab, m, node, device):
    nic = _nic(m, node, device)
    prio = _storm_prio(nic)
    linkphys.start(nic, "pfc_storm", prio=prio, rate=linkphys.PFC_STORM_FRAMES_PER_S)
    _track(m, "pfc-storm", [node, device])
    return (f"{node} {device}: {linkphys.PFC_STORM_FRAMES_PER_S} pause frames per second on priority {prio} "
            f"towards {nic.get('switch')} {nic.get('switch_port')} until pfc-storm-stop")


@fault("pfc-storm-stop", "pfc-storm-stop NODE DEVICE  undo pfc-storm (the counters keep what they counted)")
def pfc_storm_stop(lab, m, node, device):
    nic = _nic(m, node, device)
    storm = (nic.get("phy_faults") or {}).get("pfc_storm")
    if storm:
        _fold_storm_switch_side(m, nic, storm)
    linkphys.stop(nic, "pfc_storm")
    _untrack(m, "pfc-storm", [node, device])
    return f"{node} {device}: no more pause frames"


def _fold_storm_switch_side(m, nic, storm):
    """What the storm counted at the switch end stays in the port's counters: the pause frames it
    received, and (where the port's watchdog guarded the priority) one storm detected and restored
    with what the watchdog dropped meanwhile (switchsim/sim_counters.py reads the live part)."""
    port = _cabled_port(m, nic)
    if port is None:
        return
    prio = str(int(storm.get("prio", 3)))
    live = linkphys.accrued(nic, kinds=("pfc_storm",))
    c = port.setdefault("counters", {})
    rx = c.setdefault("pfc_rx", {})   # sim_counters.ALIASES: pfc_rx is rx_pause per priority
    rx[prio] = int(rx.get(prio, 0)) + live.get(f"tx_prio{prio}_pause", 0)
    if int(prio) in (port.get("pfcwd") or []):
        wd = c.setdefault("pfcwd", {}).setdefault(prio, {})
        wd["detected"] = int(wd.get("detected") or 0) + 1
        wd["restored"] = int(wd.get("restored") or 0) + 1
        wd["tx_drop"] = int(wd.get("tx_drop") or 0) + live.get(f"tx_prio{prio}_pause", 0) // 10


# ---------------------------------------------------------------- disruptive host actions (issue 25)

@fault("reset-lost", "reset-lost NODE DEVICE   the NIC does not come back from its next firmware reset "
       "(mlxfwreset): no RDMA device until reset-lost-restore")
def reset_lost(lab, m, node, device):
    nic = _nic(m, node, device)
    nic["reset_lost"] = True
    _track(m, "reset-lost", [node, device])
    return f"{node} {device}: the next mlxfwreset of {nic['pci']} loses the device"


@fault("reset-lost-restore", "reset-lost-restore NODE DEVICE  undo reset-lost (the device is back, as after a power cycle)")
def reset_lost_restore(lab, m, node, device):
    nic = _nic(m, node, device)
    nic.pop("reset_lost", None)
    nic.pop("lost", None)
    _untrack(m, "reset-lost", [node, device])
    return f"{node} {device}: the device is back"


# The uverbs view the in-use check reads (plugins/module_utils/host/mgmtpath.py:
# /proc/<pid>/fd links to /dev/infiniband/uverbsN; <sysfs>/class/infiniband_verbs/uverbsN/ibdev;
# <sysfs>/class/infiniband/<dev>/device -> its PCI function). The container's
# /sys is read-only and the kernel has no RDMA, so the lab keeps that tree
# under LAB_SYSFS (inventory: host_disruption_sysfs). node-init.sh makes
# /dev/infiniband/uverbsN the driver's character devices (231:192+N), which
# nothing can open in a container with no driver behind them: while a holder
# runs, its device's file is a plain file it holds open (what /proc/<pid>/fd
# shows is the path), and rdma-idle puts the character device back. The holder
# is a process named as a benchmark (a copy of sleep, so its comm is ib_write_bw).
LAB_SYSFS = "/run/linerate-lab/sys"
BUSY_COMM = "ib_write_bw"


def _uverbs(m, node, device):
    """uverbsN of a device: its rank among the node's devices (the driver numbers them in probe order)."""
    return sorted(int(n["device"].rsplit("_", 1)[1]) for n in m["nodes"][node]["nics"]).index(
        int(device.rsplit("_", 1)[1]))


def _pidfile(device):
    return f"/run/linerate-lab/rdma-busy-{device}.pid"


@fault("rdma-busy", "rdma-busy NODE DEVICE    a process (ib_write_bw) holds the device's /dev/infiniband/uverbsN open "
       "(the in-use check before a firmware reset or driver restart refuses)")
def rdma_busy(lab, m, node, device):
    _nic(m, node, device)
    script = ["set -e", f"mkdir -p {LAB_SYSFS}/class/infiniband_verbs {LAB_SYSFS}/class/infiniband "
              f"{LAB_SYSFS}/devices /dev/infiniband"]
    for nic in m["nodes"][node]["nics"]:
        n = _uverbs(m, node, nic["device"])
        script += [f"mkdir -p {LAB_SYSFS}/class/infiniband_verbs/uverbs{n} {LAB_SYSFS}/devices/{nic['pci']} "
                   f"{LAB_SYSFS}/class/infiniband/{nic['device']}",
                   f"echo {nic['device']} > {LAB_SYSFS}/class/infiniband_verbs/uverbs{n}/ibdev",
                   f"ln -sfn ../../../devices/{nic['pci']} {LAB_SYSFS}/class/infiniband/{nic['device']}/device",
                   f"touch /dev/infiniband/uverbs{n}"]
    n = _uverbs(m, node, device)
    holder = f"/run/linerate-lab/{BUSY_COMM}"
    script += [f"if test -s {_pidfile(device)} && kill -0 \"$(cat {_pidfile(device)})\" 2>/dev/null; then exit 0; fi",
               # the driver's character device cannot be opened here: a plain file in its place while held
               f"if test -c /dev/infiniband/uverbs{n}; then rm -f /dev/infiniband/uverbs{n}; "
               f": > /dev/infiniband/uverbs{n}; fi",
               f"test -x {holder} || cp /bin/sleep {holder}",
               f"setsid sh -c 'exec {holder} infinity 3</dev/infiniband/uverbs{n}' </dev/null >/dev/null 2>&1 &",
               f"echo $! > {_pidfile(device)}"]
    _exec(lab, node, "sh", "-c", "\n".join(script))
    _track(m, "rdma-busy", [node, device])
    return f"{node} {device}: {BUSY_COMM} holds /dev/infiniband/uverbs{n} open until rdma-idle"


@fault("rdma-idle", "rdma-idle NODE DEVICE    undo rdma-busy (the holder exits)")
def rdma_idle(lab, m, node, device):
    _nic(m, node, device)
    n = _uverbs(m, node, device)
    uverbs = f"/dev/infiniband/uverbs{n}"
    _exec(lab, node, "sh", "-c", f"if test -s {_pidfile(device)}; then kill \"$(cat {_pidfile(device)})\" "
          f"2>/dev/null || true; rm -f {_pidfile(device)}; fi; "
          # the driver's character device back where rdma-busy left a plain file (node-init.sh makes it)
          f"if test -f {uverbs}; then rm -f {uverbs} && mknod -m 0666 {uverbs} c 231 {192 + n}; fi")
    _untrack(m, "rdma-busy", [node, device])
    return f"{node} {device}: no process holds it"


# ---------------------------------------------------------------- an interrupted driver restart (issue 25)

@fault("driver-restart-pending", "driver-restart-pending NODE  the OFED packages are installed but the driver loaded is "
       "the kernel's inbox build the node booted with (an install whose driver restart never ran)")
def driver_restart_pending(lab, m, node):
    # modinfo reads the node's module files, not the model: it may run while the model is locked
    installed = _exec(lab, node, "modinfo", "-F", "version", "mlx5_core").strip()
    if not installed:
        raise FaultError(f"fault: {node} has no OFED driver installed (modinfo -F version mlx5_core prints no "
                         "version); converge it first (site.yml)")
    n = m["nodes"][node]
    # As booted before the install: udev's autoload of the inbox mlx5 stack (no rdma.conf yet,
    # so no ib_uverbs / rdma_cm), OFED's own modules (mlx_compat, mlxdevm) absent.
    inbox = [x for x in kmods.BOOT_AUTOLOAD if x in kmods.INBOX]
    n["modules"] = inbox + [x for x in n.get("modules", []) if x not in kmods.OFED_MODULES and x not in inbox]
    versions = n.setdefault("module_versions", {})
    for name in kmods.OFED_MODULES + inbox:
        versions.pop(name, None)
    _exec(lab, node, "sh", "-c", kmods.sysfs_script(n, kmods.LAB_SYSFS))
    _track(m, "driver-restart-pending", [node])
    return (f"{node}: OFED {installed} is installed, the running mlx5 driver is the kernel's inbox build "
            f"(no /sys/module/mlx5_core/version; rdma_cm, ib_uverbs not loaded) until driver-restart-done")


@fault("driver-restart-done", "driver-restart-done NODE  undo driver-restart-pending: /etc/init.d/openibd restart "
       "on the node (nvidia_peermem, which holds ib_core, unloaded before and loaded again after)")
def driver_restart_done(lab, m, node):
    peermem = "nvidia_peermem" in m["nodes"][node].get("modules", [])
    _untrack(m, "driver-restart-pending", [node])
    script = ["set -e"]
    if peermem:
        script.append("modprobe -r nvidia_peermem")
    script.append("/etc/init.d/openibd restart")
    if peermem:
        script.append("modprobe nvidia_peermem")
    _AFTER.append(lambda: _exec(lab, node, "sh", "-c", "\n".join(script)) and None)
    return f"{node}: driver restarted (/etc/init.d/openibd restart): the installed OFED driver is loaded"


# ---------------------------------------------------------------- a reboot, a rail missing at boot (issue 25)

@fault("netdev-missing", "netdev-missing NODE DEVICE  DEVICE's netdev goes away and does not come back, at boot "
       "either (a driver probe that failed, a rename udev never finished): the units bound to it stop")
def netdev_missing(lab, m, node, device):
    nic = _nic(m, node, device)
    nic["netdev_missing"] = True
    netdev = nic["netdev"]
    _track(m, "netdev-missing", [node, device])
    # deleting the node's end of the veth deletes the pair; labctl's ensure_nics leaves it out from now
    _AFTER.append(lambda: _exec(lab, node, "sh", "-c", f"if ip link show dev {netdev} >/dev/null 2>&1; "
                                f"then ip link del dev {netdev}; fi") and None)
    return f"{node} {device}: netdev {netdev} gone until netdev-appear"


@fault("netdev-appear", "netdev-appear NODE DEVICE  undo netdev-missing: the netdev appears (hotplug), and the "
       "units enabled into its device unit start")
def netdev_appear(lab, m, node, device):
    nic = _nic(m, node, device)
    nic.pop("netdev_missing", None)
    _untrack(m, "netdev-missing", [node, device])
    spec = copy.deepcopy(m["nodes"][node])
    _AFTER.append(lambda: lab.ensure_nics(node, spec) and None)
    return f"{node} {device}: netdev {nic['netdev']} appeared"


@fault("reboot", "reboot NODE  the node reboots: firmware loads its next-boot settings, the drivers start "
       "from scratch (QoS, ECN, RDMA-CM not persistent), the boot units run; a netdev-missing one stays absent")
def reboot(lab, m, node):
    spec = copy.deepcopy(m["nodes"][node])
    _AFTER.append(lambda: lab.reboot_node(node, spec) and None)
    missing = [n["netdev"] for n in spec["nics"] if n.get("netdev_missing")]
    return f"{node}: rebooted" + (f" without {', '.join(missing)}" if missing else "")


# ---------------------------------------------------------------- a switch port's optical module (issue 24)

@fault("switch-optic-degrade", "switch-optic-degrade SWITCH PORT  the switch port's optical module receives -14 dBm "
       "on every lane (below its low alarm) and runs at 78 C (above its high alarm): the switch's transceiver "
       "read shows both")
def switch_optic_degrade(lab, m, switch, port):
    p = _switch_port(m, switch, port)
    p["optics"] = {"rx_power_dbm": -14.0, "temperature_c": 78}
    _track(m, "switch-optic-degrade", [switch, str(port)])
    return f"{switch} {port}: optical module Rx power -14 dBm per lane, 78 C"


@fault("switch-optic-restore", "switch-optic-restore SWITCH PORT  undo switch-optic-degrade (a healthy module)")
def switch_optic_restore(lab, m, switch, port):
    p = _switch_port(m, switch, port)
    p.pop("optics", None)
    _untrack(m, "switch-optic-degrade", [switch, str(port)])
    return f"{switch} {port}: optical module healthy"


# ---------------------------------------------------------------- a switch port's bit error rate (FEC)

@fault("switch-ber-degrade", "switch-ber-degrade SWITCH PORT  what the switch port receives has a pre-FEC BER of "
       "1e-5 and FEC fails on 50 codewords a second from now (post-FEC BER above 0): the switch's FEC read shows "
       "both, its uncorrected codewords grow")
def switch_ber_degrade(lab, m, switch, port):
    p = _switch_port(m, switch, port)
    since = (p.get("ber") or {}).get("since") or time.time()   # again: the count goes on, never back
    p["ber"] = {"pre_fec_ber": 1e-5, "uncorrected_per_s": 50, "since": since}
    _track(m, "switch-ber-degrade", [switch, str(port)])
    return f"{switch} {port}: pre-FEC BER 1e-5, 50 uncorrected codewords a second"


@fault("switch-ber-restore", "switch-ber-restore SWITCH PORT  undo switch-ber-degrade (a healthy signal)")
def switch_ber_restore(lab, m, switch, port):
    p = _switch_port(m, switch, port)
    p.pop("ber", None)
    _untrack(m, "switch-ber-degrade", [switch, str(port)])
    return f"{switch} {port}: healthy signal"
