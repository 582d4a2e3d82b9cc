"""Role and connection variables: a rule for every variable that reaches a
file, a command or a connection, checked with the intent before any contact.

``RULES`` maps each variable name (every option of every role's
``meta/argument_specs.yml``, Ansible's connection variables the switch role
reads, and the playbook switch ``audit_benchmarks``) to a check.
``validate_host(name, values)`` returns the problems of one host's variables
as ``<host>: <key>: <value> is not allowed (allowed: ...)``; secrets are
never shown. Only values the operator wrote are checked (inventory, -e):
a role's own defaults are known good.

Stdlib only (plus the sibling intent modules).
"""
import ipaddress
import re
from urllib.parse import urlsplit

from ansible_collections.linerate.fabric.plugins.module_utils.intent import fabric as intent
from ansible_collections.linerate.fabric.plugins.module_utils.intent import infiniband as intent_ib
from ansible_collections.linerate.fabric.plugins.module_utils.intent import k8s_render
from ansible_collections.linerate.fabric.plugins.module_utils.intent import mpikey
from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tune

SECRET = "'********'"
# Variables whose value is never shown (they carry a secret).
SECRETS = frozenset(("ansible_password", "switch_password", "switch_fabric_password", "ansible_become_password",
                     "ansible_ssh_pass", "ansible_become_pass", "switch_fabric_enable_secret"))
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
_VERSION = (r"([0-9]{1,9}:)?[0-9][A-Za-z0-9.+~-]{0,63}",
            "a Debian version such as 24.10-1.1.4 (starts with a digit; letters, digits and . + ~ -)")
# POSIX shell variable names: the environment files are sourced by sh (set -a; .)
# and read by systemd's EnvironmentFile=; any other name is a command to sh.
_ENV_NAME = (r"[A-Za-z_][A-Za-z0-9_]{0,63}", "an environment variable name: letters, digits, _, not starting "
             "with a digit, at most 64")
_NCCL_NAME = (r"NCCL_[A-Z0-9_]{1,60}", "keys named NCCL_* (upper case, digits, _)")
_UNIT = (r"[A-Za-z0-9_.:@-]{1,64}", "a systemd unit name: 1-64 of letters, digits and _ . : @ -")
_PROFILE = (r"[A-Za-z][A-Za-z0-9_-]{0,31}", "a QoS object name: 1-32 of letters, digits, _ -, starting with a letter")
_MLX_NAME = (r"[A-Z][A-Z0-9_]{0,63}(\[[0-9]{1,4}(\.\.[0-9]{1,4})?\])?",
             "an mlxconfig parameter name such as LINK_TYPE_P1 or ROCE_CC_PRIO_MASK_P1")
_MLX_VALUE = (r"[A-Za-z0-9_.]{1,64}", "an mlxconfig value: a number or a name of letters, digits, _ .")
_PSID = (r"[A-Za-z0-9_]{1,16}", "a PSID such as MT_0000000838 (1-16 of letters, digits, _)")
_SUITE = (r"[A-Za-z0-9._/~+-]{1,64}", "an apt suite such as ./ or stable (letters, digits and . _ / ~ + -)")
_USER = (r"[A-Za-z0-9_][A-Za-z0-9_.@\\-]{0,63}", "a login name: 1-64 of letters, digits and _ . @ \\ -")
# Kernel module names as modprobe takes them and /sys/module/<name> shows them.
_KMOD = (r"[A-Za-z0-9_-]{1,56}", "a kernel module name such as mlx5_core (1-56 of letters, digits, _ -)")
_NCCL_SIZE = (r"[0-9]{1,12}[KMG]?", "a size as nccl-tests -b/-e read it: digits with an optional K, M or G")
_HOSTNAME = re.compile(r"(?=.{1,253}$)[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
                       r"(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?", re.ASCII)
# URLs: RFC 3986 characters less the quotes, brackets and backslash (the
# sources' one-line form puts options in [ ]); apt's own schemes.
_URL_CHARS = re.compile(r"[A-Za-z0-9._~:/?#@!$&()*+,;=%-]{1,2048}", re.ASCII)
APT_SCHEMES = ("http", "https", "file", "copy", "mirror+http", "mirror+https", "mirror+file", "tor+http", "tor+https")
KEY_SCHEMES = ("http", "https")
# MFRL reset levels mlxfwreset applies for the role (plugins/modules/mlxconfig.py).
RESET_LEVELS = (3, 4)
# PCIe Max_Read_Request_Size values (PCIe base specification, Device Control register).
MAX_READ_REQ = (128, 256, 512, 1024, 2048, 4096)
VERIFY_CHECKS = ("ports", "readiness", "cabling", "link_health", "ib_write_bw", "ib_send_bw", "ib_write_lat",
                 "incast", "nccl")
NCCL_TESTS = ("all_reduce_perf", "all_gather_perf")
# Variables intent.validate() checks itself (with the cabling).
BY_INTENT = frozenset(("mofed_source", "rdma_ports", "switch_platform", "switch_role", "switch_uplinks",
                       "ib_switch_guid", "ansible_network_os", "fabric"))
