"""NVIDIA Cumulus Linux (NVUE) simulator: a bash-like shell with the `nv` CLI.

Grammar: nv set|unset <path> [value] into the pending revision; nv config
diff|apply [rev] [--confirm [time]] [--confirm-yes] [--confirm-no] [--confirm-status]
[-y|--y|--assume-yes|--assume-no]|detach|revision|show -o commands;
nv show interface [<swp> qos roce status|qos roce counters|counters (5.5+)|link stats|qos buffer
ingress-priority-group|qos pfc-watchdog] [-o json], nv show platform transceiver <swp>
(5.11+), nv show interface <swp> link phy-detail (5.10 - 5.14) | link phy health (5.15+), only the forms the
configured release's reference lists (``show_forms``). Revisions and the confirm timer
behave as on a switch: an unconfirmed apply rolls back when the timer fires.

``nv config apply`` follows the NVUE command reference (Config Commands,
Cumulus Linux 5.x): a bare ``--confirm`` number is minutes (``--confirm 60``
is one hour), ``--confirm`` alone is ten minutes, and there is no
``nv config confirm`` verb: the wait ends with ``nv config apply
--confirm-yes`` (keep) or ``--confirm-no`` (roll back now): the options NVIDIA's
own NVUE test suite gives ``nv config apply`` beside ``--confirm-status``
(sonic-mgmt ``ngts/nvos_constants/constants_nvos.py`` ConfigConsts; the napalm
Cumulus driver sends ``--confirm-yes`` too). A number with a
unit suffix (``300s``, the napalm driver's timer form) is accepted with that
unit; docs/conformance.md marks that form unsettled.
"""
import copy
import datetime
import json
import os
import re
import shlex
import time

import sim_ber
import sim_counters
import sim_optics
from simcore import Exit, Platform, kb, natural_key

NAME = r"[A-Za-z0-9_.-]+"
REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nvue_reference.json")

# The simulator's own factory config (not linerate's paths): set by factory(), kept settable.
FACTORY_GRAMMAR = [
    (r"system hostname", {"regex": r"[A-Za-z0-9-]+", "what": "a hostname"}),
    (r"interface (eth0|swp\d+) type", {"enum": ["swp", "eth"]}),
    (r"interface (eth0|swp\d+) description", {"regex": r".+", "what": "text"}),
    (r"interface eth0 ip vrf", {"regex": NAME, "what": "a vrf name"}),
    (r"interface eth0 ip address", {"regex": r"dhcp|[\d.]+/\d+", "what": "dhcp or an IPv4 prefix"}),
]
_PLACEHOLDERS = {
    "<profile-id>": NAME,
    "<interface-id>": r"(eth0|swp\d+(s\d+)?)",
    "<qos-tc-id:0-7>": r"[0-7]",
    "<qos-pcp-id:0-7>": r"[0-7]",
    "<qos-dscp-id:0-63>": r"([0-9]|[1-5][0-9]|6[0-3])",
}


def _release(v):
    return tuple(int(x) for x in str(v).split(".")[:2])


def load_reference(path=REFERENCE):
    with open(path) as fh:
        return json.load(fh)


def grammar(release=None, ref=None):
    """[(path regex, value spec)] for one Cumulus release, from lab/switchsim/nvue_reference.json:
    the paths of that release only (``since`` <= release <= ``until``), then the factory paths."""
    ref = ref or load_reference()
    release = release or ref["default_release"]
    if release not in ref["releases"]:
        raise ValueError(f"nvue release {release!r}: not one of {', '.join(ref['releases'])}")
    rel = _release(release)
    out = []
    for e in ref["paths"]:
        if _release(e["since"]) > rel or ("until" in e and _release(e["until"]) < rel):
            continue
        pat = " ".join(_PLACEHOLDERS.get(t, re.escape(t)) for t in e["path"].split(" "))
        spec = ref["value_types"][e["value"]] if isinstance(e["value"], str) else e["value"]
        out.append((pat, spec))
    return out + FACTORY_GRAMMAR


def show_forms(release=None, ref=None):
    """[(command regex, output kinds)] of the ``nv show`` forms one Cumulus release has, from
    lab/switchsim/nvue_reference.json ``shows`` (``since`` <= release <= ``until``). Output kinds:
    ``text`` always; ``json`` where the entry lists it (the simulator's JSON renderings)."""
    ref = ref or load_reference()
    release = release or ref["default_release"]
    rel = _release(release)
    out = []
    for e in ref["shows"]:
        if _release(e["since"]) > rel or ("until" in e and _release(e["until"]) < rel):
            continue
        pat = " ".join(_PLACEHOLDERS.get(t, re.escape(t)) for t in e["command"].split(" "))
        out.append((pat, tuple(e.get("output", ["text"]))))
    return out


