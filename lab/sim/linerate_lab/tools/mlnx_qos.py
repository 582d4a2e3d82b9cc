"""mlnx_qos of mlnx-tools 23.10/24.10 (the dcbnl/netlink flavour DOCA-OFED
uses: trust follows the DSCP APP table): ``DCBX mode``, ``Priority trust
state``, ``dscp2prio mapping`` (dscp trust only), ``Receive buffer size``,
``Cable len``, ``PFC configuration`` with its ``buffer`` row, then one
``tc:`` block per traffic class in use. Every invocation, setting or not,
ends with that full dump, as the real tool does.

    mlnx_qos -i <netdev> [--trust pcp|dscp] [--pfc L] [--dscp2prio set,D,P|del,D,P|flush]
             [-p L] [-s L] [-t L] [-r L] [--cable_len N] [--prio2buffer L]
             [--buffer_size L] [-d os|fw] [-a]
"""

import optparse

from . import common
from .. import grammar, model


class Exit(Exception):
    def __init__(self, code):
        super().__init__(code)
        self.code = code


# the mlnx-tools release whose option table applies when the launcher names none (lab/packages.py passes it)
MLNX_TOOLS_VERSION = "24.10.0"
# what apply() reads; an option the installed release lacks stays None (optparse refuses it on the command line)
SIM_DESTS = (
    "pfc",
    "specific_pfc",
    "get_pfc",
    "prio_tc",
    "tsa",
    "tc_bw",
    "ratelimit",
    "dcbx",
    "trust",
    "dscp2prio",
    "cable_len",
    "prio2buffer",
    "buffer_size",
    "intf",
)


def parser(version=MLNX_TOOLS_VERSION):
    """The real script's OptionParser, built from its add_option() table for that release
    (linerate_lab/grammar/mlnx_qos.json, python/mlnx_qos of Mellanox/mlnx-tools): optparse itself
    refuses what the release does not have ("no such option", exit 2)."""
    p = optparse.OptionParser(usage="%prog -i <interface> [options]", version="%prog 1.2", prog="mlnx_qos")
    for o in grammar.mlnx_qos_options(version)["options"]:
        kw = {k: o[k] for k in ("dest", "action", "metavar", "default") if k in o}
        p.add_option(*o["flags"], **kw)
    p.set_defaults(**{d: None for d in SIM_DESTS if d not in p.defaults})
    return p


def usage_fail(p, text):
    common.out(text + "\n" + p.get_usage())
    raise Exit(1)


def parse_int(p, s, lo, hi, description):
    try:
        v = int(s)
        if v < lo or v > hi:
            raise ValueError("%d is not in the range %d..%d" % (v, lo, hi))
        return v
    except ValueError as e:
        usage_fail(p, "Bad value for %s: %s" % (description, e))


def items_of(text, too_many):
    """The comma-separated items of an option, at most 8 (more: mlnx_qos's ``too_many`` and exit 1)."""
    items = text.split(",")
    if len(items) > 8:
        common.out(too_many + "\n")
        raise Exit(1)
    return items


def eight(items, count_msg):
    """``items`` when there are 8 (one per priority or TC), else mlnx_qos's ``count_msg`` and exit 1."""
    if len(items) != 8:
        common.out(count_msg + "\n")
        raise Exit(1)
    return items


def parse_list(p, text, lo, hi, description, too_many, count_msg):
    return eight([parse_int(p, t, lo, hi, description) for t in items_of(text, too_many)], count_msg)


def dscp_lines(table):
    by_prio = [""] * 8
    for dscp in sorted(table, key=int, reverse=True):
        by_prio[table[dscp]] += "%02d," % int(dscp)
    out = ""
    for prio in range(8):
        s = by_prio[prio]
        pad = "\tprio:%d dscp:" % prio
        temp = ""
        while len(s) > 24:
            temp += pad + s[:24] + "\n"
            s = s[24:]
        if s:
            temp += pad + s
        if temp:
            out += temp + "\n"
    return out