# Checked once, from the play's variables (-e), not per host.
PLAY_VARS = ("audit_benchmarks",)
# The switch window, after commit and before confirm, sends at least a
# read-back, one post-check read (when post-checks run) and the confirm, each
# allowed up to command_timeout: the confirm timer must outlast them.
WINDOW_COMMANDS_AFTER_COMMIT = 3
CONFIRM_RANGE = (60, 3600)


def _shown(key, value):
    return SECRET if key in SECRETS else intent.show(value)


class Checker:
    """Collects problems of one host; messages name the key, never a secret."""

    def __init__(self, who):
        self.who = who
        self.items = []

    def bad(self, key, value, allowed):
        prefix = f"{self.who}: " if self.who else ""
        self.items.append(f"{prefix}{key}: {_shown(key.split('.')[0].split('[')[0], value)} "
                          f"is not allowed (allowed: {allowed})")
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
        return ok or c.bad(key, value, " | ".join(map(str, values)))
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
    return fmt(intent.FORMATS[name], empty)


def path(empty=False):
    """A path on the managed host: absolute, safe characters, no '..' (it reaches
    unit files, environment files and argv unquoted)."""
    allowed = "an absolute path of at most 255 letters, digits and _ . + / -, without .." + (
        ", or empty" if empty else "")

    def check(c, key, value):
        if empty and value == "":
            return True
        ok = isinstance(value, str) and re.fullmatch(intent_ib.PATH_RE, value, re.ASCII) is not None
        return ok or c.bad(key, value, allowed)
    return check


def text(max_len=1024, empty=True):
    """A string (or a finite number) with no control character, at most ``max_len``."""
    allowed = (f"a string of at most {max_len} characters without control characters "
               "(newline, carriage return, tab, NUL)" + ("" if empty else ", not empty"))

    def check(c, key, value):
        if isinstance(value, str):
            s = value
        elif intent._is_num(value):
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
        allowed = ("a URL of scheme " + " | ".join(schemes) + ": at most 2048 characters, no whitespace, "
                   "control character, quote, bracket or backslash" + (", or empty" if empty else ""))
        if not isinstance(value, str) or not _URL_CHARS.fullmatch(value):
            return c.bad(key, value if not isinstance(value, str) else _redacted(value), allowed)
        parts = urlsplit(value)
        scheme = parts.scheme.lower()
        local = scheme.endswith("file") or scheme == "copy"
        if scheme not in schemes or (not local and not parts.netloc) or (local and not parts.path.startswith("/")):
            return c.bad(key, _redacted(value), allowed)
        if "@" in parts.netloc:
            return c.bad(key, _redacted(value), "a URL without credentials: user:password@ would be written into "
                         "a world-readable (0644) apt sources file and shown by --diff; put them in "
                         "/etc/apt/auth.conf.d/<name>.conf (machine/login/password, mode 0600, apt_auth.conf(5))")
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
        checked = [elem(c, f"{key}[{i}]", v) for i, v in enumerate(value)]   # every element, not the first bad
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
    return intent._is_num(value) or c.bad(key, value, intent.FORMATS["nccl_value"][1])


def number(lo, hi, why=""):
    """A finite number (int or float, or its decimal text from -e), never a bool, within lo..hi."""
    def check(c, key, value):
        n = value
        if isinstance(value, str) and re.fullmatch(r"[0-9]{1,9}(\.[0-9]{1,9})?", value, re.ASCII):
            n = float(value)
        ok = intent._is_num(n) and lo <= n <= hi
        return ok or c.bad(key, value, f"a number {lo:g}..{hi:g}{why}")
    return check


def nccl_tune_values(c, key, value):
    """verify_fabric_nccl_tune_values: {swept key: [values]}; every value as NCCL reads it."""
    allowed = ("a mapping of " + " | ".join(nccl_tune.KEYS) + " to a list of 1..8 values each: "
               "NCCL_ALGO " + ", ".join(nccl_tune.ALGOS_PAT) + "; NCCL_PROTO " + ", ".join(nccl_tune.PROTOS)
               + "; NCCL_BUFFSIZE bytes %d..%d; NCCL_NTHREADS a multiple of 32 in %d..%d; NCCL_NET_GDR_LEVEL %s"
               % (*nccl_tune.BUFFSIZE_RANGE, *nccl_tune.NTHREADS_RANGE, " | ".join(nccl_tune.GDR_LEVELS)))
    if not isinstance(value, dict) or not value:
        return c.bad(key, value, allowed)
    ok = True
    for name, values in value.items():
        if name not in nccl_tune.KEYS:
            ok = c.bad(f"{key}.{str(name)[:64]}", "(key)", allowed)
            continue
        if not isinstance(values, list) or not 1 <= len(values) <= 8:
            ok = c.bad(f"{key}.{name}", values, allowed)
            continue
        for i, v in enumerate(values):
            problem = nccl_tune.value_problem(name, v)
            if problem:
                ok = c.bad(f"{key}.{name}[{i}]", v, f"{problem}; {allowed}")
    return ok


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


