"""Arista EOS simulator: exec/config modes, configure sessions with commit
timers, paging, and the running-config subset the templates emit.

Exec: show running-config | interfaces status | configuration sessions |
session-config diffs | priority-flow-control counters [watchdog] | json | interfaces transceiver
detail | json | interfaces phy detail | json; configure [terminal]; configure session <name>
[commit|abort]; terminal length|width; write memory; enable; exit.
Config: hostname; [no] qos map dscp <d..> to traffic-class <tc>;
interface <name>; commit; commit timer hh:mm:ss; abort; end; exit.
Interface: [no] description|mtu|speed|qos trust|priority-flow-control on|
priority-flow-control priority <p> drop|no-drop|priority-flow-control pause watchdog [port action
drop|notify-only | port timer timeout <s> polling-interval auto|<s> recovery-time <s> [forced]]|
shutdown; [no] tx-queue|uc-tx-queue <n>
(the one the family has). The family (topology eos_family, default 7050x4) sets
the largest mtu and the speed forms (lane-qualified: 400g-8, 100g-2, ...).
Tx-queue: [no] random-detect ecn minimum-threshold <n> kbytes
maximum-threshold <n> kbytes [max-mark-probability <p>].
"""

import copy
import difflib
import json
import re

import sim_ber
import sim_counters
import sim_optics
from eos_config import DEFAULT_FAMILY, FAMILIES, EosConfig, invalid
from simcore import Exit, Platform, natural_key