def render(q, printall=False):
    text = "DCBX mode: " + ("OS controlled" if q["dcbx"] == "os" else "Firmware controlled") + "\n"
    text += "Priority trust state: " + q["trust"] + "\n"
    if q["trust"] == "dscp":
        text += "dscp2prio mapping:\n" + dscp_lines(q["dscp2prio"])
    text += "Receive buffer size (bytes): " + "".join("%1d," % b for b in q["buffer_size"]) + "max_buffer_size=%d\n" % q["max_buffer_size"]
    text += "Cable len: %d\n" % q["cable_len"]
    text += "PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n"
    text += "\tenabled     " + "".join("%1d   " % e for e in q["pfc"])
    text += "\n\tbuffer      " + "".join("%1d   " % b for b in q["prio2buffer"]) + "\n"
    tc2up = {tc: [] for tc in range(8)} if printall else {}
    for up, tc in enumerate(q["tc"]):
        tc2up.setdefault(tc, []).append(up)
    for tc in sorted(tc2up):
        rate = q["ratelimit"][tc]
        r = "%.1f Gbps" % (float(rate / 1000) / 1000) if rate > 0 else "unlimited"
        tsa = q["tsa"][tc]
        tsa_text = "ets, bw: %s%%" % q["tc_bw"][tc] if tsa == "ets" else tsa
        text += "tc: %d ratelimit: %s, tsa: %s\n" % (tc, r, tsa_text)
        for up in tc2up[tc]:
            text += "\t priority:  %s\n" % up
    return text


def not_supported():
    common.out(
        "Priority trust state is not supported on your system\n"
        "Buffers commands are not supported on your system\n"
        "ETS features are not supported on your system\n"
    )
    return 1


def main(argv, tools=MLNX_TOOLS_VERSION):
    p = parser(tools)
    try:
        options, args = p.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2
    try:
        if args:
            usage_fail(p, "Bad arguments")
        if options.intf is None:
            usage_fail(p, "Interface name is required")
        with model.locked() as m:
            node = model.node(m)
            nic = next((n for n in node["nics"] if n["netdev"] == options.intf), None)
            if nic is None or not common.loaded(node, "mlx5_core") or common.read_netdev(options.intf) is None:
                return not_supported()
            q = nic["qos"]
            apply(p, options, q)
            if options.get_pfc is not None:
                return 0
            if options.specific_pfc:
                return 0
            common.out(render(q, options.printall))
        return 0
    except Exit as e:
        return e.code


def apply(p, o, q):
    """The options on the port's QoS state ``q``, in the order mlnx_qos applies them (an error: Exit)."""
    if o.dcbx is not None:
        if o.dcbx in ("os", "fw"):
            q["dcbx"] = o.dcbx
        elif o.dcbx != "get":
            common.out("Invalid dcbx mode command. Refer to the help.\n")
            raise Exit(1)
    if o.cable_len:
        q["cable_len"] = parse_int(p, o.cable_len, 0, 0xFFFF, "cable_len")
    if _pfc(p, o, q):  # a read of one priority, or a change of some: nothing else runs
        return
    _trust(o, q)
    _buffers(p, o, q)
    if o.ratelimit:
        rates = parse_list(p, o.ratelimit, 0, 1000000, "ratelimit", "Too many items for ratelimit", "ratelimit must have 8 items")
        q["ratelimit"] = [r * 1000 * 1000 for r in rates]
    _ets(p, o, q)


def _pfc(p, o, q):
    """--get_pfc, --specific_pfc (both end the run: True) and --pfc."""
    if o.get_pfc is not None:
        index = int(o.get_pfc)
        if index not in range(8):
            common.out("pfc index must be in range of 0-7\n")
            raise Exit(1)
        common.out("%d\n" % q["pfc"][index])
        return True
    if o.specific_pfc:
        items = eight(o.specific_pfc.split(","), "pfc list must have 8 items")
        for prio, t in enumerate(items):
            if t != "x":
                if t not in ("0", "1"):
                    common.out("Bad value for 'PFC': %s\n" % t)
                    raise Exit(1)
                q["pfc"][prio] = int(t)
        return True
    if o.pfc:
        q["pfc"] = parse_list(p, o.pfc, 0, 1, "PFC", "Too many items for PFC", "pfc list must have 8 items")
    return False