def extra_ports(c, key, value):
    known = ("name", "peer", "speed_gbps")
    if not isinstance(value, list):
        return c.bad(key, value, "a list of {name, peer, speed_gbps}")
    ok = True
    for i, port in enumerate(value):
        k = f"{key}[{i}]"
        if not isinstance(port, dict):
            ok = c.bad(k, port, "a mapping with name, peer, speed_gbps")
            continue
        for extra in sorted(set(port) - set(known), key=str):
            ok = c.bad(f"{k}.{extra}", port[extra], "unknown key; allowed keys: " + ", ".join(known))
        ok = intent_format("port")(c, f"{k}.name", port.get("name")) and ok
        if "peer" in port:
            ok = text(253)(c, f"{k}.peer", port["peer"]) and ok
        if "speed_gbps" in port:
            ok = choice(*intent.LINK_SPEEDS_GBPS)(c, f"{k}.speed_gbps", port["speed_gbps"]) and ok
    return ok


def devices(c, key, value):
    if not isinstance(value, list):
        return c.bad(key, value, "a list of {pci, params}")
    ok = True
    for i, dev in enumerate(value):
        k = f"{key}[{i}]"
        if not isinstance(dev, dict):
            ok = c.bad(k, dev, "a mapping with pci and params")
            continue
        for extra in sorted(set(dev) - {"pci", "params"}, key=str):
            ok = c.bad(f"{k}.{extra}", dev[extra], "unknown key; allowed keys: params, pci")
        ok = intent_format("pci")(c, f"{k}.pci", dev.get("pci")) and ok
        if "params" in dev:
            ok = MLX_PARAMS(c, f"{k}.params", dev["params"]) and ok
    return ok


def meta_packages(c, key, value):
    if not isinstance(value, dict):
        return c.bad(key, value, "a mapping of source (doca, mlnx_ofed) to {name, version}")
    ok = True
    for src, pkg in value.items():
        k = f"{key}.{str(src)[:64]}"
        if src not in intent.MOFED_SOURCES:
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


MLX_PARAMS = mapping(key_is(_MLX_NAME), either(
    lambda c, k, v: isinstance(v, bool) or intent._is_num(v), fmt(_MLX_VALUE), lambda c, k, v: v is None,
    allowed=_MLX_VALUE[1] + ", a number or a boolean"))
ENV_MAP = mapping(key_is(_ENV_NAME), text(4096))
NCCL_OVERRIDES = mapping(key_is(_NCCL_NAME), nccl_value)
GID_INDEX = either(fmt((r"", "")), integer(0, 255), allowed="empty (discovered) or a GID index 0..255")
ARGV = listing(text(256, empty=False), what="a list of arguments")
PACKAGES = listing(fmt(_PACKAGE), what="a list of Debian package names")
ANY_DICT = shape(dict, "a mapping")
ANY_LIST = shape(list, "a list")

