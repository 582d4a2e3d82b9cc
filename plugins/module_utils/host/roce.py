"""RoCE QoS of one port: trust, PFC, DSCP map, ECN, RDMA-CM defaults and MTU.

One algorithm (STYLE): read every managed setting, compute the desired one,
diff, run only the commands for what differs (never in check mode), read
again and fail if something did not take. Tools are called through
``run(argv) -> (rc, stdout, stderr)`` (argv[0] is the tool name); ECN knobs
are sysfs files of the mlx5 driver, read and written through ``Sysfs`` so
tests can replace it.

mlnx_qos output is read with ``parse_mlnx_qos`` (``mlnx_qos.py``); the
one-line answers of ``cma_roce_mode`` / ``cma_roce_tos`` and ``ip -j link``
JSON are read here (``read_*`` helpers, not ``parse_*`` parsers).
"""

import json
import os
import re
import shlex

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError, ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.intent import fabric
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.mlnx_qos import parse_mlnx_qos
from ansible_collections.linerate.fabric.plugins.module_utils.runner import read_tool

ROCE_MODES = {"v1": "IB/RoCE v1", "v2": "RoCE v2"}
ROCE_MODE_ARG = {"v1": "1", "v2": "2"}
ECN_POINTS = ("np", "rp")
# Which MTU changes a run makes (module option mtu_change): the switch MTU must
# be raised before the host MTU and lowered after it (docs/host-stack.md,
# "The MTU order"), so site.yml lowers in the host stage and raises after the
# switch stage.
MTU_CHANGES = ("any", "lower", "raise")
SYSFS_NET = "/sys/class/net"


class Sysfs:
    """The mlx5 ECN knobs under /sys/class/net/<netdev>/ecn (MLNX_OFED / DOCA-OFED)."""

    def __init__(self, root=None):
        self.root = root or SYSFS_NET

    def path(self, netdev, *parts):
        return os.path.join(self.root, netdev, "ecn", *parts)

    def read(self, path):
        try:
            with open(path, encoding="ascii") as f:
                return f.read().strip()
        except OSError as e:
            raise ToolFailure(
                f"cannot read {path} ({e.strerror}): the netdev has no RoCE ECN controls; they come with the mlx5 driver of MLNX_OFED / DOCA-OFED"
            ) from None

    def write(self, path, value):
        try:
            with open(path, "w", encoding="ascii") as f:
                f.write(f"{value}\n")
        except OSError as e:
            raise ToolFailure(f"cannot write {value} to {path} ({e.strerror})") from None


def read_roce_mode(text):
    """``cma_roce_mode`` prints the mode it holds: ``RoCE v2`` / ``IB/RoCE v1``."""
    last = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if last and last[-1] == "RoCE v2":
        return "v2"
    if last and last[-1] == "IB/RoCE v1":
        return "v1"
    raise ParseError("cma_roce_mode", last[-1] if last else "empty output", text)


def read_roce_tos(text):
    """``cma_roce_tos`` prints the ToS it holds, one number."""
    last = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if last and re.fullmatch(r"\d{1,3}", last[-1]):
        return int(last[-1])
    raise ParseError("cma_roce_tos", last[-1] if last else "empty output", text)


def read_mtu(text, netdev):
    try:
        links = json.loads(text)
        return int(links[0]["mtu"])
    except (ValueError, LookupError, TypeError):
        raise ParseError("ip", f"no MTU for {netdev} in 'ip -j link show' output", text) from None


