"""How the fabric intent's validation reports: a problem as ``key: value is not
allowed (allowed: ...)``, the value shown short, the formats of values that reach a
command line, and the checks of one value (type, range, choice, known keys).

Stdlib only; the intent's one base exception, IntentError, is defined here. The fabric intent (schema.py, cabling.py) and the role variables
(varcheck.py) report with them, so every message reads the same.
"""

import math
import re

REPR_MAX = 80


class IntentError(ValueError):
    """The intent, or the facts it is applied to, cannot give what is asked: the message names the key,
    the value and what is allowed. The base of the intent's errors (launchers.LayoutError,
    rails.PlanError, k8s_render.RenderError): the caller that reports them catches this one."""


# Per key, the format of a value that reaches a command line, a script, a
# file name or a switch: a safe ASCII character set (no whitespace, newline,
# quotes, `;` or other shell / CLI metacharacters) and a bounded length.
# name: (regex, what is allowed); matched with re.fullmatch and re.ASCII.
FORMATS = {
    "name": (r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", "1-64 of letters, digits, _ . -, starting with a letter or digit"),
    "device": (r"[a-z][a-z0-9_]{0,30}[0-9]", "an RDMA device name such as mlx5_0 (a-z 0-9 _, ending in a digit, at most 32)"),
    "netdev": (r"(?!\.{1,2}$)[A-Za-z0-9_.-]{1,15}", "a Linux interface name: 1-15 of letters, digits, _ . -"),
    "port": (
        r"[A-Za-z][A-Za-z0-9_./:-]{0,63}",
        "a port name such as swp1, Ethernet0 or Ethernet1/1 (1-64 of letters, digits, _ . / : -, starting with a letter)",
    ),
    "ifname_list": (r"\^?=?[A-Za-z0-9_.:-]{1,64}(,[A-Za-z0-9_.:-]{1,64}){0,15}", "an interface name or NCCL prefix list such as eth0 or ^lo,docker"),
    "nccl_value": (r"[A-Za-z0-9_.,:=^+/@-]{0,256}", "a string of at most 256 letters, digits and _ . , : = ^ + / @ -, or a finite number"),
    "pci": (r"([0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", "a PCI address such as 0000:41:00.0 (lower-case hex)"),
    "guid": (r"0x[0-9a-fA-F]{1,16}", "a port GUID such as 0xa088c20300000101"),
}


class Problems:
    """Collects problems as ``key: value is not allowed (allowed: ...)``."""

    def __init__(self):
        self.items = []

    def add(self, key, value, allowed):
        self.items.append(f"{key}: {show(value)} is not allowed ({allowed})")

    def note(self, message):
        self.items.append(message)


def show(value):
    """repr() of a value, cut to REPR_MAX characters (a 2,000-character name
    stays readable in the message)."""
    text = repr(value)
    if len(text) > REPR_MAX:
        text = text[: REPR_MAX - 3] + "..." + f" ({len(str(value))} characters)"
    return text


def has_format(value, fmt):
    """True when ``value`` is a string of format ``fmt`` (a key of FORMATS)."""
    return isinstance(value, str) and re.fullmatch(FORMATS[fmt][0], value, re.ASCII) is not None


def check_format(p, key, value, fmt):
    """``value`` has format ``fmt`` (a key of FORMATS), else a problem; True when it has."""
    if not has_format(value, fmt):
        p.add(key, value, "allowed: " + FORMATS[fmt][1])
        return False
    return True


def is_int(v):
    """An int; a bool is never one."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    """A finite int or float; a bool is never a number."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def int_in(p, key, value, lo, hi):
    """``value`` is an integer ``lo..hi``, else a problem; True when it is."""
    if not is_int(value) or not lo <= value <= hi:
        p.add(key, value, f"allowed: an integer {lo}..{hi}")
        return False
    return True


def same_kind(value, choice):
    """True is not 1, 400.0 is not 400; subclasses (Ansible's tagged str and
    int) are what they subclass."""
    if isinstance(choice, int):
        return is_int(value)
    return isinstance(value, type(choice))


def case_hint(value, choices):
    """``; names are case-sensitive: 'nvue', not 'NVUE'`` when ``value`` is one of the string
    ``choices`` written in another case, else ``''``."""
    if isinstance(value, str):
        for c in choices:
            if isinstance(c, str) and c != value and c.casefold() == value.casefold():
                return f"; names are case-sensitive: {c!r}, not {value!r}"
    return ""


def one_of(p, key, value, choices):
    """``value`` is one of ``choices`` and of its kind (``same_kind``), else a problem; True when it is."""
    if not any(same_kind(value, c) and value == c for c in choices):
        p.add(key, value, "allowed: " + " | ".join(str(c) for c in choices) + case_hint(value, choices))
        return False
    return True


def unknown_keys(p, prefix, given, known):
    """A problem for every key of ``given`` that is not in ``known``, with the keys allowed."""
    for key in sorted(set(given) - set(known), key=str):
        p.add(f"{prefix}.{key}" if prefix else key, given[key], "unknown key; allowed keys: " + ", ".join(sorted(known)))


def as_mapping(p, key, value, what="a mapping"):
    """``value`` if it is a mapping, else a problem and None."""
    if isinstance(value, dict):
        return value
    p.add(key, value, f"allowed: {what}")
    return None