class Eos(EosConfig, Platform):
    platform = "eos"

    @property
    def family(self):
        """The platform family this switch simulates (the topology's eos_family; default 7050x4)."""
        return self.spec.get("eos_family", DEFAULT_FAMILY)

    def factory(self):
        self.cfg = {"hostname": self.name, "dscp_map": {}, "interfaces": {p: {"description": self.spec["ports"][p].get("peer", "")} for p in self.ports}}
        self.sessions = {}
        self._timers = {}

    def to_json(self):
        return {"cfg": self.cfg, "sessions": {n: {k: v for k, v in s.items() if k != "timer"} for n, s in self.sessions.items()}}

    def from_json(self, d):
        self.cfg = d["cfg"]
        self.sessions = d.get("sessions", {})
        self._timers = {}
        for s in self.sessions.values():
            if s["state"] == "pendingCommitTimer":  # simulator restarted: the timer fired meanwhile
                self.cfg = s["snapshot"]
                s["state"] = "aborted"

    # ------------------------------------------------------------ CLI
    def new_context(self, username):
        return {"user": username, "mode": [], "term_length": 24, "ask": None, "session": None}

    def prompt(self, ctx):
        if not ctx["mode"]:
            return f"{self.cfg['hostname']}#"
        sess = f"-s-{ctx['session'][:6]}" if ctx["session"] else ""
        parts = ["config" + sess]
        for m in ctx["mode"][1:]:
            if m[0] == "if":
                parts.append("if-" + re.sub(r"^Ethernet", "Et", m[1]))
            elif m[0] == "txq":
                parts.append(f"txq-{m[1]}")
        return f"{self.cfg['hostname']}({'-'.join(parts)})#"

    def banner(self, ctx):
        return "Last login: from 127.0.0.1\n"

    def target(self, ctx):
        """The config being edited: a session's copy or the running config."""
        if ctx["session"]:
            return self.sessions[ctx["session"]]["cfg"]
        return self.cfg

    def execute(self, ctx, line):
        line = line.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith("!"):
            return ""
        if self.check_reject(stripped):
            return "% Error: command rejected by the switch (hardware resource unavailable)"
        if not ctx["mode"]:
            return self.exec_cmd(ctx, stripped)
        # config modes: try the current mode, then fall back to the parents (as EOS does)
        for depth in range(len(ctx["mode"]), 0, -1):
            out = self.config_cmd(ctx, ctx["mode"][:depth], stripped)
            if out is not None:
                return out
        # exec commands (show ...) work in config mode too
        if stripped.startswith("show "):
            return self.exec_cmd(ctx, stripped)
        return invalid(stripped)

    def exec_cmd(self, ctx, line):
        toks = line.split()
        if toks[0] in ("exit", "logout", "quit"):
            raise Exit()
        if toks[0] == "enable" or toks[0] == "disable":
            return ""
        if toks[:2] == ["terminal", "length"] and len(toks) == 3 and toks[2].isdigit():
            ctx["term_length"] = int(toks[2])
            return "Pagination disabled." if toks[2] == "0" else ""
        if toks[:2] == ["terminal", "width"] and len(toks) == 3 and toks[2].isdigit():
            return f"Width set to {toks[2]} columns."
        if line in ("write memory", "write", "copy running-config startup-config"):
            self.cfg_saved = copy.deepcopy(self.cfg)
            return "Copy completed successfully."
        if line == "show running-config":
            return render(self.cfg, self.device_line(), FAMILIES[self.family]["queue"])
        if line == "show interfaces status":
            return self.show_interfaces_status()
        if line == "show configuration sessions":
            return self.show_sessions(ctx)
        if line == "show session-config diffs":
            if not ctx["session"]:
                return "% Not in a configuration session"
            return self.session_diff(ctx["session"])
        if line == "show priority-flow-control counters | json":  # eAPI revision 3 shape (counters.py)
            return sim_counters.render_eos_pfc_counters_json(self.name, self.ports)
        if line == "show priority-flow-control counters watchdog | json":
            return self.show_pfcwd_counters_json()
        if line == "show interfaces counters errors | json":
            return sim_counters.render_eos_intf_errors_json(self.name, self.ports)
        if line == "show interfaces transceiver detail | json":  # DOM per lane interface (sim_optics)
            return sim_optics.render_eos_json({p: self.optic(p) for p in self.ports})
        if line == "show interfaces phy detail | json":  # the revision-2 model per port (sim_ber)
            return sim_ber.render_eos_json([(p, self.phy_state(p)) for p in self.ports])
        if line == "show lldp neighbors | json":
            return self.show_lldp_neighbors_json()
        if line == "show version":
            return "Arista vEOS-lab\nHardware version: \nSerial number: SIM0000\nSoftware image version: 4.32.0F\nArchitecture: x86_64\n"
        m = re.fullmatch(r"bash timeout (\d+) (.+)", line)
        if m:  # EOS runs the rest of the line in bash (the shell subset of simcore: the window lock)
            return self.shell(m.group(2))[0]
        if toks[0] == "show":
            return invalid(line, 1)
        if line in ("configure", "configure terminal", "config", "conf t"):
            ctx["mode"], ctx["session"] = [("config",)], None
            return ""
        m = re.fullmatch(r"configure session (\S+)(?: (commit|abort))?", line)
        if m:
            return self.session_cmd(ctx, m.group(1), m.group(2))
        return invalid(line)

    def session_cmd(self, ctx, name, action):
        s = self.sessions.get(name)
        if action is None:
            if s and s["state"] != "pending":
                return f"% Cannot enter session {name} (session is {s['state']})"
            if not s:
                self.sessions[name] = {"cfg": copy.deepcopy(self.cfg), "state": "pending", "user": ctx["user"]}
                self.store.save(self)
            ctx["mode"], ctx["session"] = [("config",)], name
            return ""
        if not s:
            return f"% Session {name} not found"
        if action == "commit":
            if s["state"] == "pendingCommitTimer":
                self._cancel(name)
                s["state"] = "completed"
                s.pop("snapshot", None)
                self._prune()
                self.store.save(self)
                return ""
            if s["state"] == "pending":
                self.cfg = copy.deepcopy(s["cfg"])
                s["state"] = "completed"
                self._prune()
                self.changed()
                return ""
            return f"% Session {name} is {s['state']}"
        # abort
        if s["state"] == "pendingCommitTimer":
            self._cancel(name)
            self.cfg = s.pop("snapshot")
            del self.sessions[name]
            self.changed()
            return ""
        if s["state"] == "pending":
            del self.sessions[name]
            self.store.save(self)
            return ""
        return f"% Session {name} is {s['state']}"

    def _prune(self):
        """EOS keeps one completed session (Maximum number of completed sessions: 1)."""
        done = [n for n, s in self.sessions.items() if s["state"] == "completed"]
        for n in done[:-1]:
            del self.sessions[n]

    def _cancel(self, name):
        t = self._timers.pop(name, None)
        if t:
            t.cancel()

    def _timer_fired(self, name):
        self._timers.pop(name, None)
        s = self.sessions.get(name)
        if s and s["state"] == "pendingCommitTimer":
            self.cfg = s.pop("snapshot")
            del self.sessions[name]
            self.changed()

    def session_diff(self, name):
        a = render(self.cfg, self.device_line(), FAMILIES[self.family]["queue"]).splitlines()
        b = render(self.sessions[name]["cfg"], self.device_line(), FAMILIES[self.family]["queue"]).splitlines()
        return "\n".join(difflib.unified_diff(a, b, "system:/running-config", f"session:/{name}-session-config", lineterm=""))

    def show_sessions(self, ctx):
        rows = [
            "Maximum number of completed sessions: 1",
            "Maximum number of pending sessions: 5",
            "",
            "  Name                           State                User       Terminal",
            "  ------------------------------ -------------------- ---------- --------",
        ]
        for n, s in self.sessions.items():
            mark = "*" if ctx.get("session") == n else " "
            rows.append(f"{mark} {n:<30} {s['state']:<20} {s.get('user', ''):<10} vty")
        return "\n".join(rows)

    def show_lldp_neighbors_json(self):
        """``show lldp neighbors | json`` (eAPI): port, neighborDevice, neighborPort, ttl."""
        rows = [{"ttl": 120, "neighborDevice": nb["system_name"], "neighborPort": nb["port_id"], "port": p} for p, nb in self.lldp_neighbors()]
        return json.dumps(
            {"tablesLastChangeTime": 0.0, "tablesAgeOuts": 0, "tablesInserts": len(rows), "lldpNeighbors": rows, "tablesDeletes": 0, "tablesDrops": 0}, indent=2
        )

    def optic(self, port):
        """The optical module in ``port`` (sim_optics: healthy, or the model's override; None: empty cage)."""
        return sim_optics.module(self.name, port, self.port_config()[port]["speed_gbps"], bool(self.spec["ports"][port].get("peer")))

    def phy_state(self, port):
        """What ``port`` has measured at the physical layer (sim_ber: healthy, or the model's ``ber``)."""
        up = self.port_oper_up(port, not self.cfg["interfaces"].get(port, {}).get("shutdown"))
        return sim_ber.state(self.name, port, self.port_config()[port]["speed_gbps"], up)

    def show_interfaces_status(self):
        head = f"{'Port':<10} {'Name':<18} {'Status':<12} {'Vlan':<8} {'Duplex':<6} {'Speed':<6} {'Type':<15} {'Flags':<5} Encapsulation"
        rows = [head]
        for p in sorted(self.cfg["interfaces"], key=natural_key):
            i = self.cfg["interfaces"][p]
            admin = not i.get("shutdown")
            up = self.port_oper_up(p, admin)
            status = "connected" if up else ("disabled" if not admin else "notconnect")
            speed = f"{_gbps(i.get('speed')) or self.spec['ports'].get(p, {}).get('speed_gbps', 400)}G"
            rows.append(
                f"{re.sub(r'^Ethernet', 'Et', p):<10} {i.get('description', '')[:18]:<18} {status:<12} "
                f"{'routed':<8} {'full':<6} {speed:<6} {'400GBASE-DR4':<15}"
            )
        return "\n".join(r.rstrip() for r in rows)

    def device_line(self):
        return f"! device: {self.cfg['hostname']} (vEOS-lab, EOS-4.32.0F)"

    # ---------------------------------------------------------- state
    def port_config(self):
        res = {}
        for p in self.ports:
            i = self.cfg["interfaces"].get(p, {})
            pfc = sorted(int(k) for k, v in i.get("pfc", {}).items() if v == "no-drop") if i.get("pfc_on") else []
            ecn = {"enabled": False}
            for q, tq in sorted(i.get("txq", {}).items()):
                if tq.get("ecn"):
                    ecn = {"enabled": True, "tc": int(q), "min_kb": tq["ecn"]["min"], "max_kb": tq["ecn"]["max"]}
                    break
            speed = i.get("speed")
            res[p] = {
                "mtu": i.get("mtu", 1500),
                "speed_gbps": _gbps(speed) or self.spec["ports"][p].get("speed_gbps", 400),
                "pfc": pfc,
                "trust": {"dscp": "dscp", "cos": "pcp"}.get(i.get("trust"), "pcp"),
                "ecn": ecn,
                "admin_up": not i.get("shutdown"),
            }
        return res

    def pfc_watchdog(self, port, cfg):
        """The no-drop priorities of a port with ``priority-flow-control pause watchdog`` on it."""
        i = self.cfg["interfaces"].get(port, {})
        return list(cfg.get("pfc") or []) if i.get("pfcwd") else []

    def fault_pfcwd_off(self):
        """Someone ran ``no priority-flow-control pause watchdog`` on every port (and saved): drift
        an operator sees in the running config and a re-run repairs."""
        saved = getattr(self, "fault_saved_pfcwd", None)
        if saved is None:
            self.fault_saved_pfcwd = [p for p, i in self.cfg["interfaces"].items() if i.get("pfcwd")]
        for i in self.cfg["interfaces"].values():
            i.pop("pfcwd", None)
        self.cfg_saved = copy.deepcopy(self.cfg)
        self.changed()

    def fault_pfcwd_restore(self):
        for p in getattr(self, "fault_saved_pfcwd", None) or []:
            if p in self.cfg["interfaces"]:
                self.cfg["interfaces"][p]["pfcwd"] = True
        self.fault_saved_pfcwd = None
        self.changed()

    def show_pfcwd_counters_json(self):
        """``show priority-flow-control counters watchdog | json``: {"interfaces": {intf: {"txQueues":
        {"<q>": {"stuckCount", "recoveryCount"}}}}}, an interface only once it has had a watchdog
        event (the shape a public EOS health check reads; the lab's TC->queue map is the identity)."""
        doc = {"interfaces": {}}
        for p in sorted(self.ports, key=natural_key):
            for prio in range(8):
                st = sim_counters.pfcwd_queue_stats(self.name, p, prio)
                if st["detected"] or st["restored"]:
                    q = doc["interfaces"].setdefault(p, {"txQueues": {}})["txQueues"]
                    q[str(prio)] = {"stuckCount": st["detected"], "recoveryCount": st["restored"]}
        return json.dumps(doc, indent=2)

    def fault_pfc_off(self, port):
        i = self.cfg["interfaces"].get(port, {})
        i.pop("pfc_on", None)
        self.changed()