class Port:
    """One RoCE port: its netdev and (for RDMA-CM) its RDMA device and port number."""

    def __init__(self, run, netdev, device=None, port=1, sysfs=None):
        self.run = run
        self.netdev = netdev
        self.device = device
        self.port = port
        self.sysfs = sysfs or Sysfs()
        self.commands = []

    def _call(self, argv, reader=None, change=False):
        if change:
            self.commands.append(argv)
        # the reader names the tool's own error where it can; a command without one only has to succeed
        return read_tool(self.run, argv, reader or (lambda _text: None), tail=True)

    # ------------------------------------------------------------------ read

    def read(self, want):
        have = {}
        if any(k in want for k in ("trust", "pfc", "dscp2prio")):
            qos = self._call(["mlnx_qos", "-i", self.netdev], parse_mlnx_qos)
            have["trust"] = qos["trust"]
            have["pfc"] = qos["pfc"]
            if "dscp2prio" in want:
                have["dscp2prio"] = {d: qos["dscp2prio"].get(d) for d in want["dscp2prio"]}
        if "ecn" in want:
            have["ecn"] = {
                point: {p: int(self.sysfs.read(self.sysfs.path(self.netdev, f"roce_{point}", "enable", str(p)))) for p in want["ecn"][point]}
                for point in want["ecn"]
            }
        if "cnp_dscp" in want:
            have["cnp_dscp"] = int(self.sysfs.read(self.sysfs.path(self.netdev, "roce_np", "cnp_dscp")))
        if "cnp_priority" in want:
            have["cnp_priority"] = int(self.sysfs.read(self.sysfs.path(self.netdev, "roce_np", "cnp_802p_prio")))
        if "roce_mode" in want:
            have["roce_mode"] = self._call(["cma_roce_mode", "-d", self.device, "-p", str(self.port)], read_roce_mode)
        if "roce_tos" in want:
            have["roce_tos"] = self._call(["cma_roce_tos", "-d", self.device, "-p", str(self.port)], read_roce_tos)
        if "mtu" in want:
            have["mtu"] = self._call(["ip", "-j", "link", "show", "dev", self.netdev], lambda t: read_mtu(t, self.netdev))
        return have

    # ------------------------------------------------------------------ plan

    def plan(self, want, have):
        """The changing steps, in order: [(kind, argv-or-(path, value))]."""
        steps = []
        qos = []
        if "trust" in want and have.get("trust") != want["trust"]:
            qos += ["--trust", want["trust"]]
        if "pfc" in want and have.get("pfc") != want["pfc"]:
            qos += ["--pfc", ",".join(str(v) for v in want["pfc"])]
        if qos:
            steps.append(("cmd", ["mlnx_qos", "-i", self.netdev, *qos]))
        for dscp, prio in sorted(want.get("dscp2prio", {}).items(), key=lambda kv: int(kv[0])):
            if have.get("dscp2prio", {}).get(dscp) != prio:
                steps.append(("cmd", ["mlnx_qos", "-i", self.netdev, "--dscp2prio", f"set,{dscp},{prio}"]))
        for point in sorted(want.get("ecn", {})):
            for prio, value in sorted(want["ecn"][point].items()):
                if have.get("ecn", {}).get(point, {}).get(prio) != value:
                    steps.append(("sysfs", (self.sysfs.path(self.netdev, f"roce_{point}", "enable", str(prio)), value)))
        if "cnp_dscp" in want and have.get("cnp_dscp") != want["cnp_dscp"]:
            steps.append(("sysfs", (self.sysfs.path(self.netdev, "roce_np", "cnp_dscp"), want["cnp_dscp"])))
        if "cnp_priority" in want and have.get("cnp_priority") != want["cnp_priority"]:
            steps.append(("sysfs", (self.sysfs.path(self.netdev, "roce_np", "cnp_802p_prio"), want["cnp_priority"])))
        if "roce_mode" in want and have.get("roce_mode") != want["roce_mode"]:
            steps.append(("cmd", ["cma_roce_mode", "-d", self.device, "-p", str(self.port), "-m", ROCE_MODE_ARG[want["roce_mode"]]]))
        if "roce_tos" in want and have.get("roce_tos") != want["roce_tos"]:
            steps.append(("cmd", ["cma_roce_tos", "-d", self.device, "-p", str(self.port), "-t", str(want["roce_tos"])]))
        if "mtu" in want and have.get("mtu") != want["mtu"]:
            steps.append(("cmd", ["ip", "link", "set", "dev", self.netdev, "mtu", str(want["mtu"])]))
        return steps

    def apply(self, want, steps):
        for i, (kind, what) in enumerate(steps):
            if kind == "cmd" and what[:3] == ["mlnx_qos", "-i", self.netdev] and "--dscp2prio" in what:
                if i and "--trust" in steps[0][1]:
                    # the trust mode just changed: the map mlnx_qos shows now decides
                    have = self.read({"dscp2prio": want["dscp2prio"]})
                    if have["dscp2prio"].get(what[-1].split(",")[1]) == int(what[-1].split(",")[2]):
                        continue
                self._call(what, change=True)
            elif kind == "cmd":
                self._call(what, change=True)
            else:
                path, value = what
                self.commands.append(["write", path, str(value)])
                self.sysfs.write(path, value)


def desired(params):
    """The ``want`` dict from module parameters; only what the caller set is managed."""
    want = {}
    if params.get("trust") is not None:
        want["trust"] = params["trust"]
    if params.get("pfc_priorities") is not None:
        want["pfc"] = fabric.pfc_vector(params["pfc_priorities"])
    if params.get("dscp2prio"):
        if want.get("trust", "dscp") != "dscp":
            raise ToolFailure("dscp2prio: only with trust: dscp (in pcp trust the DSCP map is not used)")
        want["dscp2prio"] = {}
        for dscp, prio in params["dscp2prio"].items():
            d, p = int(dscp), int(prio)
            if not (0 <= d <= 63 and 0 <= p <= 7):
                raise ToolFailure(f"dscp2prio: {dscp}: {prio} is not allowed (allowed: DSCP 0..63 to priority 0..7)")
            want["dscp2prio"][str(d)] = p
    if params.get("ecn_priorities") is not None:
        value = 1 if params.get("ecn_enabled", True) else 0
        want["ecn"] = {point: {int(p): value for p in params["ecn_priorities"]} for point in params.get("ecn_points") or ECN_POINTS}
    for key in ("cnp_dscp", "cnp_priority", "roce_tos", "mtu"):
        if params.get(key) is not None:
            want[key] = params[key]
    if params.get("roce_mode") is not None:
        want["roce_mode"] = params["roce_mode"]
    if ("roce_mode" in want or "roce_tos" in want) and not params.get("device"):
        raise ToolFailure("device: required with roce_mode or roce_tos (RDMA-CM defaults are per RDMA device)")
    return want


