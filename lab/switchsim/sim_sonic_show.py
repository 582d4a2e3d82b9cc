"""The ``show`` commands of the SONiC simulator (sim_sonic.py's Sonic takes them as a mixin): the dispatch
on sonic-utilities' show subcommands and the interface, transceiver, FEC, LLDP, PFC and ECN views in the
layouts sonic-utilities prints (docs/conformance.md)."""

import json

import sim_ber
import sim_counters
import sim_optics
from simcore import click_usage, natural_key, tabulate


class SonicShow:
    """``show`` of the Sonic platform; it reads the platform's state through ``db``, ``ports``, ``release``,
    ``optic``, ``port_oper_up``, ``lldp_neighbors`` and ``show_pfcwd`` (sim_sonic_lossless.py)."""

    def show(self, args):
        if args == ["runningconfiguration", "all"]:
            return dump(self.db)
        if args[:2] == ["interfaces", "status"]:
            return self.show_interfaces_status()
        if args[:2] == ["pfc", "priority"]:
            if len(args) > 2 and args[2] not in self.db["PORT"]:
                return f"Cannot find interface {args[2]}"
            return self.show_pfc_priority(args[2] if len(args) > 2 else None)
        if args == ["ecn"]:
            return self.show_ecn()
        if args[:1] == ["pfcwd"]:
            return self.show_pfcwd(args[1:])
        if args == ["lldp", "table"]:
            return self.show_lldp_table()
        if args == ["pfc", "counters"]:  # congestion counters from the model (counters.py)
            return sim_counters.render_sonic_pfc_counters(self.name, sorted(self.db["PORT"], key=natural_key))
        if args == ["interfaces", "counters", "fec-stats"]:  # portstat -f (sim_ber)
            return self.show_fec_stats()
        if args == ["interfaces", "counters"]:  # portstat: per-port error counters (counters.py)
            return sim_counters.render_sonic_intf_counters(self.name, sorted(self.db["PORT"], key=natural_key))
        if args[:2] == ["queue", "counters"] and len(args) <= 3:
            if len(args) == 3 and args[2] not in self.db["PORT"]:
                return f"Cannot find interface {args[2]}"
            ports = [args[2]] if len(args) == 3 else sorted(self.db["PORT"], key=natural_key)
            return sim_counters.render_sonic_queue_counters(self.name, ports)
        if args[:3] == ["interfaces", "transceiver", "eeprom"]:
            return self.show_transceiver_eeprom(args[3:])
        if not args:
            return click_usage("show", "COMMAND [ARGS]...")
        return click_usage("show", "COMMAND [ARGS]...") + f'\nError: No such command "{args[0]}".'

    def show_transceiver_eeprom(self, args):
        """``show interfaces transceiver eeprom [-d|--dom] [<port>]`` (sfpshow): the modules of the
        ports (sim_optics); without ``--dom`` the monitor and threshold sections are left out."""
        dom = any(a in ("-d", "--dom") for a in args)
        names = [a for a in args if a not in ("-d", "--dom")]
        if len(names) > 1:
            return click_usage("show interfaces transceiver eeprom", "[OPTIONS] [INTERFACENAME]") + (f"\nError: Got unexpected extra argument ({names[1]})")
        if names and names[0] not in self.db["PORT"]:
            return f"Invalid interface name {names[0]}"
        ports = names or sorted(self.db["PORT"], key=natural_key)
        out = []
        for p in ports:
            text = sim_optics.render_sonic(p, self.optic(p))
            if not dom:
                text = text.split("        ChannelMonitorValues:")[0]
            out.append(text)
        return "\n".join(out)

    def show_fec_stats(self):
        """``show interfaces counters fec-stats`` (portstat -f) in the release's columns; before 202205 the
        subcommand does not exist (click's answer)."""
        release = self.release()
        if release not in sim_ber.SONIC_FEC_COLUMNS:
            return click_usage("show interfaces counters", "COMMAND [ARGS]...") + '\nError: No such command "fec-stats".'
        rows = []
        for p in sorted(self.db["PORT"], key=natural_key):
            e = self.db["PORT"][p]
            up = self.port_oper_up(p, e.get("admin_status", "down") == "up") if p in self.ports else False
            rows.append((p, sim_ber.state(self.name, p, int(e.get("speed", "400000")) // 1000, up)))
        return sim_ber.render_sonic(rows, release)

    def show_lldp_table(self):
        """``show lldp table`` (lldpshow): neighbours, then the entry count."""
        head = ("LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr")
        rows = [
            (p, nb["system_name"] or "", nb["port_id"] or "", "BR" if nb["port_id_type"] == "ifname" else "O", nb["port_descr"] or "")
            for p, nb in self.lldp_neighbors()
        ]
        widths = [max([len(head[i]) + 2] + [len(r[i]) for r in rows]) for i in range(len(head))]
        out = [
            "Capability codes: (R) Router, (B) Bridge, (O) Other",
            "  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(),
            "  ".join("-" * w for w in widths),
        ]
        out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        out += ["-" * 50, f"Total entries displayed:  {len(rows)}"]
        return "\n".join(out)

    def show_interfaces_status(self):
        head = ["Interface", "Lanes", "Speed", "MTU", "FEC", "Alias", "Vlan", "Oper", "Admin", "Type", "Asym PFC"]
        rows = []
        for p in sorted(self.db["PORT"], key=natural_key):
            e = self.db["PORT"][p]
            admin = e.get("admin_status", "down") == "up"
            up = self.port_oper_up(p, admin) if p in self.ports else False
            rows.append(
                [
                    p,
                    e.get("lanes", "N/A"),
                    f"{int(e.get('speed', '0')) // 1000}G",
                    e.get("mtu", "9100"),
                    e.get("fec", "N/A"),
                    e.get("alias", "N/A"),
                    "routed",
                    "up" if up else "down",
                    "up" if admin else "down",
                    "QSFP-DD Double Density 8X Pluggable Transceiver" if up else "N/A",
                    "off",
                ]
            )
        return tabulate(head, rows, right={1, 2, 3, 4, 5, 6, 7, 8, 9, 10})

    def show_pfc_priority(self, port):
        rows = []
        for p in sorted(self.db.get("PORT_QOS_MAP", {}), key=natural_key):
            if p == "global" or (port and p != port):
                continue
            rows.append([p, self.db["PORT_QOS_MAP"][p].get("pfc_enable", "N/A")])
        return "\n" + tabulate(["Interface", "Lossless priorities"], rows)

    def show_ecn(self):
        out = []
        for name in sorted(self.db.get("WRED_PROFILE", {})):
            fields = self.db["WRED_PROFILE"][name]
            w = max(len(k) for k in fields) if fields else 1
            v = max(len(x) for x in fields.values()) if fields else 1
            rule = f"{'-' * w}  {'-' * v}"
            out += [f"Profile: {name}", rule]
            out += [f"{k:<{w}}  {fields[k]:>{v}}" for k in fields]
            out += [rule, ""]
        return "\n".join(out)


def dump(db):
    """A CONFIG_DB as ``show runningconfiguration all`` and /etc/sonic/config_db.json hold it."""
    return json.dumps(db, indent=4, sort_keys=True)
