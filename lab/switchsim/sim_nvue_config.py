"""The NVUE simulator's revision texts (sim_nvue.py): ``nv config show -o commands`` and its YAML,
``nv config diff``, the checks ``nv config apply`` makes of a pending revision, and the options of
``nv config apply``.
"""

import re
import shlex

from simcore import kb, natural_key


def q(v):
    return v if re.fullmatch(r"[\w.,:/@+-]+", v) else shlex.quote(v)


def apply_options(rest):
    """The options of ``nv config apply``: {yes, no, confirm (seconds or None), rev, keep, status, reject},
    or the error NVUE prints for a bad one."""
    opts = {
        "yes": any(a in ("-y", "--y", "--assume-yes") for a in rest),
        "no": "--assume-no" in rest,
        "confirm": None,
        "rev": None,
        "keep": False,
        "status": False,
        "reject": False,
    }
    flags = {
        "--confirm-yes": "keep",
        "--confirm-no": "reject",  # --confirm-no: NVIDIA's NVUE tests (ngts
        "--confirm-status": "status",
    }  # ConfigConsts): reject now, roll back
    i = 0
    while i < len(rest):
        a = rest[i]
        if a == "--confirm":
            if i + 1 < len(rest) and re.fullmatch(r"\d+[smh]?", rest[i + 1]):
                opts["confirm"] = confirm_seconds(rest[i + 1])
                i += 1
            else:
                opts["confirm"] = 600  # the reference: "If you do not confirm within ten minutes"
            if opts["confirm"] <= 0:
                return f"Error: Invalid value for --confirm: {rest[i]}"
        elif a in flags:
            opts[flags[a]] = True
        elif re.fullmatch(r"\d+|applied|startup|empty", a) and opts["rev"] is None:
            opts["rev"] = a
        elif a not in ("-y", "--y", "--assume-yes", "--assume-no"):
            return f"Error: Invalid option: {a}"
        i += 1
    return opts


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


def confirm_seconds(v):
    """A ``--confirm`` time in seconds: a bare number is minutes (the NVUE reference's own example:
    ``--confirm 60`` is one hour); ``s``/``m``/``h`` suffixes take their unit."""
    n = int(re.match(r"\d+", v).group(0))
    return n * {"s": 1, "m": 60, "h": 3600}[v[-1]] if not v.isdigit() else n * 60
