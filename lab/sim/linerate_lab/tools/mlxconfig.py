"""mlxconfig of MFT 4.26-4.30 (mstflint's mstconfig prints the same): the
layout of ``mlxcfg_ui.cpp`` before the 4.36 re-alignment — device header
``%-20s%-20s``, rows ``<*><RO>     %-44s`` with ``%-20s`` values.

    mlxconfig [-d <dev>] [-e] [-y] q|query [PARAM ...]
    mlxconfig -d <dev> [-y] s|set PARAM=VALUE ...
    mlxconfig -d <dev> [-y] r|reset [PARAM ...]

``set`` and ``reset`` write the NIC's ``next_boot`` configuration; it takes
effect through mlxfwreset or a reboot (see hardware.RESET_REQUIRED).
Exit codes are mlxCfgStatus: 0 ok, 2 aborted, 3 error.
"""

import sys

from . import common
from .. import grammar, hardware, model

OK, ABORTED, ERROR = 0, 2, 3
# the MFT release whose parameter database applies when the launcher names none (lab/packages.py passes it)
MFT_VERSION = "4.30.0-139"
_mft = [MFT_VERSION]
NEXT_BOOT = "Next Boot"


class CfgError(Exception):
    pass


def header(nic, dev, index):
    hw = hardware.CX7
    return (
        "\n"
        f"Device #{index}:\n"
        "----------\n\n"
        f"{'Device type:':<20}{hw['device_type']:<20}\n"
        f"{'Name:':<20}{hw['name']:<20}\n"
        f"{'Description:':<20}{hw['description']:<20}\n"
        f"{'Device:':<20}{dev:<20}\n"
        "\n"
    )


def conf_header(extended=False, new=False):
    if extended:
        return f"{'Configurations:':<20}{'Default':>44}{'Current':>20}{NEXT_BOOT:>18}\n"
    line = f"{'Configurations:':<20}{NEXT_BOOT:>46}"
    if new:
        line += "       New"
    return line + "\n"


def row(name, values, diff=" "):
    return f"{diff}       {name:<44}" + " ".join(f"{v:<20}" for v in values) + "\n"


def parse_value(param, text, like):
    """The printed form of a value the user gave (``2``, ``ETH``, ``True``...)."""
    names = hardware.ENUMS.get(param)
    if names is None and like.startswith(("True(", "False(")):
        names = hardware.BOOLEAN
    if names:
        lowered = {k.lower(): v for k, v in names.items()}
        if text.lower() in lowered:
            return hardware.spell(param, lowered[text.lower()], like)
        try:
            number = int(text, 0)
        except ValueError:
            raise CfgError(f"Unknown value {text}") from None
        if number not in names.values():
            raise CfgError(f"Unknown value {number}")
        return hardware.spell(param, number, like)
    if like.startswith("Array"):
        raise CfgError(f"{param} is not supported in Array parameters!")
    try:
        number = int(text, 0)
    except ValueError:
        raise CfgError(f"Unknown value {text}") from None
    if number < 0 or number > 0xFFFFFFFF:
        raise CfgError(f"Value {text} exceeds max allowed value(4 bytes)")
    return str(number)


def ordered(params):
    known = [p for p in hardware.PARAM_ORDER if p in params]
    return known + sorted(p for p in params if p not in hardware.PARAM_ORDER)


def check_params(fw, names):
    for name in names:
        # mstflint's parameter database first (mlxcfg_db_manager.cpp): a name it lacks is unknown to the
        # tool whatever the card; a known one the firmware does not expose is the device's refusal
        if grammar.mlxconfig_param(name, _mft[0]) is None:
            raise CfgError(f"Unknown Parameter: {name}")
        if name not in fw["next_boot"] or not hardware.visible(fw, name):
            raise CfgError(f"The Device doesn't support {name} parameter")


def query(nic, dev, index, names, extended):
    fw = nic["firmware"]
    text = header(nic, dev, index) + conf_header(extended)
    try:
        check_params(fw, names)
    except CfgError as e:
        return text, str(e)
    differ = False
    for name in names or [n for n in ordered(fw["next_boot"]) if hardware.visible(fw, n)]:
        nxt = fw["next_boot"][name]
        if extended:
            d, c = fw["default"].get(name, nxt), fw["current"].get(name, nxt)
            mark = "*" if (nxt != d or nxt != c) else " "
            differ |= mark == "*"
            text += row(name, [d, c, nxt], mark)
        else:
            text += row(name, [nxt])
    if differ:
        text += "The '*' shows parameters with next value different from default/current value.\n"
    return text, None


def ask(question, yes):
    common.out(f"\n {question} (y/n) [n] : ")
    if yes:
        common.out("y\n")
        return True
    sys.stdout.flush()
    answer = sys.stdin.readline().strip()
    return answer.lower() in ("y", "yes")


