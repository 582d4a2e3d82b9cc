"""The EOS simulator's configuration modes (sim_eos.py's Eos takes them as a mixin): global config, interface
and tx-queue blocks, each a table of the commands it knows, and the platform families that bound them.

Config: hostname; [no] qos map dscp <d..> to traffic-class <tc>; interface <name>; commit; commit timer
hh:mm:ss; abort; end; exit.
Interface: [no] description|mtu|speed|qos trust|priority-flow-control on|priority-flow-control priority <p>
drop|no-drop|priority-flow-control pause watchdog [...]|shutdown; [no] tx-queue|uc-tx-queue <n> (the one the
family has).
Tx-queue: [no] random-detect ecn minimum-threshold <n> kbytes maximum-threshold <n> kbytes
[max-mark-probability <p>].
"""

import copy
import re

# Platform families the lab simulates: the largest interface mtu, the transmit-queue keyword and
# the SerDes lane rate that bounds the lane-qualified speed forms. The lab's own model of the
# switch (sources in docs/conformance.md, Arista EOS): the EOS User Manual's QoS chapter has
# tx-queue on Trident/Tomahawk switches and uc-tx-queue / mc-tx-queue on Arad/Jericho switches;
# "Octal Port Renumber to Four Interfaces" names the speeds 400G-8, 200G-4, 100G-2, 100G-4.
FAMILIES = {
    "7050x3": {"mtu_max": 9214, "queue": "tx-queue", "lane_gbps": 25},
    "7050x4": {"mtu_max": 9214, "queue": "tx-queue", "lane_gbps": 50},
    "7060x4": {"mtu_max": 9214, "queue": "tx-queue", "lane_gbps": 50},  # Tomahawk 3
    "7060x5": {"mtu_max": 9214, "queue": "tx-queue", "lane_gbps": 50},  # Tomahawk 4 (400G ports)
    "7060x6": {"mtu_max": 9214, "queue": "tx-queue", "lane_gbps": 100},  # Tomahawk 5 (800G ports)
    "7280r3": {"mtu_max": 9214, "queue": "uc-tx-queue", "lane_gbps": 50},
    "7388x5": {"mtu_max": 9214, "queue": "uc-tx-queue", "lane_gbps": 50},
    "7800r3": {"mtu_max": 9214, "queue": "uc-tx-queue", "lane_gbps": 50},  # Jericho2 line cards
}
DEFAULT_FAMILY = "7050x4"
# speed -> lane counts of a standard PMD; 10/25/40G have no lane suffix
LANE_FORMS = {50: (1, 2), 100: (1, 2, 4), 200: (2, 4, 8), 400: (4, 8), 800: (8,)}