def _gbps(speed):
    """400 for 400g-8 / 400g; None for auto or unset."""
    m = re.match(r"(\d+)g", speed or "")
    return int(m.group(1)) if m else None


def render(cfg, device_line, queue="tx-queue"):
    out = ["! Command: show running-config", device_line, "!", f"hostname {cfg['hostname']}", "!"]
    by_tc = {}
    for d, tc in cfg["dscp_map"].items():
        by_tc.setdefault(int(tc), []).append(int(d))
    for tc in sorted(by_tc):
        out.append(f"qos map dscp {' '.join(map(str, sorted(by_tc[tc])))} to traffic-class {tc}")
    if by_tc:
        out.append("!")
    for p in sorted(cfg["interfaces"], key=natural_key):
        i = cfg["interfaces"][p]
        out.append(f"interface {p}")
        if i.get("description"):
            out.append(f"   description {i['description']}")
        if i.get("shutdown"):
            out.append("   shutdown")
        if "mtu" in i:
            out.append(f"   mtu {i['mtu']}")
        if "speed" in i:
            out.append(f"   speed {i['speed']}")
        if "trust" in i:
            out.append(f"   qos trust {i['trust']}")
        if i.get("pfc_on"):
            out.append("   priority-flow-control on")
        for pr in sorted(i.get("pfc", {}), key=int):
            out.append(f"   priority-flow-control priority {pr} {i['pfc'][pr]}")
        if i.get("pfcwd"):
            out.append("   priority-flow-control pause watchdog")
        if i.get("pfcwd_action"):
            out.append(f"   priority-flow-control pause watchdog port action {i['pfcwd_action']}")
        if i.get("pfcwd_timer"):
            t = i["pfcwd_timer"]
            out.append(
                f"   priority-flow-control pause watchdog port timer timeout {t['timeout']} polling-interval "
                f"{t['polling']} recovery-time {t['recovery']}{' forced' if t.get('forced') else ''}"
            )
        for q in sorted(i.get("txq", {}), key=int):
            tq = i["txq"][q]
            out += ["   !", f"   {queue} {q}"]
            if tq.get("ecn"):
                e = tq["ecn"]
                prob = f" max-mark-probability {e['prob']}" if e.get("prob_set") else ""
                out.append(f"      random-detect ecn minimum-threshold {e['min']} kbytes maximum-threshold {e['max']} kbytes{prob}")
        out.append("!")
    out.append("end")
    return "\n".join(out)