def parse_args(argv):
    opts = {"dev": "", "extended": False, "yes": False, "cmd": None, "args": []}
    i = 0
    while i < len(argv):
        a = argv[i]
        if opts["cmd"] is not None:
            opts["args"].append(a)
        elif a in ("-d", "--dev"):
            if i + 1 >= len(argv):
                raise CfgError("missing device name")
            opts["dev"] = argv[i + 1]
            i += 1
        elif a in ("-e", "--enable_verbosity"):
            opts["extended"] = True
        elif a in ("-y", "--yes"):
            opts["yes"] = True
        elif a in ("q", "query"):
            opts["cmd"] = "query"
        elif a in ("s", "set"):
            opts["cmd"] = "set"
        elif a in ("r", "reset"):
            opts["cmd"] = "reset"
        else:
            raise CfgError(f"invalid argument: {a}")
        i += 1
    if opts["cmd"] is None:
        raise CfgError("No command found. For more information please read the help message:")
    if opts["cmd"] == "set" and not opts["args"]:
        raise CfgError("missing configuration arguments. For more information please run mlxconfig -h|--help.")
    if opts["cmd"] == "set" and not opts["dev"]:
        raise CfgError("set command expects device to be specified.")
    return opts


def parse_set(args):
    pairs = {}
    for a in args:
        parts = a.split("=")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise CfgError(f"Invalid Configuration argument {a}")
        if parts[0] in pairs:
            raise CfgError(f"Duplicate parameter, {parts[0]}.")
        pairs[parts[0]] = parts[1]
    return pairs


def main(argv, mft=MFT_VERSION):
    _mft[0] = mft
    try:
        opts = parse_args(argv)
        pairs = parse_set(opts["args"]) if opts["cmd"] == "set" else {}
    except CfgError as e:
        common.out(f"-E- {e}\n")
        return ERROR
    if opts["cmd"] == "query":
        return do_query(opts)
    if opts["cmd"] == "set":
        return do_set(opts, pairs)
    return do_reset(opts)


def do_query(opts):
    _, node = common.load_node()
    if opts["dev"]:
        nic = common.resolve_mft_device(node, opts["dev"])
        if nic is None:
            common.out("-E- Failed to open the device\n")
            return ERROR
        targets = [(nic, opts["dev"])]
    else:
        nics = sorted(node["nics"], key=lambda n: n["pci"])
        if not nics:
            common.out("-E- No devices found, mst might be stopped. You may need to run 'mst start' to load MST modules. \n")
            return ERROR
        targets = [(n, n["pci"]) for n in nics]
    rc = OK
    for index, (nic, dev) in enumerate(targets, 1):
        text, error = query(nic, dev, index, opts["args"], opts["extended"])
        common.out(text)
        if error:
            common.out(f"-E- {error}\n")
            rc = ERROR
    return rc


def do_set(opts, pairs):
    with model.locked() as m:
        node = model.node(m)
        nic = common.resolve_mft_device(node, opts["dev"])
        if nic is None:
            common.out("-E- Failed to open the device\n")
            return ERROR
        fw = nic["firmware"]
        common.out(header(nic, opts["dev"], 1) + conf_header(new=True))
        try:
            check_params(fw, pairs)
            for p, v in pairs.items():
                entry, _port = grammar.mlxconfig_param(p, _mft[0])
                if not grammar.mlxconfig_value_ok(entry, v):  # mlxcfg_param.cpp parseValue
                    raise CfgError(f"Unknown value {v}")
            new = {p: parse_value(p, v, fw["next_boot"][p]) for p, v in pairs.items()}
        except CfgError as e:
            common.out(f"-E- {e}\n")
            return ERROR
        for p in pairs:
            common.out(row(p, [fw["next_boot"][p], new[p]]))
        if not ask("Apply new Configuration?", opts["yes"]):
            common.out("-E- Aborted by user.\n")
            return ABORTED
        common.out("Applying... ")
        fw["next_boot"].update(new)
        common.out("Done!\n-I- Please reboot machine to load new configurations.\n")
    return OK


def do_reset(opts):
    with model.locked() as m:
        node = model.node(m)
        if opts["dev"]:
            question = f"Reset configuration for device {opts['dev']}?"
            nic = common.resolve_mft_device(node, opts["dev"])
            targets = [nic]
        else:
            question = "Reset configuration for all devices?"
            targets = list(node["nics"])
        if not ask(question, opts["yes"]):
            common.out("-E- Aborted by user.\n")
            return ABORTED
        common.out("Applying... ")
        if any(t is None for t in targets):
            common.out("Failed!\n-E- Failed to open the device\n")
            return ERROR
        for nic in targets:
            fw = nic["firmware"]
            names = opts["args"] or list(fw["default"])
            for name in names:
                if name in fw["default"]:
                    fw["next_boot"][name] = fw["default"][name]
        common.out("Done!\n-I- Please reboot machine to load new configurations.\n")
    return OK