# Every variable with its rule. Derived values (set from others by the
# roles' defaults) keep a shape rule: overriding them is allowed but unusual.
RULES = {
    # role mofed (mofed_source: intent.validate_cabling, with the reason inbox is rejected)
    "mofed_version": fmt(_VERSION),
    "mofed_doca_version": fmt(_VERSION),
    "mofed_repo_url": url(APT_SCHEMES),
    "mofed_repo_suite": fmt(_SUITE),
    "mofed_repo_signed_by": path(),
    "mofed_repo_key_url": url(KEY_SCHEMES, empty=True),
    "mofed_repo_trusted": boolean,
    "mofed_meta_package_by_source": meta_packages,
    "mofed_kernel_package_by_source": mapping(choice(*intent.MOFED_SOURCES), fmt(_PACKAGE, empty=True)),
    "mofed_kernel_package": fmt(_PACKAGE, empty=True),
    "mofed_hold_packages": PACKAGES,
    "mofed_hold": boolean,
    "mofed_allow_driver_restart": boolean,
    "mofed_driver_restart_command": restart_command,
    "mofed_reachability_timeout": integer(1, 3600, " seconds"),
    "mofed_driver_modules": listing(fmt(_KMOD), min_len=1, what="a list of kernel module names, the first the one whose "
                                    "installed and loaded versions are compared (mlx5_core)"),
    "mofed_driver_dependents": listing(fmt(_KMOD), what="a list of kernel module names"),
    "mofed_sysfs": path(),
    # role nccl_env
    "nccl_env_ports": ANY_LIST,
    "nccl_env_down_ports": choice("fail", "exclude"),
    "nccl_env_wait_up": integer(0, 3600, " seconds"),
    "nccl_env_transport": choice(*intent.TRANSPORTS),
    "nccl_env_socket_ifname": intent_format("ifname_list"),
    "nccl_env_gdr_level": choice(*intent.NCCL_GDR_LEVELS),
    "nccl_env_ib_tc": either(lambda c, k, v: v is None or v == "", integer(0, 255),
                             allowed="empty or a traffic class 0..255"),
    "nccl_env_gid_index": GID_INDEX,
    "nccl_env_net": intent_format("nccl_value"),
    "nccl_env_overrides": NCCL_OVERRIDES,
    "nccl_env_tuned_file": local_path(),
    "nccl_env_conf_path": path(),
    "nccl_env_env_file": path(),
    "nccl_env_profile_script": path(),
    # role ib_subnet_manager
    "ib_subnet_manager_intent": ANY_DICT,
    "ib_subnet_manager_group": intent_format("name"),
    "ib_subnet_manager_master": intent_format("name"),
    "ib_subnet_manager_priority": integer(0, 15),
    "ib_subnet_manager_routing_engine": choice(*intent_ib.ROUTING_ENGINES),
    "ib_subnet_manager_lmc": integer(0, 7),
    "ib_subnet_manager_sweep_interval": integer(0, 86400, " seconds"),
    "ib_subnet_manager_log_file": path(),
    "ib_subnet_manager_log_max_size_mb": integer(0, 1048576),
    "ib_subnet_manager_log_flags": integer(0, 255),
    "ib_subnet_manager_log_verbose": boolean,
    "ib_subnet_manager_default_partition_ipoib": boolean,
    "ib_subnet_manager_default_partition_membership": choice(*intent_ib.MEMBERSHIPS),
    "ib_subnet_manager_port_guid": intent_format("guid"),
    "ib_subnet_manager_install_packages": boolean,
    "ib_subnet_manager_packages": PACKAGES,
    "ib_subnet_manager_disable_packaged_service": boolean,
    "ib_subnet_manager_config_dir": path(),
    "ib_subnet_manager_state_dir": path(),
    "ib_subnet_manager_dump_dir": path(),
    "ib_subnet_manager_env_file": path(),
    "ib_subnet_manager_service_name": fmt(_UNIT),
    "ib_subnet_manager_service_manager": choice("auto", "systemd", "pidfile"),
    "ib_subnet_manager_pid_file": path(),
    "ib_subnet_manager_ctl_path": path(),
    "ib_subnet_manager_environment": ENV_MAP,
    "ib_subnet_manager_wait_master": boolean,
    "ib_subnet_manager_wait_timeout": integer(1, 3600, " seconds"),
    "ib_subnet_manager_check_fail": boolean,
    "ib_subnet_manager_link_width": choice(*intent.LINK_WIDTHS),
    "ib_subnet_manager_link_speed_gbps": choice(*intent.LINK_SPEEDS_GBPS),
    "ib_subnet_manager_report": local_path(empty=True),
    # fabric.verify.ib_error_thresholds (intent.py validates the same): counter -> count a port may show
    "ib_subnet_manager_error_thresholds": mapping(choice(*intent.IB_ERROR_COUNTERS), integer(0, 2 ** 64 - 1),
                                                  "a mapping of PortCounters error counter -> an integer >= 0"),
    # role connectx_firmware
    "connectx_firmware_devices": devices,
    "connectx_firmware_ports": ANY_LIST,
    "connectx_firmware_link_type": choice("ETH", "IB"),
    "connectx_firmware_params": MLX_PARAMS,
    "connectx_firmware_profile": choice(*intent.FIRMWARE_PROFILES),
    "connectx_firmware_roce_params": MLX_PARAMS,
    "connectx_firmware_extra_params": MLX_PARAMS,
    "connectx_firmware_allow_reset": boolean,
    "connectx_firmware_reset_level": choice(*RESET_LEVELS),
    "connectx_firmware_allow_reboot": boolean,
    "connectx_firmware_reboot_timeout": integer(60, 7200, " seconds"),
    "connectx_firmware_reconnect_timeout": integer(1, 3600, " seconds"),
    "connectx_firmware_cold_reboot_params": listing(fmt(_MLX_NAME)),
    "connectx_firmware_reboot_params": listing(fmt(_MLX_NAME)),
    "connectx_firmware_allow_update": boolean,
    "connectx_firmware_image": local_path(empty=True),
    "connectx_firmware_image_on_host": boolean,
    "connectx_firmware_image_psid": fmt(_PSID, empty=True),
    "connectx_firmware_image_dir": path(),
    "connectx_firmware_allow_downgrade": boolean,
    # role host_disruption (drain/undrain hooks around disruptive host actions)
    "host_disruption_drain_command": ARGV,
    "host_disruption_drain_on": choice("controller", "node"),
    "host_disruption_undrain_command": ARGV,
    "host_disruption_undrain_on": choice("controller", "node"),
    "host_disruption_drain_tasks": local_path(empty=True),
    "host_disruption_undrain_tasks": local_path(empty=True),
    "host_disruption_hook_timeout": integer(1, 86400, " seconds"),
    "host_disruption_force": boolean,
    "host_disruption_sysfs": path(),
    "host_disruption_action": choice("driver_restart", "firmware_reset", "netdev_change", "reboot"),
    "host_disruption_targets": ANY_LIST,
    # role nvidia_peermem
    "nvidia_peermem_state": choice("present", "absent"),
    "nvidia_peermem_modules_load_file": path(),
    "nvidia_peermem_rebuild_dkms": boolean,
    "nvidia_peermem_dkms_package": fmt(_PACKAGE),
    # role rdma_netdev
    "rdma_netdev_ports": ANY_LIST,
    "rdma_netdev_exclusive": boolean,
    "rdma_netdev_persist": boolean,
    "rdma_netdev_rail_dir": path(),
    # role roce_qos
    "roce_qos_ports": ANY_LIST,
    "roce_qos_trust": choice(*intent.TRUST_MODES),
    "roce_qos_pfc_priorities": listing(integer(0, 7), max_len=8, what="a list of priorities 0..7"),
    "roce_qos_dscp2prio": mapping(integer(0, 63), integer(0, 7), "a mapping of DSCP 0..63 to priority 0..7"),
    "roce_qos_no_drop_priority": integer(0, 7),
    "roce_qos_cnp_dscp": integer(0, 63),
    "roce_qos_cnp_priority": integer(0, 7),
    "roce_qos_ecn_enabled": boolean,
    "roce_qos_manage_ecn": boolean,
    "roce_qos_sysfs_net": path(),
    "roce_qos_roce_mode": choice("v1", "v2"),
    "roce_qos_tos": integer(0, 255),
    "roce_qos_mtu": integer(1280, 9216),
    "roce_qos_persist": boolean,
    "roce_qos_mtu_change": choice("any", "lower", "raise"),
    "roce_qos_rail_dir": path(),
    # role switch_fabric (connection values come from Ansible's variables below)
    "switch_fabric_platform": choice(*intent.SWITCH_PLATFORMS),
    "switch_fabric_host": host_address,
    "switch_fabric_port": integer(1, 65535, " (a TCP port)"),
    "switch_fabric_username": fmt(_USER),
    "switch_fabric_password": text(1024),
    "switch_fabric_enable_secret": text(1024),
    "switch_fabric_private_key_file": text(4096),
    "switch_fabric_known_hosts": text(4096),
    "switch_fabric_ssh_config_file": text(4096),
    "switch_fabric_host_key_checking": boolean,
    "switch_fabric_connect_timeout": integer(1, 300, " seconds"),
    "switch_fabric_command_timeout": integer(1, 1200, " seconds"),
    "switch_fabric_connection": ANY_DICT,
    "switch_fabric_backup": boolean,
    "switch_fabric_backup_dir": local_path(),
    "switch_fabric_confirm_timeout": integer(*CONFIRM_RANGE, " seconds"),
    "switch_fabric_post_checks": boolean,
    "switch_fabric_require_ports_up": boolean,
    "switch_fabric_templates_dir": local_path(),
    "switch_fabric_profile": fmt(_PROFILE),
    # Lossless headroom and the PFC watchdog (module_utils/switch/buffers.py: sonic-pfcwd.yang's ranges)
    "switch_fabric_cable_length": fmt((r"[1-9][0-9]{0,3}m", "a cable length in metres, 1m..9999m (SONiC CABLE_LENGTH)")),
    "switch_fabric_sonic_pg_lookup": ANY_DICT,
    "switch_fabric_pfcwd_action": choice("drop", "forward", "alert"),
    "switch_fabric_pfcwd_detection_ms": integer(100, 5000, " ms"),
    "switch_fabric_pfcwd_restoration_ms": integer(100, 60000, " ms"),
    "switch_fabric_nvue_release": choice("5.9", "5.10", "5.11", "5.12", "5.13", "5.14", "5.15", "5.16", "5.17"),
    "switch_fabric_mtu": integer(1280, 9216),
    "switch_fabric_link_speed_gbps": choice(*intent.LINK_SPEEDS_GBPS),
    "switch_fabric_set_speed": boolean,
    "switch_fabric_trust": choice(*intent.TRUST_MODES),
    "switch_fabric_no_drop_priority": integer(0, 7),
    "switch_fabric_data_dscp": integer(0, 63),
    "switch_fabric_cnp_dscp": integer(0, 63),
    "switch_fabric_cnp_priority": integer(0, 7),
    "switch_fabric_ecn_enabled": boolean,
    "switch_fabric_ecn_min_threshold_kb": integer(1, 100000),
    "switch_fabric_ecn_max_threshold_kb": integer(1, 100000),
    "switch_fabric_ecn_probability_percent": integer(1, 100),
    "switch_fabric_extra_ports": extra_ports,
    "switch_fabric_counters_phase": choice("before", "after"),
    "switch_fabric_restore_backup": local_path(empty=True),
    "switch_fabric_restore_force": boolean,
    "switch_fabric_eos_profile": ANY_DICT,   # derived from switch_eos_family (module_utils/switch/profiles.py)
    # role verify_fabric
    "verify_fabric_fabric": ANY_DICT,
    "verify_fabric_ib_sm_host": text(253),
    "verify_fabric_checks": listing(choice(*VERIFY_CHECKS), min_len=1, what="a list of checks"),
    "verify_fabric_benchmark_checks": listing(choice(*VERIFY_CHECKS)),
    "verify_fabric_active_checks": listing(choice(*VERIFY_CHECKS)),
    "verify_fabric_link_health_mlxlink": boolean,
    "verify_fabric_run_benchmarks": boolean,
    "verify_fabric_read_only": boolean,
    "verify_fabric_defer_report": boolean,
    "verify_fabric_mode": text(256),
    "verify_fabric_drift": lambda c, k, v: True,   # the audit's own results, never an operator value
    "verify_fabric_ports": ANY_LIST,
    "verify_fabric_gid_index": either(lambda c, k, v: v is None, integer(0, 255),
                                      allowed="null or a GID index 0..255"),
    "verify_fabric_nccl_gid_index": GID_INDEX,
    "verify_fabric_tclass": either(lambda c, k, v: v is None, integer(0, 255),
                                   allowed="null or a traffic class 0..255"),
    "verify_fabric_sl": either(lambda c, k, v: v is None, integer(0, 15), allowed="null or a service level 0..15"),
    "verify_fabric_nccl_conf_path": path(),
    "verify_fabric_readiness_nccl_packages": PACKAGES,
    "verify_fabric_readiness_min_memlock_kb": integer(-1, 2 ** 40, " KiB; -1 = unlimited"),
    "verify_fabric_readiness_min_shm_bytes": integer(0, 2 ** 50),
    "verify_fabric_readiness_min_max_read_req": choice(*MAX_READ_REQ),
    "verify_fabric_packages": PACKAGES,
    # nccl-tests install (tasks/tools.yml; the plan's own checks: module_utils/host/verify_tools.py)
    "verify_fabric_nccl_tests_method": choice("source", "package", "none"),
    "verify_fabric_nccl_tests_version": fmt(_VERSION),
    "verify_fabric_nccl_tests_source_url": url(("https", "http", "file"), empty=True),
    "verify_fabric_nccl_tests_source_checksum": fmt((r"sha256:[0-9a-f]{64}", "sha256:<64 hex digits>"), empty=True),
    "verify_fabric_nccl_tests_prefix": path(),
    "verify_fabric_nccl_tests_package": fmt(_PACKAGE),
    "verify_fabric_nccl_tests_mpi_home": path(),
    "verify_fabric_nccl_tests_cuda_home": path(),
    "verify_fabric_nccl_tests_nccl_home": path(),
    "verify_fabric_ib_write_bw_tool": choice("ib_write_bw", "ib_read_bw"),
    "verify_fabric_ib_write_bw_plan": choice("auto", "full", "sampled"),
    "verify_fabric_ib_write_bw_plan_effective": choice("full", "sampled"),
    "verify_fabric_ib_write_bw_sample_rounds": integer(1, 64),
    "verify_fabric_ib_write_bw_retest_phases": integer(0, 10, ": re-test phases of the sampled plan (0: none)"),
    "verify_fabric_ib_write_bw_size": integer(1, 2 ** 31 - 1, " bytes"),
    "verify_fabric_ib_write_bw_qps": integer(1, 1024),
    "verify_fabric_ib_write_bw_duration": integer(1, 3600, " seconds"),
    "verify_fabric_ib_write_bw_use_cuda": boolean,
    "verify_fabric_ib_write_bw_out_json": boolean,
    "verify_fabric_ib_write_bw_base_port": integer(1, 65535, " (a TCP port)"),
    "verify_fabric_ib_write_bw_connect_timeout": integer(1, 600, " seconds"),
    "verify_fabric_ib_write_bw_extra_args": ARGV,
    "verify_fabric_ib_send_bw_rounds": integer(0, 64),
    "verify_fabric_ib_send_bw_duration": integer(1, 3600, " seconds"),
    "verify_fabric_ib_send_bw_size": integer(1, 2 ** 31 - 1, " bytes"),
    "verify_fabric_ib_send_bw_qps": integer(1, 1024),
    "verify_fabric_ib_write_lat_tool": choice("ib_write_lat", "ib_send_lat"),
    "verify_fabric_ib_write_lat_rounds": integer(0, 64),
    "verify_fabric_ib_write_lat_size": integer(1, 2 ** 23, " bytes"),
    "verify_fabric_ib_write_lat_iterations": integer(5, 10 ** 8),
    "verify_fabric_gpudirect_rounds": integer(0, 64, ": the plan's first rounds (0: every round)"),
    "verify_fabric_gpudirect_duration": integer(1, 3600, " seconds"),
    "verify_fabric_gdrcopy_sanity": boolean,
    "verify_fabric_gdrcopy_timeout": integer(1, 3600, " seconds"),
    "verify_fabric_launchers": boolean,
    "verify_fabric_launchers_dir": local_path(),
    "verify_fabric_launch_rail_pinning": choice("topology", "nearest"),
    "verify_fabric_launch_master_port": integer(1, 65535, " (a TCP port)"),
    "verify_fabric_nccl_launch": choice("node", "rank_per_gpu"),
    "verify_fabric_incast_receiver": text(253, empty=False),
    "verify_fabric_incast_max_senders": integer(2, 1023, ": incast needs at least 2 senders to congest a port"),
    "verify_fabric_incast_senders": listing(text(253, empty=False), min_len=2, max_len=1023,
                                            what="a list of sender hosts (incast needs at least 2)"),
    "verify_fabric_incast_duration": integer(1, 3600, " seconds"),
    "verify_fabric_incast_base_port": integer(1, 65535, " (a TCP port)"),
    "verify_fabric_nccl_tests": listing(choice(*NCCL_TESTS), min_len=1, what="a list of nccl-tests programs"),
    "verify_fabric_nccl_gpus": integer(1, 64, " GPUs per node"),
    "verify_fabric_nccl_min_bytes": fmt(_NCCL_SIZE),
    "verify_fabric_nccl_max_bytes": fmt(_NCCL_SIZE),
    "verify_fabric_nccl_iterations": integer(1, 100000),
    "verify_fabric_nccl_env": ENV_MAP,
    "verify_fabric_nccl_json": boolean,
    "verify_fabric_nccl_timeout": integer(1, 86400, " seconds"),
    # NCCL tuning sweep (playbooks/nccl_tune.yml, docs/tuning.md)
    "verify_fabric_nccl_tune": boolean,
    "verify_fabric_nccl_tune_values": nccl_tune_values,
    "verify_fabric_nccl_tune_repeats": integer(2, 10, " runs of each configuration (one run shows no noise)"),
    "verify_fabric_nccl_tune_margin_percent": number(0.5, 100, " percent a value must beat NCCL's default by"),
    "verify_fabric_nccl_tune_max_runs": integer(2, 500, " nccl-tests runs in all"),
    "verify_fabric_nccl_tune_time_budget": integer(60, 86400, " seconds for the whole sweep"),
    "verify_fabric_nccl_tune_test": choice(*NCCL_TESTS),
    "verify_fabric_nccl_tune_min_bytes": fmt(_NCCL_SIZE),
    "verify_fabric_nccl_tune_max_bytes": fmt(_NCCL_SIZE),
    "verify_fabric_nccl_tune_file": local_path(),
    "verify_fabric_mpi_ifname": intent_format("ifname_list"),
    "verify_fabric_mpirun_args": ARGV,
    "verify_fabric_mpi_ssh_setup": boolean,
    "verify_fabric_mpi_ssh_key": path(),
    "verify_fabric_mpi_authorized_keys": path(),
    "verify_fabric_mpi_key_from": mpi_from,
    "verify_fabric_keep_mpi_key": boolean,
    "verify_fabric_expect_gdr": boolean,
    "verify_fabric_reports_dir": local_path(),
    "verify_fabric_fail": boolean,
    "verify_fabric_cabling_host_lldp": boolean,
    # role k8s_render (module_utils/intent/k8s_render.py renders; docs/kubernetes.md)
    "k8s_render_output_dir": local_path(),
    "k8s_render_host_group": intent_format("name"),
    "k8s_render_name": fmt((k8s_render.DNS_LABEL.pattern, "a DNS label: a-z 0-9 -, starting and ending alphanumeric")),
    "k8s_render_namespace": fmt((k8s_render.DNS_LABEL.pattern, "a Kubernetes namespace name (a DNS label: a-z 0-9 -)")),
    "k8s_render_gang_scheduler": choice(*k8s_render.GANG_SCHEDULERS),
    "k8s_render_queue": fmt((k8s_render.DNS_LABEL.pattern, "a Kueue LocalQueue name (a DNS label: a-z 0-9 -)")),
    "k8s_render_rdma_resources": choice(*k8s_render.RDMA_RESOURCES),
    "k8s_render_rdma_hca_max": integer(1, 1000, ": pods one RDMA shared resource serves on a node"),
    "k8s_render_cni": choice(*k8s_render.CNI_TYPES),
    "k8s_render_ofed_driver": choice(*k8s_render.OFED_DRIVERS),
    "k8s_render_ofed_version": fmt((k8s_render.OFED_TAG.pattern, "a doca-driver image tag such as "
                                    "doca3.4.1-26.04-1.1.0.0-1"), empty=True),
    "k8s_render_image": fmt((k8s_render.IMAGE.pattern, "a container image reference with nccl-tests, Open MPI and "
                             "sshd, such as registry.example.org/nccl-tests:2.13.11"), empty=True),
    "k8s_render_pytorch_image": fmt((k8s_render.IMAGE.pattern, "a container image reference with PyTorch, such as "
                                     "nvcr.io/nvidia/pytorch:24.10-py3")),
    "k8s_render_gpus_per_node": integer(1, 64, " GPUs per node"),
    "k8s_render_nodes": integer(0, 100000, " nodes (0: every node of k8s_render_host_group)"),
    "k8s_render_shm_size": fmt((k8s_render.QUANTITY.pattern, "a Kubernetes quantity such as 64Gi")),
    "k8s_render_nccl_test": choice(*NCCL_TESTS),
    "k8s_render_nccl_min_bytes": fmt(_NCCL_SIZE),
    "k8s_render_nccl_max_bytes": fmt(_NCCL_SIZE),
    "k8s_render_socket_ifname": intent_format("ifname_list"),
    "k8s_render_gid_index": GID_INDEX,
    "k8s_render_nccl_net": intent_format("nccl_value"),
    "k8s_render_nccl_overrides": NCCL_OVERRIDES,
    "k8s_render_nccl_tuned_file": local_path(),
    "k8s_render_apply": boolean,
    "k8s_render_kubeconfig": local_path(empty=True),
    "k8s_render_context": text(253),
    # Ansible's connection variables (the switch role reads them; every host is reached by them)
    "ansible_host": host_address,
    "ansible_port": integer(1, 65535, " (a TCP port)"),
    "ansible_user": fmt(_USER),
    "ansible_password": text(1024),
    "ansible_become_password": text(1024),   # the EOS enable secret (switch_fabric_enable_secret)
    "ansible_ssh_private_key_file": text(4096),
    "switch_username": fmt(_USER),
    "switch_password": text(1024),
    "switch_private_key_file": text(4096),
    "switch_ssh_config_file": text(4096),
    "switch_known_hosts": text(4096),
    # playbooks
    "audit_benchmarks": boolean,
    "linerate_output_dir": local_path(),
    # acting on findings (roles/remediate, docs/audit.md)
    "remediate_control_host": text(253, empty=False),
    "remediate_scontrol": text(4096, empty=False),
    "remediate_kubectl": text(4096, empty=False),
    "remediate_metrics_dir": path(),
    "remediate_metrics_file": fmt((r"[A-Za-z0-9_.-]{1,64}\.prom", "a file name ending in .prom (1-64 of letters, "
                                   "digits, _ . -): node_exporter's textfile collector reads *.prom only")),
    "linerate_drain": boolean,
    "linerate_metrics": boolean,
    "linerate_report_keep": integer(1, 100000, " runs kept under <linerate_output_dir>/reports"),
    "linerate_slurm_node_name": text(253, empty=False),
    "linerate_k8s_node_name": fmt((r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?",
                                   "a Kubernetes node name (a DNS subdomain: a-z 0-9 - ., at most 253)")),
}