def check_value(spec, value, leaf):
    """None when ``value`` fits the reference's type for ``leaf``, else the error line."""
    if "enum" in spec:
        if value not in spec["enum"]:
            return f"Error: '{value}' is not one of {spec['enum']} (at '{leaf}')"
    elif "int" in spec:
        lo, hi = spec["int"]
        if not value.isdigit():
            return f"Error: '{value}' is not a valid integer"
        if int(value) > hi:
            return f"Error: Invalid config: {value} is greater than the maximum of {hi}"
        if int(value) < lo:
            return f"Error: Invalid config: {value} is less than the minimum of {lo}"
    elif not re.fullmatch(spec["regex"], value):
        return f"Error: '{value}' is not a valid value for '{leaf}' ({spec.get('what', spec['regex'])})"
    return None


def q(v):
    return v if re.fullmatch(r"[\w.,:/@+-]+", v) else shlex.quote(v)


class Nvue(Platform):
    platform = "nvue"

    def factory(self):
        cfg = {"system hostname": self.name, "interface eth0 ip vrf": "mgmt",
               "interface eth0 ip address": "dhcp"}
        for p in self.ports:
            cfg[f"interface {p} type"] = "swp"
            peer = self.spec["ports"][p].get("peer")
            if peer:
                cfg[f"interface {p} description"] = peer
        self.applied = cfg
        self.pending = None
        self.revisions = [{"id": 1, "config": copy.deepcopy(cfg), "state": "applied_and_saved",
                           "date": _now(), "user": "root", "message": "Initial config"}]
        self.confirm = None           # {"prev": cfg, "deadline": ts}
        self._timer = None

    def release(self):
        """The Cumulus Linux release this switch runs (topology ``nvue_release``; the reference's default)."""
        return str(self.spec.get("nvue_release") or load_reference()["default_release"])

    def grammar(self):
        if getattr(self, "_grammar", None) is None or self._grammar[0] != self.release():
            self._grammar = (self.release(), grammar(self.release()))
        return self._grammar[1]

    def to_json(self):
        return {"applied": self.applied, "pending": self.pending, "revisions": self.revisions,
                "confirm": self.confirm}

    def from_json(self, d):
        self.applied, self.pending, self.revisions = d["applied"], d["pending"], d["revisions"]
        self.confirm, self._timer = d.get("confirm"), None
        if self.confirm:   # the simulator restarted while an apply awaited confirmation: it timed out
            self._confirm_expired()

    # ------------------------------------------------------------ CLI
    def prompt(self, ctx):
        return f"{ctx['user']}@{self.name}:mgmt:~$ "

    def banner(self, ctx):
        return ("\nWelcome to NVIDIA Cumulus (R) Linux (R)\n\n"
                "For support and online technical documentation, visit\nhttps://www.nvidia.com/en-us/support\n\n")

    def execute(self, ctx, line):
        if ctx.get("ask"):
            fn = ctx["ask"]
            ctx["ask"] = None
            return fn(line.strip())
        line = line.strip()
        if not line:
            return ""
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            return f"-bash: syntax error: {exc}"
        if argv[0] in ("exit", "logout"):
            raise Exit()
        if argv[0] == "sudo":
            argv = argv[1:] or ["true"]
        if argv[0] in ("true", ":"):
            return ""
        if argv[0] == "hostname":
            return self.applied.get("system hostname", self.name)
        if argv[0] in self.SHELL_COMMANDS:   # the Linux shell subset (simcore): the change window's lock
            return self.shell(line)[0]
        if argv[0] != "nv":
            return f"-bash: {argv[0]}: command not found"
        if self.check_reject(line):
            return f"Error: Internal error while processing '{line}': try again later"
        if len(argv) < 2:
            return "Usage:\n  nv [options] <command> [<args> ...]\n\nError: Missing command"
        cmd = argv[1]
        if cmd == "set":
            return self.nv_set(argv[2:])
        if cmd == "unset":
            return self.nv_unset(argv[2:])
        if cmd == "config":
            return self.nv_config(ctx, argv[2:])
        if cmd == "show":
            return self.nv_show(argv[2:])
        return f"Error: Invalid command: nv {cmd}"

    def nv_set(self, args):
        if len(args) < 2:
            return f"Error: Incomplete command: nv set {' '.join(args)}"
        path, value = " ".join(args[:-1]), args[-1]
        for pat, spec in self.grammar():
            if re.fullmatch(pat, path):
                if path.startswith("interface ") and not path.startswith("interface eth0"):
                    port = args[1]
                    if port not in self.ports:
                        return f"Error: Invalid interface: '{port}' does not exist on this switch"
                err = check_value(spec, value, path.split()[-1])
                if err:
                    return err
                if self.pending is None:
                    self.pending = copy.deepcopy(self.applied)
                self.pending[path] = value
                self.store.save(self)
                return ""
        return f"Error: Invalid command: nv set {' '.join(args)}"

    def nv_unset(self, args):
        if not args:
            return "Error: Incomplete command: nv unset"
        path = " ".join(args)
        base = self.pending if self.pending is not None else self.applied
        if not any(re.fullmatch(pat, path) for pat, _ in self.grammar()) \
                and not any(k.startswith(path + " ") for k in base):
            return f"Error: Invalid command: nv unset {path}"
        if self.pending is None:
            self.pending = copy.deepcopy(self.applied)
        for k in [k for k in self.pending if k == path or k.startswith(path + " ")]:
            del self.pending[k]
        self.store.save(self)
        return ""

    def nv_config(self, ctx, args):
        if not args:
            return "Error: Incomplete command: nv config"
        sub, rest = args[0], args[1:]
        if sub == "show":
            if rest[:2] in (["-o", "commands"], ["--output", "commands"]):
                return render_commands(self.applied)
            return render_yaml(self.applied)
        if sub == "diff":
            if self.pending is None:
                return ""
            return render_diff(self.applied, self.pending)
        if sub == "detach":
            self.pending = None
            self.store.save(self)
            return ""
        if sub == "revision":
            return self.render_revisions()
        if sub == "apply":
            return self.nv_apply(ctx, rest)
        return f"Error: Invalid command: nv config {sub}"

    def nv_apply(self, ctx, rest):
        yes = any(a in ("-y", "--y", "--assume-yes") for a in rest)
        no = "--assume-no" in rest
        confirm = None
        rev = None
        keep = status = reject = False
        i = 0
        while i < len(rest):
            a = rest[i]
            if a == "--confirm":
                if i + 1 < len(rest) and re.fullmatch(r"\d+[smh]?", rest[i + 1]):
                    confirm = _seconds(rest[i + 1])
                    i += 1
                else:
                    confirm = 600   # the reference: "If you do not confirm within ten minutes"
                if confirm <= 0:
                    return f"Error: Invalid value for --confirm: {rest[i]}"
            elif a == "--confirm-yes":
                keep = True
            elif a == "--confirm-no":   # NVIDIA's NVUE tests (ngts ConfigConsts): reject now, roll back
                reject = True
            elif a == "--confirm-status":
                status = True
            elif re.fullmatch(r"\d+|applied|startup|empty", a) and rev is None:
                rev = a
            elif a not in ("-y", "--y", "--assume-yes", "--assume-no"):
                return f"Error: Invalid option: {a}"
            i += 1
        if keep or status or reject:
            if confirm is not None or keep + status + reject > 1:
                return "Error: --confirm, --confirm-yes, --confirm-no and --confirm-status are exclusive"
            if reject:
                return self._confirm_reject()
            return self._confirm_status() if status else self._confirm_keep(rev)
        if rev is not None and not rev.isdigit():
            return f"Error: Revision {rev} cannot be applied in this simulator"
        rev = int(rev) if rev is not None else None
        if rev is not None:
            target = next((r for r in self.revisions if r["id"] == rev), None)
            if target is None:
                return f"Error: Revision {rev} does not exist"
            new = copy.deepcopy(target["config"])
        else:
            if self.pending is None or self.pending == self.applied:
                self.pending = None
                return "Warning: The pending config does not have any changes. Nothing to apply."
            err = validate(self.pending)
            if err:
                return f"Error: Invalid config [rev_id: {self.revisions[-1]['id'] + 1}]\n  {err}"
            new = copy.deepcopy(self.pending)

        def do_apply():
            prev = self.applied
            self._cancel_timer()
            if self.confirm:   # a new apply ends the confirm wait: back to before it, or kept
                superseded = "rolled_back" if new == self.confirm["prev"] else "applied"
                for r in self.revisions:
                    if r["id"] == self.confirm["rev"]:
                        r["state"] = superseded
            self.confirm = None
            rid = self.revisions[-1]["id"] + 1
            self.applied = new
            if rev is None:
                self.pending = None
            self.revisions.append({"id": rid, "config": copy.deepcopy(new),
                                   "state": "confirm_pending" if confirm else "applied_and_saved",
                                   "date": _now(), "user": ctx["user"],
                                   "message": f"Config update by {ctx['user']}"})
            if confirm:
                self.confirm = {"rev": rid, "prev": prev, "deadline": time.time() + confirm}
                if self.loop:
                    self._timer = self.loop.call_later(confirm, self._confirm_expired)
            self.changed()
            return f"applied [rev_id: {rid}]"

        if yes:
            return do_apply()
        if no:
            return "Aborted."

        def answer(a):
            if a.lower() in ("y", "yes"):
                return do_apply()
            return "Aborted."
        ctx["ask"] = answer
        return ("Warning: The following files will be applied:\n  /etc/nvue.d/startup.yaml\n"
                "Are you sure? [y/N] ", "noeol")

    def _confirm_keep(self, rev):
        """``nv config apply [<rev>] --confirm-yes``: keep the applied revision that awaits confirmation."""
        if not self.confirm:
            return "Error: There is no pending apply waiting for confirmation"
        if rev is not None and str(rev) != str(self.confirm["rev"]):
            return f"Error: Revision {rev} is not the revision awaiting confirmation ({self.confirm['rev']})"
        self._cancel_timer()
        rid = self.confirm["rev"]
        self.confirm = None
        for r in self.revisions:
            if r["id"] == rid:
                r["state"] = "applied_and_saved"
        self.store.save(self)
        return f"applied [rev_id: {rid}]"

    def _confirm_reject(self):
        """``nv config apply --confirm-no``: roll the revision awaiting confirmation back now."""
        if not self.confirm:
            return "Error: There is no pending apply waiting for confirmation"
        self._cancel_timer()
        rid = self.confirm["rev"]
        self._confirm_expired("Rollback: confirmation rejected")
        return f"rolled back [rev_id: {rid}]"

    def _confirm_status(self):
        if not self.confirm:
            return "There is no pending apply waiting for confirmation"
        left = max(0, int(self.confirm.get("deadline", 0) - time.time()))
        return f"Revision {self.confirm['rev']} awaits confirmation: {left} seconds left"

    def _cancel_timer(self):
        if self._timer:
            self._timer.cancel()
            self._timer = None

    def _confirm_expired(self, message="Rollback: confirm timer expired"):
        self._timer = None
        if not self.confirm:
            return
        prev = self.confirm["prev"]
        rid = self.revisions[-1]["id"] + 1
        for r in self.revisions:
            if r["id"] == self.confirm["rev"]:
                r["state"] = "rolled_back"
        self.applied = prev
        self.revisions.append({"id": rid, "config": copy.deepcopy(prev), "state": "applied_and_saved",
                               "date": _now(), "user": "root", "message": message})
        self.confirm = None
        self.changed()

    def render_revisions(self):
        head = ("Rev ID                State              Apply ID                          Apply Date           "
                "Type      User     Reason         Message")
        rule = ("--------------------  -----------------  --------------------------------  -------------------  "
                "--------  -------  -------------  -------------------------------")
        rows = [head, rule]
        for r in self.revisions:
            rows.append(f"{r['id']:<20}  {r['state']:<17}  {'rev_%d_apply_1' % r['id']:<32}  {r['date']:<19}  "
                        f"{'CLI':<8}  {r['user']:<7}  {'Config update':<13}  {r['message']}")
        return "\n".join(rows)

    def nv_show(self, args):
        """``nv show <path> [-o json|--output json]``: only the forms the configured release's reference
        lists (``show_forms``); anything else is refused as NVUE refuses a path it does not have."""
        fmt, rest, i = "text", [], 0
        while i < len(args):
            if args[i] in ("-o", "--output"):
                if i + 1 >= len(args):
                    return f"Error: {args[i]} needs a value"
                fmt = args[i + 1]
                i += 2
                continue
            if args[i].startswith("--output="):
                fmt = args[i].split("=", 1)[1]
            else:
                rest.append(args[i])
            i += 1
        line = " ".join(["nv", "show"] + rest)
        form = next((kinds for pat, kinds in show_forms(self.release()) if re.fullmatch(pat, line)), None)
        if form is None:
            return "Error: The requested item does not exist."
        if fmt not in form:
            return f"Error: the simulator prints '{line}' as {' or '.join(form)} only, not {fmt}"
        args = rest
        if len(args) > 2 and args[0] == "interface" and args[2:] in (
                ["qos", "buffer", "ingress-priority-group"], ["qos", "pfc-watchdog"]):
            if args[1] not in self.ports:
                return f"Error: The requested item does not exist: interface {args[1]}"
            if args[3:4] == ["buffer"]:
                return self.show_ingress_pgs(args[1], fmt)
            return self.show_pfc_watchdog(args[1], fmt)
        if args[:1] == ["interface"] and args[2:] in (["link", "phy-detail"], ["link", "phy", "health"]):
            if args[1] not in self.ports:
                return f"Error: The requested item does not exist: interface {args[1]}"
            return sim_ber.render_nvue(self.phy_state(args[1]), self.release())
        if len(args) == 3 and args[:2] == ["platform", "transceiver"]:
            if args[2] not in self.ports:
                return f"Error: The requested item does not exist: platform transceiver {args[2]}"
            return sim_optics.render_nvue(self.optic(args[2]))
        if args == ["interface"]:
            return self.show_interfaces()
        if args == ["interface", "lldp"]:
            return self.show_interface_lldp()
        if len(args) == 5 and args[0] == "interface" and args[2:] == ["qos", "roce", "status"]:
            if args[1] not in self.ports:
                return f"Error: The requested item does not exist: interface {args[1]}"
            return self.show_roce_status(args[1])
        if len(args) == 5 and args[0] == "interface" and args[2:] == ["qos", "roce", "counters"]:
            if args[1] not in self.ports:
                return f"Error: The requested item does not exist: interface {args[1]}"
            pfc = self.port_config()[args[1]]["pfc"]
            return sim_counters.render_nvue_roce_counters(self.name, args[1], pfc[0] if pfc else 3)
        if len(args) == 4 and args[0] == "interface" and args[2:] == ["link", "stats"]:
            if args[1] not in self.ports:
                return f"Error: The requested item does not exist: interface {args[1]}"
            return sim_counters.render_nvue_link_stats(self.name, args[1])
        if len(args) == 3 and args[0] == "interface" and args[2] == "counters":
            if args[1] not in self.ports:
                return f"Error: The requested item does not exist: interface {args[1]}"
            return sim_counters.render_nvue_interface_counters(self.name, args[1])
        return "Error: The requested item does not exist."

    def optic(self, port):
        """The optical module in ``port`` (sim_optics: healthy, or the model's override; None: empty cage)."""
        return sim_optics.module(self.name, port, self.port_config()[port]["speed_gbps"],
                                 bool(self.spec["ports"][port].get("peer")))

    def phy_state(self, port):
        """What ``port`` has measured at the physical layer (sim_ber: healthy, or the model's ``ber``)."""
        st = self.port_config()[port]
        return sim_ber.state(self.name, port, st["speed_gbps"], self.port_oper_up(port, st["admin_up"]))

    def show_interfaces(self):
        cfg = self.port_config()
        rows = [("Interface", "MTU", "Speed", "State", "Remote Host", "Remote Port", "Type", "Summary")]
        rows.append(("eth0", "1500", "1G", "up", "", "", "eth", "IP Address: dhcp"))
        for p in self.ports:
            st = cfg[p]
            peer = self.spec["ports"][p].get("peer", "")
            host, _, rport = peer.partition(":")
            up = self.port_oper_up(p, st["admin_up"])
            rows.append((p, str(st["mtu"]), f"{st['speed_gbps']}G" if up else "", "up" if up else "down",
                         host, rport, "swp", ""))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        out = []
        for n, r in enumerate(rows):
            prefix = "  " if n == 0 else "+ "
            out.append(prefix + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
            if n == 0:
                out.append("  " + "  ".join("-" * w for w in widths))
        return "\n".join(out)

    def show_interface_lldp(self):
        """``nv show interface lldp`` (Cumulus Linux 5.x): one row per interface, blank remote when none."""
        cfg = self.port_config()
        seen = {}
        for port, nb in self.lldp_neighbors():
            seen.setdefault(port, nb)
        rows = [("Interface", "Speed", "Type", "Remote Host", "Remote Port"), ("eth0", "1G", "eth", "", "")]
        for p in self.ports:
            up = self.port_oper_up(p, cfg[p]["admin_up"])
            nb = seen.get(p) or {}
            rows.append((p, f"{cfg[p]['speed_gbps']}G" if up else "", "swp", nb.get("system_name") or "",
                         nb.get("port_id") or ""))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        out = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
        out.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(out)

    def show_roce_status(self, port):
        st = self.port_config()[port]
        pfc = ",".join(map(str, st["pfc"]))
        ecn = st["ecn"]
        trust = {"dscp": "dscp", "pcp": "pcp", "pcp,dscp": "pcp,dscp"}[st["trust"]]
        mode = "lossless" if st["pfc"] else "lossy"
        lines = [
            "                    operational    applied  description",
            "------------------  -------------  -------  ---------------------------------------------------",
            "congestion-control",
            f"  congestion-mode   {'ecn, absolute' if ecn['enabled'] else '':<13}           Congestion config mode",
            f"  enabled-tc        {ecn.get('tc', ''):<13}           Congestion config enabled Traffic Class",
            f"  max-threshold     {_size(ecn.get('max_kb')):<13}           Congestion config max-threshold",
            f"  min-threshold     {_size(ecn.get('min_kb')):<13}           Congestion config min-threshold",
            "pfc",
            f"  pfc-priority      {pfc:<13}           switch-prio on which PFC is enabled",
            f"  rx-enabled        {'yes' if st['pfc'] else 'no':<13}           PFC Rx Enabled status",
            f"  tx-enabled        {'yes' if st['pfc'] else 'no':<13}           PFC Tx Enabled status",
            "trust",
            f"  trust-mode        {trust:<13}           Trust Setting on the port for packet classification",
            f"mode                {mode:<13}           Roce Mode",
        ]
        return "\n".join(lines)

    # ---------------------------------------------------------- buffer model and PFC watchdog
    # Shapes: NVUE command reference Show-Commands/QoS.md (stored file id 3506132260), "nv show interface
    # <interface-id> qos buffer ingress-priority-group" (5.4.0) and "... qos pfc-watchdog" (5.6.0), and
    # the QoS guide's pfc-watchdog example. No -o json sample is published: the JSON keys are the
    # tables' columns (docs/conformance.md, NVUE; unsettled).
    def ingress_pgs(self, port):
        """{pg: row} of one port: PG 0 lossy (the example's default row), PG 9 the control PG, and per
        PFC priority its PG (the identity map) lossless, with headroom unless the buffer model's
        fault (headroom_zero) left it none."""
        cfg = self.port_config()[port]
        head = self.buffer_state(port, cfg)["headroom"]
        rows = {0: {"pool-id": 2, "mode": "DYNAMIC", "reserved-size": 0, "current-usage": 0, "max-usage": 0,
                    "shared-max": "ALPHA_8", "lossy-lossless": "Lossy", "xon-th": 0, "xoff-th": 0,
                    "hr": 19435, "hr-pl-usage": 0, "hr-pl-max": 0}}
        for prio in cfg["pfc"]:
            ok = prio in head
            rows[prio] = {"pool-id": 3, "mode": "DYNAMIC", "reserved-size": 10220 if ok else 0, "current-usage": 0,
                          "max-usage": 0, "shared-max": "ALPHA_8", "lossy-lossless": "Lossless",
                          "xon-th": 18432 if ok else 0, "xoff-th": 36864 if ok else 0,
                          "hr": 55296 if ok else 0, "hr-pl-usage": 0, "hr-pl-max": 0}
        rows[9] = {"pool-id": 1, "mode": "DYNAMIC", "reserved-size": 10220, "current-usage": 0, "max-usage": 0,
                   "shared-max": "ALPHA_8", "lossy-lossless": "Lossy", "xon-th": 0, "xoff-th": 0, "hr": 10220,
                   "hr-pl-usage": 0, "hr-pl-max": 0}
        return {str(pg): rows[pg] for pg in sorted(rows)}

    def show_ingress_pgs(self, port, fmt):
        rows = self.ingress_pgs(port)
        if fmt == "json":
            return json.dumps(rows, indent=2)
        cols = [("priority-group", None), ("Pool ID", "pool-id"), ("Mode", "mode"), ("Reserved Size", "reserved-size"),
                ("Current Usage", "current-usage"), ("Max Usage", "max-usage"), ("Shared Max", "shared-max"),
                ("Lossy/Lossless", "lossy-lossless"), ("XON Th", "xon-th"), ("XOFF Th", "xoff-th"), ("HR", "hr"),
                ("HR/PL Usage", "hr-pl-usage"), ("HR/PL Max", "hr-pl-max")]
        sizes = {"reserved-size", "current-usage", "max-usage", "xon-th", "xoff-th", "hr", "hr-pl-usage", "hr-pl-max"}
        table = [[h for h, _k in cols]]
        for pg, row in rows.items():
            table.append([pg] + [_bytes_text(row[k]) if k in sizes else str(row[k]) for _h, k in cols[1:]])
        return _table(table)

    def show_pfc_watchdog(self, port, fmt):
        cfg = self.port_config()[port]
        configured = self.applied.get(f"interface {port} qos pfc-watchdog state") == "enable"
        on = configured and not self.pfcwd_disabled
        guarded = self.buffer_state(port, cfg)["pfcwd"]
        status = {}
        if on:
            for tc in range(8):
                st = sim_counters.pfcwd_queue_stats(self.name, port, tc) if tc in guarded else {}
                status[str(tc)] = {"status": "DEADLOCK" if st.get("stormed") else "OK",
                                   "deadlock-count": int(st.get("detected") or 0)}
        if fmt == "json":
            return json.dumps({"state": "enabled" if on else "disabled", "status": status}, indent=2)
        head = _table([["", "operational", "applied"],
                       ["state", "enabled" if on else "disabled", "enabled" if configured else "disabled"]])
        if not status:
            return head
        rows = _table([["traffic-class", "status", "deadlock-count"]]
                      + [[tc, v["status"], str(v["deadlock-count"])] for tc, v in status.items()])
        return head + "\n\nPFC WD Status\n" + "=" * 27 + "\n" + "\n".join("    " + r for r in rows.split("\n"))

    def pfc_watchdog(self, port, cfg):
        """The port's PFC priorities while ``interface <port> qos pfc-watchdog state enable`` is applied
        (the watchdog guards the classes PFC is on: the reference, "PFC watchdog detects and mitigates
        pause storms on ports where PFC or link pause is ON")."""
        if self.applied.get(f"interface {port} qos pfc-watchdog state") != "enable":
            return []
        return list(cfg.get("pfc") or [])

    def _drift(self, new, message):
        """An applied revision that is not linerate's (someone ran ``nv set ...`` and ``nv config apply``)."""
        rid = self.revisions[-1]["id"] + 1
        self.applied = new
        self.revisions.append({"id": rid, "config": copy.deepcopy(new), "state": "applied_and_saved",
                               "date": _now(), "user": "root", "message": message})
        self.changed()

    def fault_pfcwd_off(self):
        """Someone ran ``nv set interface <swp> qos pfc-watchdog state disable`` on every port that had it
        enabled, and applied it: drift the read-back names and a re-run repairs."""
        key = "interface {} qos pfc-watchdog state"
        on = [p for p in self.ports if self.applied.get(key.format(p)) == "enable"]
        if getattr(self, "fault_saved_pfcwd", None) is None:
            self.fault_saved_pfcwd = on
        new = copy.deepcopy(self.applied)
        for p in on:
            new[key.format(p)] = "disable"
        self._drift(new, "lab fault: pfc watchdog off")

    def fault_pfcwd_restore(self):
        key = "interface {} qos pfc-watchdog state"
        new = copy.deepcopy(self.applied)
        for p in getattr(self, "fault_saved_pfcwd", None) or []:
            new[key.format(p)] = "enable"
        self.fault_saved_pfcwd = None
        self.pfcwd_disabled = False
        if new != self.applied:
            self._drift(new, "lab fault undone: pfc watchdog on")
        else:
            self.store.publish(self)

    # ---------------------------------------------------------- state
    def port_config(self):
        a = self.applied
        res = {}
        for p in self.ports:
            pfc_prof = a.get(f"interface {p} qos pfc profile")
            map_prof = a.get(f"interface {p} qos mapping profile")
            cc_prof = a.get(f"interface {p} qos congestion-control profile")
            pfc = []
            if pfc_prof and a.get(f"qos pfc {pfc_prof} tx", "enable") == "enable" \
                    and a.get(f"qos pfc {pfc_prof} rx", "enable") == "enable":
                pfc = sorted(int(x) for x in a.get(f"qos pfc {pfc_prof} switch-priority", "").split(",") if x)
            trust = "pcp"
            if map_prof:
                trust = {"l2": "pcp", "l3": "dscp", "both": "pcp,dscp"}[a.get(f"qos mapping {map_prof} trust", "l2")]
            ecn = {"enabled": False}
            if cc_prof:
                for tc in range(8):
                    base = f"qos congestion-control {cc_prof} traffic-class {tc}"
                    if a.get(f"{base} ecn") in ("enable", "enabled"):
                        ecn = {"enabled": True, "tc": tc,
                               "min_kb": kb(a.get(f"{base} min-threshold", "150KB")),
                               "max_kb": kb(a.get(f"{base} max-threshold", "1500KB"))}
                        break
            speed = a.get(f"interface {p} link speed", "auto")
            res[p] = {"mtu": int(a.get(f"interface {p} link mtu", 9216)),
                      "speed_gbps": int(speed[:-1]) if speed.endswith("G") else self.spec["ports"][p].get("speed_gbps", 400),
                      "pfc": pfc, "trust": trust, "ecn": ecn,
                      "admin_up": a.get(f"interface {p} link state", "up") == "up"}
        return res

    def fault_pfc_off(self, port):
        """Someone removed PFC from the port by hand (a new applied revision)."""
        new = copy.deepcopy(self.applied)
        new.pop(f"interface {port} qos pfc profile", None)
        self._drift(new, "lab fault: pfc off")


def validate(cfg):
    for k, v in cfg.items():
        m = re.fullmatch(r"interface (\S+) qos (pfc|mapping|congestion-control) profile", k)
        if m and not any(x.startswith(f"qos {m.group(2)} {v} ") for x in cfg):
            return f"interface {m.group(1)}: qos {m.group(2)} profile '{v}' does not exist"
    for k, v in cfg.items():
        m = re.fullmatch(r"qos congestion-control (\S+) traffic-class (\d) min-threshold", k)
        if m:
            mx = cfg.get(k.replace("min-threshold", "max-threshold"))
            if mx and kb(v) > kb(mx):
                return f"qos congestion-control {m.group(1)} traffic-class {m.group(2)}: min-threshold is above max-threshold"
    return None


def _sort_key(path):
    return [natural_key(t) for t in path.split()]


def render_commands(cfg):
    return "\n".join(f"nv set {k} {q(cfg[k])}" for k in sorted(cfg, key=_sort_key))


def _tree(cfg, keys):
    root = {}
    for k in sorted(keys, key=_sort_key):
        node = root
        toks = k.split()
        for t in toks[:-1]:
            node = node.setdefault(t, {})
        node[toks[-1]] = cfg[k] if cfg is not None else None
    return root


def _yaml(node, indent):
    out = []
    for k, v in node.items():
        if isinstance(v, dict):
            out.append(" " * indent + f"{k}:")
            out += _yaml(v, indent + 2)
        elif v is None:
            out.append(" " * indent + f"{k}:")
        else:
            out.append(" " * indent + f"{k}: {v}")
    return out


def render_yaml(cfg):
    return "\n".join(["- set:"] + _yaml(_tree(cfg, cfg), 4))


def render_diff(applied, pending):
    sets = [k for k in pending if applied.get(k) != pending[k]]
    unsets = [k for k in applied if k not in pending]
    out = []
    if unsets:
        out += ["- unset:"] + _yaml(_tree(None, unsets), 4)
    if sets:
        out += ["- set:"] + _yaml(_tree(pending, sets), 4)
    return "\n".join(out)


def _bytes_text(n):
    """Bytes as NVUE's tables print a size: ``0 Bytes``, ``18.98 KB``, ``1.43 MB``."""
    if n < 1024:
        return f"{n} Bytes"
    return f"{n / 1024:.2f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.2f} MB"


def _table(rows):
    """Left-aligned columns two spaces apart, a dashed rule under the header row."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def _size(kbv):
    if kbv is None:
        return ""
    return f"{kbv / 1024:.2f} MB" if kbv >= 1024 else f"{kbv:.2f} KB"


def _seconds(v):
    """A ``--confirm`` time in seconds: a bare number is minutes (the NVUE reference's own example:
    ``--confirm 60`` is one hour); ``s``/``m``/``h`` suffixes take their unit."""
    n = int(re.match(r"\d+", v).group(0))
    return n * {"s": 1, "m": 60, "h": 3600}[v[-1]] if not v.isdigit() else n * 60


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
