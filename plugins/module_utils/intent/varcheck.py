"""The checks behind intent/variables.py's RULES: the Checker that collects one host's problems
(never showing a secret), the value checks ``fn(c, key, value) -> bool`` and their constructors
(integer, choice, fmt, path, url, listing, mapping, either, ...), the formats they use and the
rules several tables share. intent/rules_hosts.py and intent/rules_fabric.py build the tables
with them; intent/variables.py assembles RULES and validates a host.

Stdlib only (plus the sibling intent modules).
"""

import ipaddress
import re
from urllib.parse import urlsplit

from ansible_collections.linerate.fabric.plugins.module_utils.intent import infiniband, mpikey, nccl_tune, nccl_tuned
from ansible_collections.linerate.fabric.plugins.module_utils.intent.cabling import MOFED_SOURCES
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import LINK_SPEEDS_GBPS
from ansible_collections.linerate.fabric.plugins.module_utils.intent.nccl_env import debugging_allowed
from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import FORMATS, case_hint, is_num, show

SECRET = "'********'"
# Variables whose value is never shown (they carry a secret).
SECRETS = frozenset(
    (
        "ansible_password",
        "switch_password",
        "switch_fabric_password",
        "ansible_become_password",
        "ansible_ssh_pass",
        "ansible_become_pass",
        "switch_fabric_enable_secret",
    )
)
# Booleans: a real one, the integers 1 and 0 (an INI inventory's x=1), or one of
# these strings in any case (-e key=value gives strings). Anything else - 'maybe',
# '', 'y', 2 - is refused: Ansible's `| bool` reads an unknown string as false.
BOOL_TRUE = ("true", "yes", "on", "1")
BOOL_FALSE = ("false", "no", "off", "0")
BOOL_ALLOWED = "a boolean: true/false, yes/no, on/off, 1/0 (any case)"
# C0 controls (newline, carriage return, tab, NUL, ...), DEL, C1 controls and
# the Unicode line/paragraph separators: none of them belongs in a file line,
# an argv element or a login.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# Debian policy 5.6.1 (package names) and 5.6.12 (versions).
_PACKAGE = (r"[a-z0-9][a-z0-9+.-]{1,99}", "a Debian package name (a-z 0-9 + . -, at least 2, starting alphanumeric)")
_VERSION = (r"([0-9]{1,9}:)?[0-9][A-Za-z0-9.+~-]{0,63}", "a Debian version such as 24.10-1.1.4 (starts with a digit; letters, digits and . + ~ -)")
# POSIX shell variable names: the environment files are sourced by sh (set -a; .)
# and read by systemd's EnvironmentFile=; any other name is a command to sh.
_ENV_NAME = (r"[A-Za-z_][A-Za-z0-9_]{0,63}", "an environment variable name: letters, digits, _, not starting with a digit, at most 64")
_NCCL_NAME = (r"NCCL_[A-Z0-9_]{1,60}", "keys named NCCL_* (upper case, digits, _)")
_UNIT = (r"[A-Za-z0-9_.:@-]{1,64}", "a systemd unit name: 1-64 of letters, digits and _ . : @ -")
_PROFILE = (r"[A-Za-z][A-Za-z0-9_-]{0,31}", "a QoS object name: 1-32 of letters, digits, _ -, starting with a letter")
_MLX_NAME = (r"[A-Z][A-Za-z0-9_]{0,63}(\[[0-9]{1,4}(\.\.[0-9]{1,4})?\])?", "an mlxconfig parameter name such as LINK_TYPE_P1 or ROCE_CC_PRIO_MASK_P1")
_MLX_VALUE = (r"[A-Za-z0-9_.]{1,64}", "an mlxconfig value: a number or a name of letters, digits, _ .")
_PSID = (r"[A-Za-z0-9_]{1,16}", "a PSID such as MT_0000000838 (1-16 of letters, digits, _)")
_SUITE = (r"[A-Za-z0-9._/~+-]{1,64}", "an apt suite such as ./ or stable (letters, digits and . _ / ~ + -)")
_USER = (r"[A-Za-z0-9_][A-Za-z0-9_.@\\-]{0,63}", "a login name: 1-64 of letters, digits and _ . @ \\ -")
# Kernel module names as modprobe takes them and /sys/module/<name> shows them.
_KMOD = (r"[A-Za-z0-9_-]{1,56}", "a kernel module name such as mlx5_core (1-56 of letters, digits, _ -)")
_NCCL_SIZE = (r"[0-9]{1,12}[KMG]?", "a size as nccl-tests -b/-e read it: digits with an optional K, M or G")
_HOSTNAME = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
    r"(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?",
    re.ASCII,
)
# URLs: RFC 3986 characters less the quotes, brackets and backslash (the
# sources' one-line form puts options in [ ]); apt's own schemes.
_URL_CHARS = re.compile(r"[A-Za-z0-9._~:/?#@!$&()*+,;=%-]{1,2048}", re.ASCII)
APT_SCHEMES = ("http", "https", "file", "copy", "mirror+http", "mirror+https", "mirror+file", "tor+http", "tor+https")
KEY_SCHEMES = ("http", "https")
# MFRL reset levels mlxfwreset applies for the role (plugins/modules/mlxconfig.py).
RESET_LEVELS = (3, 4)
# PCIe Max_Read_Request_Size values (PCIe base specification, Device Control register).
MAX_READ_REQ = (128, 256, 512, 1024, 2048, 4096)
VERIFY_CHECKS = (
    "ports",
    "readiness",
    "cabling",
    "link_health",
    "ib_write_bw",
    "ib_send_bw",
    "ib_write_lat",
    "gpudirect",
    "incast",
    "nccl",
    "nccl_loopback",
    "nccl_scaling",
)
NCCL_TESTS = ("all_reduce_perf", "all_gather_perf")
# Variables schema.validate() checks itself (with the cabling).
BY_INTENT = frozenset(("mofed_source", "rdma_ports", "switch_platform", "switch_role", "switch_uplinks", "ib_switch_guid", "ansible_network_os", "fabric"))
# Checked once, from the play's variables (-e), not per host.
PLAY_VARS = ("audit_benchmarks",)
# The switch window, after commit and before confirm, sends at least a
# read-back, one post-check read (when post-checks run) and the confirm, each
# allowed up to command_timeout: the confirm timer must outlast them.
WINDOW_COMMANDS_AFTER_COMMIT = 3
CONFIRM_RANGE = (60, 3600)