def speed_forms(family):
    """The ``speed`` arguments an interface of ``family`` takes."""
    lane = FAMILIES[family]["lane_gbps"]
    return {"auto", "10g", "25g", "40g"} | {f"{g}g-{n}" for g, ns in LANE_FORMS.items() for n in ns if g // n <= lane}


def invalid(line, token=0):
    toks = line.split()
    tok = toks[token] if token < len(toks) else ""
    return f"% Invalid input (at token {token}: '{tok}')"


class EosConfig:
    """Config-mode commands of the Eos platform (sim_eos.py): ``config_cmd`` runs one line in the mode the
    session is in; each mode's commands are a table of (how it matches, what it does)."""

    def config_cmd(self, ctx, mode, line):
        """Run line in mode; None when the mode does not know the command."""
        no = line.startswith("no ")
        body = line[3:] if no else line
        run = {"config": self._config_global, "if": self._config_interface, "txq": self._config_txq}.get(mode[-1][0])
        return run(ctx, mode, line, body, body.split(), no) if run else None

    # ------------------------------------------------------------ global config
    def _config_global(self, ctx, mode, line, body, toks, no):
        if line in ("end", "exit"):  # leaves config mode; a session stays pending
            ctx["mode"], ctx["session"] = [], None
            return ""
        if line == "abort":
            if not ctx["session"]:
                return "% Not in a configuration session"
            del self.sessions[ctx["session"]]
            ctx["mode"], ctx["session"] = [], None
            self.store.save(self)
            return ""
        m = re.fullmatch(r"commit(?: timer (\d\d):(\d\d):(\d\d))?", line)
        if m:
            return self._commit(ctx, line, m)
        cfg = self.target(ctx)
        if toks and toks[0] == "hostname" and len(toks) == 2 and not no:
            cfg["hostname"] = toks[1]
            return self._edited(ctx)
        m = re.fullmatch(r"qos map dscp ((?:\d+ )+)to traffic-class (\d+)", body)
        if m:
            return self._qos_map(ctx, cfg, line, m, no)
        if toks and toks[0] == "interface" and len(toks) == 2 and not no:
            name = toks[1]
            if name not in cfg["interfaces"]:
                return f"% Interface {name} does not exist" if name.startswith("Ethernet") else invalid(line, 1)
            ctx["mode"] = mode + [("if", name)]
            return ""
        return None

    def _commit(self, ctx, line, m):
        """``commit`` of a configure session, or ``commit timer hh:mm:ss`` (rolled back unless confirmed)."""
        if not ctx["session"]:
            return invalid(line)
        name = ctx["session"]
        s = self.sessions[name]
        if m.group(1):
            secs = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
            s["snapshot"] = copy.deepcopy(self.cfg)
            s["state"] = "pendingCommitTimer"
            if self.loop:
                self._timers[name] = self.loop.call_later(secs, self._timer_fired, name)
        else:
            s["state"] = "completed"
            self._prune()
        self.cfg = copy.deepcopy(s["cfg"])
        ctx["mode"], ctx["session"] = [], None
        self.changed()
        return ""

    def _qos_map(self, ctx, cfg, line, m, no):
        dscps = m.group(1).split()
        bad = [d for d in dscps if not 0 <= int(d) <= 63]
        if bad:
            return invalid(line, 3 + (1 if no else 0) + dscps.index(bad[0]))
        if not 0 <= int(m.group(2)) <= 7:
            return invalid(line, len(line.split()) - 1)
        for d in dscps:
            if no:
                if cfg["dscp_map"].get(d) == m.group(2):
                    del cfg["dscp_map"][d]
            else:
                cfg["dscp_map"][d] = m.group(2)
        return self._edited(ctx)

    # ------------------------------------------------------------ interface
    def _config_interface(self, ctx, mode, line, body, toks, no):
        """The interface block's commands, in the order EOS's parser tries them."""
        intf = self.target(ctx)["interfaces"][mode[-1][1]]
        if line == "exit":
            ctx["mode"] = mode[:-1]
            return ""
        if toks[:1] == ["description"]:
            if no:
                intf.pop("description", None)
            else:
                intf["description"] = body[len("description ") :]
            return self._edited(ctx)
        if toks == ["shutdown"] or toks == ["priority-flow-control", "on"]:  # a flag: set, or gone with no
            key = "shutdown" if toks == ["shutdown"] else "pfc_on"
            intf[key] = not no
            if no:
                intf.pop(key)
            return self._edited(ctx)
        limits = FAMILIES[self.family]
        values = {  # one value: its key, the token it is at and what it may be
            ("mtu",): ("mtu", 1, lambda v: v.isdigit() and 68 <= int(v) <= limits["mtu_max"], int),
            ("speed",): ("speed", 1, lambda v: v in speed_forms(self.family), str),
            ("qos", "trust"): ("trust", 2, lambda v: v in ("dscp", "cos"), str),
        }
        for words, (key, at, valid, conv) in values.items():
            if tuple(toks[: len(words)]) == words:
                if no:
                    intf.pop(key, None)
                elif len(toks) != at + 1 or not valid(toks[at]):
                    return invalid(line, at)
                else:
                    intf[key] = conv(toks[at])
                return self._edited(ctx)
        if toks[:3] == ["priority-flow-control", "pause", "watchdog"]:
            return self.watchdog_cmd(ctx, intf, line, toks, no)
        m = re.fullmatch(r"priority-flow-control priority (\d+)(?: (drop|no-drop))?", body)
        if m:
            return self._pfc_priority(ctx, intf, line, m, no)
        m = re.fullmatch(r"(uc-tx-queue|tx-queue) (\d+)", body)
        if m:
            return self._tx_queue(ctx, mode, intf, line, m, no)
        return None

    def _pfc_priority(self, ctx, intf, line, m, no):
        p = m.group(1)
        if not 0 <= int(p) <= 7:
            return invalid(line, 2)
        pr = intf.setdefault("pfc", {})
        if no:
            pr.pop(p, None)
        elif not m.group(2):
            return "% Incomplete command"
        else:
            pr[p] = m.group(2)
        if not pr:
            intf.pop("pfc")
        return self._edited(ctx)

    def _tx_queue(self, ctx, mode, intf, line, m, no):
        if m.group(1) != FAMILIES[self.family]["queue"]:
            return invalid(line, 1 if no else 0)  # this family has no such queue keyword
        q = m.group(2)
        if not 0 <= int(q) <= 7:
            return invalid(line, 1)
        if no:
            intf.get("txq", {}).pop(q, None)
            if "txq" in intf and not intf["txq"]:
                intf.pop("txq")
            return self._edited(ctx)
        intf.setdefault("txq", {}).setdefault(q, {})
        ctx["mode"] = mode + [("txq", q, mode[-1][1])]
        return self._edited(ctx)

    # ------------------------------------------------------------ tx-queue block
    def _config_txq(self, ctx, mode, line, body, toks, no):
        _, q, port = mode[-1]
        tq = self.target(ctx)["interfaces"][port].setdefault("txq", {}).setdefault(q, {})
        if line == "exit":
            ctx["mode"] = mode[:-1]
            return ""
        if not body.startswith("random-detect ecn"):
            return None
        if no:
            tq.pop("ecn", None)
            return self._edited(ctx)
        m = re.fullmatch(
            r"random-detect ecn minimum-threshold (\d+) kbytes maximum-threshold (\d+) kbytes"
            r"(?: max-mark-probability (\d+))?",
            body,
        )
        if not m:
            return invalid(line, 2)
        mn, mx, pr = int(m.group(1)), int(m.group(2)), int(m.group(3) or 100)
        if mn > mx:
            return "% Minimum threshold must be less than or equal to maximum threshold"
        if not 1 <= pr <= 100:
            return invalid(line, 9)
        tq["ecn"] = {"min": mn, "max": mx, "prob": pr, "prob_set": bool(m.group(3))}
        return self._edited(ctx)

    def watchdog_cmd(self, ctx, intf, line, toks, no):
        """Interface ``[no] priority-flow-control pause watchdog [port action drop|notify-only |
        port timer timeout T polling-interval auto|P recovery-time R [forced]]`` (EOS "DCBX and Flow
        Control"; value patterns of AVD's qos-profiles schema: T and R seconds with at most 2
        decimals, 0.01..60; P at most 3 decimals, 0.005..30, or auto). ``no`` takes any trailing
        arguments, as EOS does."""
        off = 1 if no else 0

        def bad(i):
            return invalid(line, i + off)

        if len(toks) == 3:
            if no:
                intf.pop("pfcwd", None)
            else:
                intf["pfcwd"] = True
            return self._edited(ctx)
        if toks[3] != "port":
            return bad(3)
        if len(toks) == 4:
            return "% Incomplete command"
        if toks[4] == "action":
            if no:
                intf.pop("pfcwd_action", None)
                return self._edited(ctx)
            if len(toks) == 5:
                return "% Incomplete command"
            if toks[5] not in ("drop", "notify-only") or len(toks) > 6:
                return bad(5 if toks[5] not in ("drop", "notify-only") else 6)
            intf["pfcwd_action"] = toks[5]
            return self._edited(ctx)
        if toks[4] != "timer":
            return bad(4)
        if no:
            intf.pop("pfcwd_timer", None)
            return self._edited(ctx)
        words = {5: "timeout", 7: "polling-interval", 9: "recovery-time"}
        for i, w in words.items():
            if len(toks) <= i + 1:
                return "% Incomplete command"
            if toks[i] != w:
                return bad(i)
        t, p, r = _seconds(toks[6], 2, 0.01, 60), toks[8], _seconds(toks[10], 2, 0.01, 60)
        if t is None:
            return bad(6)
        if p != "auto" and _seconds(p, 3, 0.005, 30) is None:
            return bad(8)
        if r is None:
            return bad(10)
        if len(toks) > 12 or (len(toks) == 12 and toks[11] != "forced"):
            return bad(11 if toks[11] != "forced" else 12)
        intf["pfcwd_timer"] = {"timeout": t, "polling": p if p == "auto" else _seconds(p, 3, 0.005, 30), "recovery": r, "forced": len(toks) == 12}
        return self._edited(ctx)

    def _edited(self, ctx):
        if not ctx["session"]:
            self.changed()
        else:
            self.store.save(self)
        return ""


def _seconds(text, decimals, lo, hi):
    """'0.2' -> '0.2' (as the running config prints it back: no trailing zeros) when ``text`` is a
    number of seconds with at most ``decimals`` decimals within lo..hi; None otherwise."""
    if not re.fullmatch(r"\d+(\.\d{1,%d})?" % decimals, text or ""):
        return None
    v = float(text)
    if not lo <= v <= hi:
        return None
    return f"{v:.{decimals}f}".rstrip("0").rstrip(".")
