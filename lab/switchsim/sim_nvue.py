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
import time

import sim_ber
import sim_optics
from sim_nvue_config import apply_options, render_commands, render_diff, render_yaml, validate
from sim_nvue_show import NvueShow
from simcore import Exit, Platform, bash_words, kb

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


class Nvue(NvueShow, Platform):
    platform = "nvue"

    def factory(self):
        cfg = {"system hostname": self.name, "interface eth0 ip vrf": "mgmt", "interface eth0 ip address": "dhcp"}
        for p in self.ports:
            cfg[f"interface {p} type"] = "swp"
            peer = self.spec["ports"][p].get("peer")
            if peer:
                cfg[f"interface {p} description"] = peer
        self.applied = cfg
        self.pending = None
        self.revisions = [{"id": 1, "config": copy.deepcopy(cfg), "state": "applied_and_saved", "date": _now(), "user": "root", "message": "Initial config"}]
        self.confirm = None  # {"prev": cfg, "deadline": ts}
        self._timer = None

    def release(self):
        """The Cumulus Linux release this switch runs (topology ``nvue_release``; the reference's default)."""
        return str(self.spec.get("nvue_release") or load_reference()["default_release"])

    def grammar(self):
        if getattr(self, "_grammar", None) is None or self._grammar[0] != self.release():
            self._grammar = (self.release(), grammar(self.release()))
        return self._grammar[1]

    def to_json(self):
        return {"applied": self.applied, "pending": self.pending, "revisions": self.revisions, "confirm": self.confirm}

    def from_json(self, d):
        self.applied, self.pending, self.revisions = d["applied"], d["pending"], d["revisions"]
        self.confirm, self._timer = d.get("confirm"), None
        if self.confirm:  # the simulator restarted while an apply awaited confirmation: it timed out
            self._confirm_expired()

    # ------------------------------------------------------------ CLI
    def prompt(self, ctx):
        return f"{ctx['user']}@{self.name}:mgmt:~$ "

    def banner(self, ctx):
        return "\nWelcome to NVIDIA Cumulus (R) Linux (R)\n\nFor support and online technical documentation, visit\nhttps://www.nvidia.com/en-us/support\n\n"

    def execute(self, ctx, line):
        if ctx.get("ask"):
            fn = ctx["ask"]
            ctx["ask"] = None
            return fn(line.strip())
        line = line.strip()
        argv, answer = bash_words(line)
        if argv is None:
            return answer
        if argv[0] in ("exit", "logout"):
            raise Exit()
        if argv[0] == "sudo":
            argv = argv[1:] or ["true"]
        if argv[0] in ("true", ":"):
            return ""
        if argv[0] == "hostname":
            return self.applied.get("system hostname", self.name)
        if argv[0] in self.SHELL_COMMANDS:  # the Linux shell subset (simcore): the change window's lock
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
        if not any(re.fullmatch(pat, path) for pat, _ in self.grammar()) and not any(k.startswith(path + " ") for k in base):
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
        """``nv config apply [<rev>] [-y|--assume-yes|--assume-no] [--confirm [<t>]|--confirm-yes|
        --confirm-no|--confirm-status]``: the confirm commands, else the pending config (or a revision)
        applied, asked first unless -y."""
        opts = apply_options(rest)
        if isinstance(opts, str):
            return opts
        if opts["keep"] or opts["status"] or opts["reject"]:
            if opts["confirm"] is not None or opts["keep"] + opts["status"] + opts["reject"] > 1:
                return "Error: --confirm, --confirm-yes, --confirm-no and --confirm-status are exclusive"
            if opts["reject"]:
                return self._confirm_reject()
            return self._confirm_status() if opts["status"] else self._confirm_keep(opts["rev"])
        rev = opts["rev"]
        if rev is not None and not rev.isdigit():
            return f"Error: Revision {rev} cannot be applied in this simulator"
        rev = int(rev) if rev is not None else None
        new = self._apply_target(rev)
        if isinstance(new, str):
            return new

        def do_apply():
            return self._do_apply(ctx, new, rev, opts["confirm"])

        if opts["yes"]:
            return do_apply()
        if opts["no"]:
            return "Aborted."

        def answer(a):
            if a.lower() in ("y", "yes"):
                return do_apply()
            return "Aborted."

        ctx["ask"] = answer
        return ("Warning: The following files will be applied:\n  /etc/nvue.d/startup.yaml\nAre you sure? [y/N] ", "noeol")

    def _apply_target(self, rev):
        """The config an apply makes applied (a copy): revision ``rev``'s, or the pending one; a str says why
        there is none (the pending config is the applied one: nothing to apply)."""
        if rev is not None:
            target = next((r for r in self.revisions if r["id"] == rev), None)
            if target is None:
                return f"Error: Revision {rev} does not exist"
            return copy.deepcopy(target["config"])
        if self.pending is None or self.pending == self.applied:
            self.pending = None
            return "Warning: The pending config does not have any changes. Nothing to apply."
        err = validate(self.pending)
        if err:
            return f"Error: Invalid config [rev_id: {self.revisions[-1]['id'] + 1}]\n  {err}"
        return copy.deepcopy(self.pending)

    def _do_apply(self, ctx, new, rev, confirm):
        """``new`` applied as a new revision; with ``confirm`` seconds it waits for a confirm (rolled back at
        the deadline). A confirm wait in progress ends: back to before it, or kept."""
        prev = self.applied
        self._cancel_timer()
        if self.confirm:
            superseded = "rolled_back" if new == self.confirm["prev"] else "applied"
            for r in self.revisions:
                if r["id"] == self.confirm["rev"]:
                    r["state"] = superseded
        self.confirm = None
        rid = self.revisions[-1]["id"] + 1
        self.applied = new
        if rev is None:
            self.pending = None
        self.revisions.append(
            {
                "id": rid,
                "config": copy.deepcopy(new),
                "state": "confirm_pending" if confirm else "applied_and_saved",
                "date": _now(),
                "user": ctx["user"],
                "message": f"Config update by {ctx['user']}",
            }
        )
        if confirm:
            self.confirm = {"rev": rid, "prev": prev, "deadline": time.time() + confirm}
            if self.loop:
                self._timer = self.loop.call_later(confirm, self._confirm_expired)
        self.changed()
        return f"applied [rev_id: {rid}]"

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
        self.revisions.append({"id": rid, "config": copy.deepcopy(prev), "state": "applied_and_saved", "date": _now(), "user": "root", "message": message})
        self.confirm = None
        self.changed()

    def render_revisions(self):
        head = "Rev ID                State              Apply ID                          Apply Date           Type      User     Reason         Message"
        rule = (
            "--------------------  -----------------  --------------------------------  -------------------  "
            "--------  -------  -------------  -------------------------------"
        )
        rows = [head, rule]
        for r in self.revisions:
            rows.append(
                f"{r['id']:<20}  {r['state']:<17}  {'rev_%d_apply_1' % r['id']:<32}  {r['date']:<19}  "
                f"{'CLI':<8}  {r['user']:<7}  {'Config update':<13}  {r['message']}"
            )
        return "\n".join(rows)

    def show_forms(self):
        """The ``nv show`` forms the configured release's reference lists (module ``show_forms``)."""
        return show_forms(self.release())

    def optic(self, port):
        """The optical module in ``port`` (sim_optics: healthy, or the model's override; None: empty cage)."""
        return sim_optics.module(self.name, port, self.port_config()[port]["speed_gbps"], bool(self.spec["ports"][port].get("peer")))

    def phy_state(self, port):
        """What ``port`` has measured at the physical layer (sim_ber: healthy, or the model's ``ber``)."""
        st = self.port_config()[port]
        return sim_ber.state(self.name, port, st["speed_gbps"], self.port_oper_up(port, st["admin_up"]))

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
        self.revisions.append({"id": rid, "config": copy.deepcopy(new), "state": "applied_and_saved", "date": _now(), "user": "root", "message": message})
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
            if pfc_prof and a.get(f"qos pfc {pfc_prof} tx", "enable") == "enable" and a.get(f"qos pfc {pfc_prof} rx", "enable") == "enable":
                pfc = sorted(int(x) for x in a.get(f"qos pfc {pfc_prof} switch-priority", "").split(",") if x)
            trust = "pcp"
            if map_prof:
                trust = {"l2": "pcp", "l3": "dscp", "both": "pcp,dscp"}[a.get(f"qos mapping {map_prof} trust", "l2")]
            ecn = {"enabled": False}
            if cc_prof:
                for tc in range(8):
                    base = f"qos congestion-control {cc_prof} traffic-class {tc}"
                    if a.get(f"{base} ecn") in ("enable", "enabled"):
                        ecn = {
                            "enabled": True,
                            "tc": tc,
                            "min_kb": kb(a.get(f"{base} min-threshold", "150KB")),
                            "max_kb": kb(a.get(f"{base} max-threshold", "1500KB")),
                        }
                        break
            speed = a.get(f"interface {p} link speed", "auto")
            res[p] = {
                "mtu": int(a.get(f"interface {p} link mtu", 9216)),
                "speed_gbps": int(speed[:-1]) if speed.endswith("G") else self.spec["ports"][p].get("speed_gbps", 400),
                "pfc": pfc,
                "trust": trust,
                "ecn": ecn,
                "admin_up": a.get(f"interface {p} link state", "up") == "up",
            }
        return res

    def fault_pfc_off(self, port):
        """Someone removed PFC from the port by hand (a new applied revision)."""
        new = copy.deepcopy(self.applied)
        new.pop(f"interface {port} qos pfc profile", None)
        self._drift(new, "lab fault: pfc off")


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