def _shown(key, value):
    return SECRET if key in SECRETS else show(value)


class Checker:
    """Collects problems of one host; messages name the key, never a secret."""

    def __init__(self, who):
        self.who = who
        self.items = []

    def bad(self, key, value, allowed):
        prefix = f"{self.who}: " if self.who else ""
        self.items.append(f"{prefix}{key}: {_shown(key.split('.')[0].split('[')[0], value)} is not allowed (allowed: {allowed})")
        return False


# --- value checks: fn(c, key, value) -> bool --------------------------------


def as_int(value):
    """An int (not a bool), or a string of decimal digits (-e key=value); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,18}", value, re.ASCII):
        return int(value)
    return None


def as_bool(value):
    """True/False for a boolean as BOOL_* allow it, else None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        low = value.lower()
        if low in BOOL_TRUE:
            return True
        if low in BOOL_FALSE:
            return False
    return None


def boolean(c, key, value):
    return as_bool(value) is not None or c.bad(key, value, BOOL_ALLOWED)


def integer(lo, hi, why=""):
    def check(c, key, value):
        n = as_int(value)
        return (n is not None and lo <= n <= hi) or c.bad(key, value, f"an integer {lo}..{hi}{why}")

    return check


def choice(*values):
    def check(c, key, value):
        n = as_int(value) if all(isinstance(v, int) for v in values) else None
        ok = (n in values) if n is not None else (isinstance(value, str) and value in values)
        return ok or c.bad(key, value, " | ".join(map(str, values)) + case_hint(value, values))

    return check


def fmt(spec, empty=False):
    regex, allowed = spec

    def check(c, key, value):
        if empty and value == "":
            return True
        ok = isinstance(value, str) and re.fullmatch(regex, value, re.ASCII) is not None
        return ok or c.bad(key, value, allowed + (", or empty" if empty else ""))

    return check


def intent_format(name, empty=False):
    return fmt(FORMATS[name], empty)


def path(empty=False):
    """A path on the managed host: absolute, safe characters, no '..' (it reaches
    unit files, environment files and argv unquoted)."""
    allowed = "an absolute path of at most 255 letters, digits and _ . + / -, without .." + (", or empty" if empty else "")

    def check(c, key, value):
        if empty and value == "":
            return True
        ok = isinstance(value, str) and re.fullmatch(infiniband.PATH_RE, value, re.ASCII) is not None
        return ok or c.bad(key, value, allowed)

    return check


def text(max_len=1024, empty=True):
    """A string (or a finite number) with no control character, at most ``max_len``."""
    allowed = f"a string of at most {max_len} characters without control characters (newline, carriage return, tab, NUL)" + ("" if empty else ", not empty")

    def check(c, key, value):
        if isinstance(value, str):
            s = value
        elif is_num(value):
            s = str(value)
        else:
            return c.bad(key, value, allowed)
        if (not s and not empty) or len(s) > max_len or _CONTROL.search(s):
            return c.bad(key, value, allowed)
        return True

    return check