def _trust(o, q):
    """--dscp2prio (set, del, flush) and --trust."""
    if o.dscp2prio and o.trust:
        common.out("trust and dscp2prio commands cannot be used at the same time.\n")
        raise Exit(1)
    if o.dscp2prio:
        ops = []
        for opt in o.dscp2prio:
            if opt == "flush":
                ops.append(("flush", None, None))
                continue
            try:
                action, dscp, prio = opt.split(",")
                dscp, prio = int(dscp), int(prio)
            except ValueError:
                common.out("Invalid dscp2prio command. Refer to the help.\n")
                raise Exit(1) from None
            if action not in ("set", "del") or dscp > 63 or prio > 7:
                raise Exit(1)
            ops.append((action, dscp, prio))
        table = q["dscp2prio"]
        for action, dscp, prio in ops:
            if action == "set":
                table[str(dscp)] = prio
            elif action == "del":
                if table.get(str(dscp)) == prio:
                    del table[str(dscp)]
            else:
                table.clear()
        q["trust"] = "dscp" if table else "pcp"
    if o.trust:
        if o.trust not in ("dscp", "pcp"):
            common.out("Invalid trust state command. Refer to the help.\n")
            raise Exit(1)
        if o.trust != q["trust"]:
            q["dscp2prio"] = {str(d): d >> 3 for d in range(64)} if o.trust == "dscp" else {}
            q["trust"] = o.trust


def _buffers(p, o, q):
    """--prio2buffer and --buffer_size."""
    if o.prio2buffer:
        for i, t in enumerate(items_of(o.prio2buffer, "Too many items for prio2buffer")):
            q["prio2buffer"][i] = parse_int(p, t, 0, 7, "prio buffer")
    if o.buffer_size:
        sizes = list(q["buffer_size"])
        for i, t in enumerate(items_of(o.buffer_size, "Too many items for buffer_size")):
            sizes[i] = int(t)
        if sum(sizes) > q["max_buffer_size"]:
            common.out("Buffers commands error\n")
            raise Exit(1)
        q["buffer_size"] = sizes


def _ets(p, o, q):
    """--tsa, --tcbw and --prio_tc, checked together (the ETS bandwidths sum to 100)."""
    tsa, tc_bw, prio_tc = list(q["tsa"]), list(q["tc_bw"]), list(q["tc"])
    if o.tsa:
        items = items_of(o.tsa, "Too many items for TSA")
        for i, t in enumerate(items):
            if t not in ("strict", "ets", "vendor"):
                usage_fail(p, str(("Bad TSA value: ", t)))
            tsa[i] = t
        eight(items, "tsa list must have 8 items")
    if o.tc_bw:
        items = items_of(o.tc_bw, "Too many items for ETS BW")
        for i, t in enumerate(items):
            bw = parse_int(p, t, 0, 100, "ETS BW")
            if tsa[i] != "ets" and bw != 0:
                usage_fail(p, "ETS BW for a strict/vendor TC must be 0")
            tc_bw[i] = bw
        eight(items, "tcbw list must have 8 items")
    if o.prio_tc:
        prio_tc = parse_list(p, o.prio_tc, 0, 7, "UP => TC mapping", "Too many items in UP => TC mapping", "prio_tc list must have 8 items")
    if o.tsa or o.tc_bw or o.prio_tc:
        if "ets" in tsa and sum(bw for bw, t in zip(tc_bw, tsa) if t == "ets") != 100:
            common.out("[Errno 22] Invalid argument\n")
            raise Exit(1)
        q["tsa"], q["tc_bw"], q["tc"] = tsa, tc_bw, prio_tc