def defer_mtu(want, have, mtu_change):
    """(want, deferred): ``want`` without the MTU when ``mtu_change`` does not allow this direction
    (``lower``: a raise waits; ``raise``: a lowering waits), and {from, to} of the change left out."""
    if mtu_change not in MTU_CHANGES:
        raise ToolFailure(f"mtu_change: {mtu_change!r} is not allowed (allowed: {' | '.join(MTU_CHANGES)})")
    if "mtu" not in want or mtu_change == "any" or have.get("mtu") in (None, want["mtu"]):
        return want, None
    up = want["mtu"] > have["mtu"]
    if up == (mtu_change == "raise"):
        return want, None
    return {k: v for k, v in want.items() if k != "mtu"}, {"from": have["mtu"], "to": want["mtu"]}


def boot_plan(params, netdev, device=None, port=1, sysfs_net=SYSFS_NET):
    """Every step that sets this port from its defaults, in the module's order: what the per-rail
    boot unit (linerate-roce-qos@<netdev>.service, role roce_qos) runs after a reboot or a driver
    restart. [argv] per command; ``[write, path, value]`` per ECN sysfs knob. The MTU is always
    set (at boot the switches are already configured). Reads nothing."""
    want = desired(dict(params, device=device))
    steps = Port(None, netdev, device, port, Sysfs(sysfs_net)).plan(want, {})
    return [what if kind == "cmd" else ["write", what[0], str(what[1])] for kind, what in steps]


def boot_lines(boot):
    """The boot plan as the per-rail files hold it, rendered once, here: ``commands`` - each command
    step as one ``sh`` line, every argument shell-quoted (the rail's boot script, in order) - and
    ``tmpfiles`` - each sysfs write as a tmpfiles.d ``w`` line (``w <path> - - - - <value>``, the
    rail's ECN file, applied by ``systemd-tmpfiles --create``). Role roce_qos writes both as they are."""
    return {
        "commands": [" ".join(shlex.quote(str(a)) for a in argv) for argv in boot if argv[0] != "write"],
        "tmpfiles": [f"w {argv[1]} - - - - {argv[2]}" for argv in boot if argv[0] == "write"],
    }


def boot_result(params, netdev, device=None, port=1, sysfs_net=SYSFS_NET):
    """The module's boot fields of one port: ``boot`` (``boot_plan``) and its rendered lines
    ``boot_commands`` / ``boot_tmpfiles`` (``boot_lines``)."""
    boot = boot_plan(params, netdev, device, port, sysfs_net)
    lines = boot_lines(boot)
    return {"boot": boot, "boot_commands": lines["commands"], "boot_tmpfiles": lines["tmpfiles"]}


def _expected_after(want, have):
    after = json.loads(json.dumps(have))
    for key, value in want.items():
        if key in ("dscp2prio", "ecn"):
            continue
        after[key] = value
    if "dscp2prio" in want:
        after["dscp2prio"] = dict(want["dscp2prio"])
    if "ecn" in want:
        after["ecn"] = {pt: dict(v) for pt, v in want["ecn"].items()}
    return after


def _lines(state):
    out = []
    for key in sorted(state):
        value = state[key]
        if isinstance(value, dict):
            for sub in sorted(value, key=str):
                out.append(f"{key}.{sub} = {json.dumps(value[sub])}\n")
        else:
            out.append(f"{key} = {json.dumps(value)}\n")
    return "".join(out)


def configure(port, params, check_mode):
    full = desired(params)
    have = port.read(full)
    want, deferred = defer_mtu(full, have, params.get("mtu_change") or "any")
    steps = port.plan(want, have)
    before = have
    if steps and not check_mode:
        port.apply(want, steps)
        after = port.read(full)
        left = port.plan(want, after)
        if left:
            raise ToolFailure(
                f"{port.netdev}: settings did not take after applying them; still needed: "
                + "; ".join(" ".join(w) if k == "cmd" else f"{w[0]}={w[1]}" for k, w in left),
                before=before,
                after=after,
                commands=port.commands,
            )
    else:
        after = _expected_after(want, have) if steps else have
        if check_mode:
            for kind, what in steps:
                port.commands.append(what if kind == "cmd" else ["write", what[0], str(what[1])])
    return {
        "changed": bool(steps),
        "netdev": port.netdev,
        "device": port.device,
        "before": before,
        "after": after,
        "commands": port.commands,
        "mtu_deferred": deferred,
        **boot_result(params, port.netdev, port.device, port.port, port.sysfs.root),
        "diff": {"before": _lines(before), "after": _lines(after), "before_header": port.netdev, "after_header": port.netdev},
    }