def local_path(empty=False):
    """A path on the controller (reports, backups, images): any characters but control ones."""
    return text(4096, empty=empty)


def _redacted(value):
    """A URL with its user:password@ part replaced, for messages."""
    return re.sub(r"//[^/@]*@", "//***@", value, count=1)


def url(schemes, empty=False):
    def check(c, key, value):
        if empty and value == "":
            return True
        allowed = (
            "a URL of scheme " + " | ".join(schemes) + ": at most 2048 characters, no whitespace, "
            "control character, quote, bracket or backslash" + (", or empty" if empty else "")
        )
        if not isinstance(value, str) or not _URL_CHARS.fullmatch(value):
            return c.bad(key, value if not isinstance(value, str) else _redacted(value), allowed)
        parts = urlsplit(value)
        scheme = parts.scheme.lower()
        local = scheme.endswith("file") or scheme == "copy"
        if scheme not in schemes or (not local and not parts.netloc) or (local and not parts.path.startswith("/")):
            return c.bad(key, _redacted(value), allowed)
        if "@" in parts.netloc:
            return c.bad(
                key,
                _redacted(value),
                "a URL without credentials: user:password@ would be written into "
                "a world-readable (0644) apt sources file and shown by --diff; put them in "
                "/etc/apt/auth.conf.d/<name>.conf (machine/login/password, mode 0600, apt_auth.conf(5))",
            )
        return True

    return check


def host_address(c, key, value):
    """ansible_host: an IP address or a DNS name."""
    if isinstance(value, str):
        try:
            ipaddress.ip_address(value)
            return True
        except ValueError:
            if _HOSTNAME.fullmatch(value) and not value.replace(".", "").isdigit():
                return True
    return c.bad(key, value, "an IP address or a DNS name (labels of letters, digits, _ -, at most 253)")


def listing(elem, min_len=0, max_len=4096, what="a list"):
    def check(c, key, value):
        if not isinstance(value, list) or not min_len <= len(value) <= max_len:
            return c.bad(key, value, f"{what} of {min_len}..{max_len} entries" if min_len else what)
        checked = [elem(c, f"{key}[{i}]", v) for i, v in enumerate(value)]  # every element, not the first bad
        return all(checked)

    return check


def mapping(key_rule, value_rule, what="a mapping"):
    def check(c, key, value):
        if not isinstance(value, dict):
            return c.bad(key, value, what)
        ok = True
        for k, v in value.items():
            if not key_rule(c, f"{key}.{str(k)[:64]}", k):
                ok = False
            elif not value_rule(c, f"{key}.{k}", v):
                ok = False
        return ok

    return check


def either(*rules, allowed):
    """The first rule that passes, else one problem with ``allowed``."""

    def check(c, key, value):
        for rule in rules:
            probe = Checker(c.who)
            if rule(probe, key, value):
                return True
        return c.bad(key, value, allowed)

    return check


def key_is(spec):
    regex, allowed = spec

    def check(c, key, k):
        ok = isinstance(k, str) and re.fullmatch(regex, k, re.ASCII) is not None
        return ok or c.bad(key, "(key)", allowed)

    return check


def nccl_value(c, key, value):
    if isinstance(value, str):
        return intent_format("nccl_value")(c, key, value)
    return is_num(value) or c.bad(key, value, FORMATS["nccl_value"][1])


def number(lo, hi, why=""):
    """A finite number (int or float, or its decimal text from -e), never a bool, within lo..hi."""

    def check(c, key, value):
        n = value
        if isinstance(value, str) and re.fullmatch(r"[0-9]{1,9}(\.[0-9]{1,9})?", value, re.ASCII):
            n = float(value)
        ok = is_num(n) and lo <= n <= hi
        return ok or c.bad(key, value, f"a number {lo:g}..{hi:g}{why}")

    return check


def nccl_tune_candidate(c, key, value):
    """One of verify_fabric_nccl_tune_candidates: {algorithm, protocol} NCCL and its tuner plugin know."""
    problem = nccl_tune.candidate_problem(value)
    allowed = f"{problem}; allowed: {{algorithm: {' | '.join(nccl_tune.ALGOS_PAT)}, protocol: {' | '.join(nccl_tune.PROTOS)}}}"
    return problem is None or c.bad(key, value, allowed)


def nccl_tune_scales(c, key, value):
    """verify_fabric_nccl_tune_scales: empty (2 and all nodes) or two or more distinct node counts >= 2."""
    counts = [as_int(v) for v in value] if isinstance(value, list) else None
    ok = counts is not None and (not counts or (len(counts) >= 2 and None not in counts and min(counts) >= 2 and len(set(counts)) == len(counts)))
    return ok or c.bad(key, value, "empty (2 and all nodes) or a list of two or more distinct node counts, each >= 2 (a winner must hold at two scales)")