_SIZE_UNITS = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}


def _nccl_bytes(value):
    m = re.fullmatch(_NCCL_SIZE[0], value, re.ASCII) if isinstance(value, str) else None
    return int(value[:-1] if value[-1:] in "KMG" else value) * _SIZE_UNITS[value[-1] if value[-1:] in "KMG" else ""] \
        if m else None


def cross_checks(c, values):
    """Rules between variables of one host (each value already passed its own rule)."""
    confirm = as_int(values.get("switch_fabric_confirm_timeout", 300))
    command = as_int(values.get("switch_fabric_command_timeout", 60))
    post = as_bool(values.get("switch_fabric_post_checks", True))
    if confirm is not None and command is not None and post is not None \
            and CONFIRM_RANGE[0] <= confirm <= CONFIRM_RANGE[1]:
        steps = WINDOW_COMMANDS_AFTER_COMMIT if post else WINDOW_COMMANDS_AFTER_COMMIT - 1
        if confirm < steps * command:
            c.bad("switch_fabric_confirm_timeout", confirm,
                  f"at least {steps} x switch_fabric_command_timeout ({command}) = {steps * command} seconds: "
                  "after the commit the window reads the config back"
                  + (", runs the post-checks" if post else "") + " and confirms, each allowed "
                  "switch_fabric_command_timeout, before the switch's timer reverts the change")
    lo, hi = (_nccl_bytes(values.get(k)) for k in ("verify_fabric_nccl_min_bytes", "verify_fabric_nccl_max_bytes"))
    if "verify_fabric_nccl_min_bytes" in values or "verify_fabric_nccl_max_bytes" in values:
        lo = lo if "verify_fabric_nccl_min_bytes" in values else _nccl_bytes("1G")
        hi = hi if "verify_fabric_nccl_max_bytes" in values else _nccl_bytes("4G")
        if lo is not None and hi is not None and lo > hi:
            c.bad("verify_fabric_nccl_min_bytes", values.get("verify_fabric_nccl_min_bytes", "1G"),
                  f"at most verify_fabric_nccl_max_bytes ({values.get('verify_fabric_nccl_max_bytes', '4G')})")


def validate_host(values):
    """Problems of one host's variables ({name: value}, the ones the operator
    set), each ``<key>: <value> is not allowed (allowed: ...)``."""
    c = Checker("")
    for name in sorted(values):
        rule = RULES.get(name)
        if rule is not None:
            rule(c, name, values[name])
    cross_checks(c, values)
    return c.items


def merge_hosts(per_host):
    """[(host, message-without-host)] -> messages, one per distinct message,
    naming every host it applies to (a group_vars mistake is one line)."""
    hosts_of = {}
    for host, msg in per_host:
        hosts_of.setdefault(msg, []).append(host)
    out = []
    for msg, hosts in hosts_of.items():
        names = ", ".join(hosts[:3]) + (f" and {len(hosts) - 3} more host(s)" if len(hosts) > 3 else "")
        out.append(f"{names}: {msg}")
    return out
