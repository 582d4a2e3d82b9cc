"""The ``nv show`` commands of the NVUE simulator (sim_nvue.py's Nvue takes them as a mixin): the dispatch on
the forms the configured release lists, and the interface, LLDP, RoCE, buffer and PFC watchdog views in
the layouts NVUE prints (nvue_reference.json, docs/conformance.md)."""

import json
import re

import sim_ber
import sim_counters
import sim_optics


class NvueShow:
    """``nv show`` of the Nvue platform; it reads the platform's state through ``port_config``, ``optic``,
    ``phy_state``, ``show_forms`` and the rest of simcore.Platform."""

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
        form = next((kinds for pat, kinds in self.show_forms() if re.fullmatch(pat, line)), None)
        if form is None:
            return "Error: The requested item does not exist."
        if fmt not in form:
            return f"Error: the simulator prints '{line}' as {' or '.join(form)} only, not {fmt}"
        args = rest
        if len(args) > 2 and args[0] == "interface" and args[2:] in (["qos", "buffer", "ingress-priority-group"], ["qos", "pfc-watchdog"]):
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

    def show_interfaces(self):
        cfg = self.port_config()
        rows = [("Interface", "MTU", "Speed", "State", "Remote Host", "Remote Port", "Type", "Summary")]
        rows.append(("eth0", "1500", "1G", "up", "", "", "eth", "IP Address: dhcp"))
        for p in self.ports:
            st = cfg[p]
            peer = self.spec["ports"][p].get("peer", "")
            host, _, rport = peer.partition(":")
            up = self.port_oper_up(p, st["admin_up"])
            rows.append((p, str(st["mtu"]), f"{st['speed_gbps']}G" if up else "", "up" if up else "down", host, rport, "swp", ""))
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
            rows.append((p, f"{cfg[p]['speed_gbps']}G" if up else "", "swp", nb.get("system_name") or "", nb.get("port_id") or ""))
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
        rows = {
            0: {
                "pool-id": 2,
                "mode": "DYNAMIC",
                "reserved-size": 0,
                "current-usage": 0,
                "max-usage": 0,
                "shared-max": "ALPHA_8",
                "lossy-lossless": "Lossy",
                "xon-th": 0,
                "xoff-th": 0,
                "hr": 19435,
                "hr-pl-usage": 0,
                "hr-pl-max": 0,
            }
        }
        for prio in cfg["pfc"]:
            ok = prio in head
            rows[prio] = {
                "pool-id": 3,
                "mode": "DYNAMIC",
                "reserved-size": 10220 if ok else 0,
                "current-usage": 0,
                "max-usage": 0,
                "shared-max": "ALPHA_8",
                "lossy-lossless": "Lossless",
                "xon-th": 18432 if ok else 0,
                "xoff-th": 36864 if ok else 0,
                "hr": 55296 if ok else 0,
                "hr-pl-usage": 0,
                "hr-pl-max": 0,
            }
        rows[9] = {
            "pool-id": 1,
            "mode": "DYNAMIC",
            "reserved-size": 10220,
            "current-usage": 0,
            "max-usage": 0,
            "shared-max": "ALPHA_8",
            "lossy-lossless": "Lossy",
            "xon-th": 0,
            "xoff-th": 0,
            "hr": 10220,
            "hr-pl-usage": 0,
            "hr-pl-max": 0,
        }
        return {str(pg): rows[pg] for pg in sorted(rows)}

    def show_ingress_pgs(self, port, fmt):
        rows = self.ingress_pgs(port)
        if fmt == "json":
            return json.dumps(rows, indent=2)
        cols = [
            ("priority-group", None),
            ("Pool ID", "pool-id"),
            ("Mode", "mode"),
            ("Reserved Size", "reserved-size"),
            ("Current Usage", "current-usage"),
            ("Max Usage", "max-usage"),
            ("Shared Max", "shared-max"),
            ("Lossy/Lossless", "lossy-lossless"),
            ("XON Th", "xon-th"),
            ("XOFF Th", "xoff-th"),
            ("HR", "hr"),
            ("HR/PL Usage", "hr-pl-usage"),
            ("HR/PL Max", "hr-pl-max"),
        ]
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
                status[str(tc)] = {"status": "DEADLOCK" if st.get("stormed") else "OK", "deadlock-count": int(st.get("detected") or 0)}
        if fmt == "json":
            return json.dumps({"state": "enabled" if on else "disabled", "status": status}, indent=2)
        head = _table([["", "operational", "applied"], ["state", "enabled" if on else "disabled", "enabled" if configured else "disabled"]])
        if not status:
            return head
        rows = _table([["traffic-class", "status", "deadlock-count"]] + [[tc, v["status"], str(v["deadlock-count"])] for tc, v in status.items()])
        return head + "\n\nPFC WD Status\n" + "=" * 27 + "\n" + "\n".join("    " + r for r in rows.split("\n"))


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