def shape(kind, what):
    def check(c, key, value):
        return isinstance(value, kind) or c.bad(key, value, what)

    return check


def mpi_from(c, key, value):
    try:
        mpikey.from_patterns(value, resolve=None)
        return True
    except ValueError as e:
        return c.bad(key, value, str(e).split("(allowed: ", 1)[-1].rstrip(")"))


def _list_of_mappings(c, key, value, keys, list_what, entry_what, entry):
    """A list whose every entry is a mapping of ``keys`` (an unknown key named), each checked by
    ``entry(c, key_of_entry, entry)``; every bad entry reported, not the first."""
    if not isinstance(value, list):
        return c.bad(key, value, list_what)
    ok = True
    for i, item in enumerate(value):
        k = f"{key}[{i}]"
        if not isinstance(item, dict):
            ok = c.bad(k, item, entry_what)
            continue
        for extra in sorted(set(item) - set(keys), key=str):
            ok = c.bad(f"{k}.{extra}", item[extra], "unknown key; allowed keys: " + ", ".join(keys))
        ok = entry(c, k, item) and ok
    return ok


def _extra_port(c, k, port):
    ok = intent_format("port")(c, f"{k}.name", port.get("name"))
    if "peer" in port:
        ok = text(253)(c, f"{k}.peer", port["peer"]) and ok
    if "speed_gbps" in port:
        ok = choice(*LINK_SPEEDS_GBPS)(c, f"{k}.speed_gbps", port["speed_gbps"]) and ok
    return ok


def extra_ports(c, key, value):
    return _list_of_mappings(
        c, key, value, ("name", "peer", "speed_gbps"), "a list of {name, peer, speed_gbps}", "a mapping with name, peer, speed_gbps", _extra_port
    )


def _device(c, k, dev):
    ok = intent_format("pci")(c, f"{k}.pci", dev.get("pci"))
    if "params" in dev:
        ok = MLX_PARAMS(c, f"{k}.params", dev["params"]) and ok
    return ok


def devices(c, key, value):
    return _list_of_mappings(c, key, value, ("params", "pci"), "a list of {pci, params}", "a mapping with pci and params", _device)


def meta_packages(c, key, value):
    if not isinstance(value, dict):
        return c.bad(key, value, "a mapping of source (doca, mlnx_ofed) to {name, version}")
    ok = True
    for src, pkg in value.items():
        k = f"{key}.{str(src)[:64]}"
        if src not in MOFED_SOURCES:
            ok = c.bad(k, "(key)", "doca | mlnx_ofed")
        elif not isinstance(pkg, dict) or set(pkg) != {"name", "version"}:
            ok = c.bad(k, pkg, "a mapping with name and version")
        else:
            ok = fmt(_PACKAGE)(c, f"{k}.name", pkg["name"]) and ok
            ok = fmt(_VERSION)(c, f"{k}.version", pkg["version"]) and ok
    return ok


def restart_command(c, key, value):
    if not isinstance(value, list) or not value:
        return c.bad(key, value, "a non-empty argv list, the program an absolute path")
    ok = path()(c, f"{key}[0]", value[0])
    return all([ok] + [text(256, empty=False)(c, f"{key}[{i}]", v) for i, v in enumerate(value[1:], 1)])


MLX_PARAMS = mapping(
    key_is(_MLX_NAME),
    either(lambda c, k, v: isinstance(v, bool) or is_num(v), fmt(_MLX_VALUE), lambda c, k, v: v is None, allowed=_MLX_VALUE[1] + ", a number or a boolean"),
)
ENV_MAP = mapping(key_is(_ENV_NAME), text(4096))


def nccl_setting(c, key, value):
    """An override's value, its name not one of NCCL's Debugging section (never in /etc/nccl.conf)."""
    name = key.rsplit(".", 1)[-1]
    if name in nccl_tuned.DEBUGGING_VARIABLES:
        return c.bad(key, value, debugging_allowed(name))
    return nccl_value(c, key, value)


NCCL_OVERRIDES = mapping(key_is(_NCCL_NAME), nccl_setting)
GID_INDEX = either(fmt((r"", "")), integer(0, 255), allowed="empty (discovered) or a GID index 0..255")
ARGV = listing(text(256, empty=False), what="a list of arguments")
PACKAGES = listing(fmt(_PACKAGE), what="a list of Debian package names")
ANY_DICT = shape(dict, "a mapping")
ANY_LIST = shape(list, "a list")
