"""Every variable that reaches a file, a command or a connection has a rule
(module_utils/intent/variables.py), checked before any contact: malformed values
named by their key with the exact message, good ones passing, every option
of every role's argument_specs covered."""

import glob
import os
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import LINK_SPEEDS_GBPS
from ansible_collections.linerate.fabric.plugins.module_utils.intent import cabling
from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import FORMATS
from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CTRL = "without control characters (newline, carriage return, tab, NUL)"
PATH = "an absolute path of at most 255 letters, digits and _ . + / -, without .."
APT_URL = "a URL of scheme " + " | ".join(variables.APT_SCHEMES) + ": at most 2048 characters, no whitespace, control character, quote, bracket or backslash"
CREDS = (
    "a URL without credentials: user:password@ would be written into a world-readable (0644) apt sources file "
    "and shown by --diff; put them in /etc/apt/auth.conf.d/<name>.conf (machine/login/password, mode 0600, "
    "apt_auth.conf(5))"
)


def msg(key, shown, allowed):
    return f"{key}: {shown} is not allowed (allowed: {allowed})"


# (variable, value, the exact problems)
CASES = [
    # the apt sources file: a newline would add "Trusted: yes"; credentials stay out of a 0644 file
    ("mofed_repo_url", "https://r.example.org/doca\nTrusted: yes", [msg("mofed_repo_url", "'https://r.example.org/doca\\nTrusted: yes'", APT_URL)]),
    ("mofed_repo_url", "https://r.example.org/a b", [msg("mofed_repo_url", "'https://r.example.org/a b'", APT_URL)]),
    ("mofed_repo_url", "https://r.example.org/]", [msg("mofed_repo_url", "'https://r.example.org/]'", APT_URL)]),
    ("mofed_repo_url", "ftp://r.example.org/", [msg("mofed_repo_url", "'ftp://r.example.org/'", APT_URL)]),
    ("mofed_repo_url", "https:///doca", [msg("mofed_repo_url", "'https:///doca'", APT_URL)]),
    ("mofed_repo_url", "file:srv/repo", [msg("mofed_repo_url", "'file:srv/repo'", APT_URL)]),
    ("mofed_repo_url", "", [msg("mofed_repo_url", "''", APT_URL)]),
    ("mofed_repo_url", ["https://r/"], [msg("mofed_repo_url", "['https://r/']", APT_URL)]),
    ("mofed_repo_url", "https://bob:s3cret@r.example.org/doca/", [msg("mofed_repo_url", "'https://***@r.example.org/doca/'", CREDS)]),
    ("mofed_repo_url", "https://bob:s3cret@r.example.org/x y", [msg("mofed_repo_url", "'https://***@r.example.org/x y'", APT_URL)]),
    (
        "mofed_repo_key_url",
        "file:/k.gpg",
        [
            msg(
                "mofed_repo_key_url",
                "'file:/k.gpg'",
                "a URL of scheme http | https: at most 2048 characters, no whitespace, control character, quote, bracket or backslash, or empty",
            )
        ],
    ),
    ("mofed_repo_suite", "./\nTrusted: yes", [msg("mofed_repo_suite", "'./\\nTrusted: yes'", variables._SUITE[1])]),
    ("mofed_repo_signed_by", "/usr/share/keyrings/a b.gpg", [msg("mofed_repo_signed_by", "'/usr/share/keyrings/a b.gpg'", PATH)]),
    ("mofed_repo_signed_by", "keyrings/x.gpg", [msg("mofed_repo_signed_by", "'keyrings/x.gpg'", PATH)]),
    ("mofed_version", "24.10;reboot", [msg("mofed_version", "'24.10;reboot'", variables._VERSION[1])]),
    ("mofed_version", "v24.10", [msg("mofed_version", "'v24.10'", variables._VERSION[1])]),
    ("mofed_hold_packages", ["mft", "Bad_Name"], [msg("mofed_hold_packages[1]", "'Bad_Name'", variables._PACKAGE[1])]),
    ("mofed_driver_restart_command", ["openibd", "restart"], [msg("mofed_driver_restart_command[0]", "'openibd'", PATH)]),
    ("mofed_driver_restart_command", [], [msg("mofed_driver_restart_command", "[]", "a non-empty argv list, the program an absolute path")]),
    (
        "mofed_driver_restart_command",
        ["/etc/init.d/openibd", "re\nstart"],
        [msg("mofed_driver_restart_command[1]", "'re\\nstart'", f"a string of at most 256 characters {CTRL}, not empty")],
    ),
    (
        "mofed_meta_package_by_source",
        {"doca": {"name": "doca-ofed", "version": "2.9.1\n"}},
        [msg("mofed_meta_package_by_source.doca.version", "'2.9.1\\n'", variables._VERSION[1])],
    ),
    (
        "mofed_meta_package_by_source",
        {"inbox": {"name": "rdma-core", "version": "44"}},
        [msg("mofed_meta_package_by_source.inbox", "'(key)'", "doca | mlnx_ofed")],
    ),
    ("mofed_reachability_timeout", 0, [msg("mofed_reachability_timeout", "0", "an integer 1..3600 seconds")]),
    # NCCL overrides: the same rules as the intent's fabric.nccl.overrides (nccl.conf is KEY=VALUE per line)
    (
        "nccl_env_overrides",
        {"NCCL_IB_HCA": "mlx5_0\nNCCL_NET=Socket"},
        [msg("nccl_env_overrides.NCCL_IB_HCA", "'mlx5_0\\nNCCL_NET=Socket'", FORMATS["nccl_value"][1])],
    ),
    ("nccl_env_overrides", {"NCCL_X": "a b"}, [msg("nccl_env_overrides.NCCL_X", "'a b'", FORMATS["nccl_value"][1])]),
    ("nccl_env_overrides", {"NCCL_X\nY": 1}, [msg("nccl_env_overrides.NCCL_X\nY", "'(key)'", variables._NCCL_NAME[1])]),
    ("nccl_env_overrides", {"LD_PRELOAD": "/x.so"}, [msg("nccl_env_overrides.LD_PRELOAD", "'(key)'", variables._NCCL_NAME[1])]),
    ("nccl_env_overrides", {"NCCL_X": True}, [msg("nccl_env_overrides.NCCL_X", "True", FORMATS["nccl_value"][1])]),
    ("nccl_env_overrides", ["NCCL_X=1"], [msg("nccl_env_overrides", "['NCCL_X=1']", "a mapping")]),
    ("nccl_env_gid_index", "3a", [msg("nccl_env_gid_index", "'3a'", "empty (discovered) or a GID index 0..255")]),
    ("nccl_env_gid_index", 256, [msg("nccl_env_gid_index", "256", "empty (discovered) or a GID index 0..255")]),
    ("nccl_env_conf_path", "/etc/../root/nccl.conf", [msg("nccl_env_conf_path", "'/etc/../root/nccl.conf'", PATH)]),
    ("nccl_env_down_ports", "ignore", [msg("nccl_env_down_ports", "'ignore'", "fail | exclude")]),
    # the OpenSM environment file is sourced by sh: a key is a shell name, a value has no line break
    ("ib_subnet_manager_environment", {"A;reboot": "x"}, [msg("ib_subnet_manager_environment.A;reboot", "'(key)'", variables._ENV_NAME[1])]),
    ("ib_subnet_manager_environment", {"1A": "x"}, [msg("ib_subnet_manager_environment.1A", "'(key)'", variables._ENV_NAME[1])]),
    (
        "ib_subnet_manager_environment",
        {"SIM_HOST": "n1\nLD_PRELOAD=/tmp/x.so"},
        [msg("ib_subnet_manager_environment.SIM_HOST", "'n1\\nLD_PRELOAD=/tmp/x.so'", f"a string of at most 4096 characters {CTRL}")],
    ),
    ("ib_subnet_manager_environment", {"X": None}, [msg("ib_subnet_manager_environment.X", "None", f"a string of at most 4096 characters {CTRL}")]),
    ("ib_subnet_manager_port_guid", "0x1 ", [msg("ib_subnet_manager_port_guid", "'0x1 '", FORMATS["guid"][1])]),
    ("ib_subnet_manager_service_name", "x y", [msg("ib_subnet_manager_service_name", "'x y'", variables._UNIT[1])]),
    ("ib_subnet_manager_wait_timeout", -5, [msg("ib_subnet_manager_wait_timeout", "-5", "an integer 1..3600 seconds")]),
    # switch connections under their own names
    ("ansible_port", 0, [msg("ansible_port", "0", "an integer 1..65535 (a TCP port)")]),
    ("ansible_port", 70000, [msg("ansible_port", "70000", "an integer 1..65535 (a TCP port)")]),
    ("ansible_port", "22a", [msg("ansible_port", "'22a'", "an integer 1..65535 (a TCP port)")]),
    ("ansible_port", 22.5, [msg("ansible_port", "22.5", "an integer 1..65535 (a TCP port)")]),
    ("ansible_port", True, [msg("ansible_port", "True", "an integer 1..65535 (a TCP port)")]),
    (
        "ansible_host",
        "leaf1 -oProxyCommand=x",
        [msg("ansible_host", "'leaf1 -oProxyCommand=x'", "an IP address or a DNS name (labels of letters, digits, _ -, at most 253)")],
    ),
    ("ansible_host", "10.0.0.300", [msg("ansible_host", "'10.0.0.300'", "an IP address or a DNS name (labels of letters, digits, _ -, at most 253)")]),
    ("ansible_host", "-leaf", [msg("ansible_host", "'-leaf'", "an IP address or a DNS name (labels of letters, digits, _ -, at most 253)")]),
    ("ansible_user", "admin\n", [msg("ansible_user", "'admin\\n'", variables._USER[1])]),
    ("ansible_password", "pa\nss", [msg("ansible_password", "'********'", f"a string of at most 1024 characters {CTRL}")]),
    ("switch_password", ["x"], [msg("switch_password", "'********'", f"a string of at most 1024 characters {CTRL}")]),
    # role knobs by range
    (
        "verify_fabric_incast_max_senders",
        1,
        [msg("verify_fabric_incast_max_senders", "1", "an integer 2..1023: incast needs at least 2 senders to congest a port")],
    ),
    (
        "verify_fabric_incast_senders",
        ["n2"],
        [msg("verify_fabric_incast_senders", "['n2']", "a list of sender hosts (incast needs at least 2) of 2..1023 entries")],
    ),
    ("verify_fabric_ib_write_bw_duration", -1, [msg("verify_fabric_ib_write_bw_duration", "-1", "an integer 1..3600 seconds")]),
    ("verify_fabric_ib_write_bw_duration", 31536000, [msg("verify_fabric_ib_write_bw_duration", "31536000", "an integer 1..3600 seconds")]),
    ("verify_fabric_ib_write_bw_duration", 0, [msg("verify_fabric_ib_write_bw_duration", "0", "an integer 1..3600 seconds")]),
    ("verify_fabric_incast_duration", "10s", [msg("verify_fabric_incast_duration", "'10s'", "an integer 1..3600 seconds")]),
    ("verify_fabric_ib_write_bw_base_port", 65536, [msg("verify_fabric_ib_write_bw_base_port", "65536", "an integer 1..65535 (a TCP port)")]),
    ("verify_fabric_incast_base_port", 0, [msg("verify_fabric_incast_base_port", "0", "an integer 1..65535 (a TCP port)")]),
    ("verify_fabric_ib_write_bw_qps", 0, [msg("verify_fabric_ib_write_bw_qps", "0", "an integer 1..1024")]),
    ("verify_fabric_ib_write_bw_sample_rounds", 0, [msg("verify_fabric_ib_write_bw_sample_rounds", "0", "an integer 1..64")]),
    ("verify_fabric_nccl_gpus", 0, [msg("verify_fabric_nccl_gpus", "0", "an integer 1..64 GPUs per node")]),
    ("verify_fabric_nccl_iterations", 0, [msg("verify_fabric_nccl_iterations", "0", "an integer 1..100000")]),
    ("verify_fabric_nccl_timeout", 0, [msg("verify_fabric_nccl_timeout", "0", "an integer 1..86400 seconds")]),
    ("verify_fabric_nccl_min_bytes", "1 G", [msg("verify_fabric_nccl_min_bytes", "'1 G'", variables._NCCL_SIZE[1])]),
    ("verify_fabric_nccl_min_bytes", "8G", [msg("verify_fabric_nccl_min_bytes", "'8G'", "at most verify_fabric_nccl_max_bytes (4G)")]),
    ("verify_fabric_checks", ["ports", "pingpong"], [msg("verify_fabric_checks[1]", "'pingpong'", " | ".join(variables.VERIFY_CHECKS))]),
    ("verify_fabric_checks", [], [msg("verify_fabric_checks", "[]", "a list of checks of 1..4096 entries")]),
    ("verify_fabric_nccl_env", {"NCCL DEBUG": "INFO"}, [msg("verify_fabric_nccl_env.NCCL DEBUG", "'(key)'", variables._ENV_NAME[1])]),
    ("verify_fabric_mpirun_args", ["--mca", "x\ny"], [msg("verify_fabric_mpirun_args[1]", "'x\\ny'", f"a string of at most 256 characters {CTRL}, not empty")]),
    (
        "verify_fabric_mpi_key_from",
        ["10.0.0.1,10.0.0.2"],
        [
            msg(
                "verify_fabric_mpi_key_from",
                "['10.0.0.1,10.0.0.2']",
                "an IP address, a CIDR network or a host name (letters, digits, . -); sshd matches name patterns only with UseDNS yes",
            )
        ],
    ),
    ("verify_fabric_readiness_min_max_read_req", 300, [msg("verify_fabric_readiness_min_max_read_req", "300", "128 | 256 | 512 | 1024 | 2048 | 4096")]),
    ("connectx_firmware_reset_level", 1, [msg("connectx_firmware_reset_level", "1", "3 | 4")]),
    ("connectx_firmware_reset_level", "3", []),
    (
        "connectx_firmware_extra_params",
        {"LINK_TYPE_P1": "ETH;x"},
        [msg("connectx_firmware_extra_params.LINK_TYPE_P1", "'ETH;x'", variables._MLX_VALUE[1] + ", a number or a boolean")],
    ),
    ("connectx_firmware_extra_params", {"link_type": "ETH"}, [msg("connectx_firmware_extra_params.link_type", "'(key)'", variables._MLX_NAME[1])]),
    (
        "connectx_firmware_devices",
        [{"pci": "41:00.0 ", "x": 1}],
        [
            msg("connectx_firmware_devices[0].x", "1", "unknown key; allowed keys: params, pci"),
            msg("connectx_firmware_devices[0].pci", "'41:00.0 '", FORMATS["pci"][1]),
        ],
    ),
    ("connectx_firmware_image_psid", "MT 1", [msg("connectx_firmware_image_psid", "'MT 1'", variables._PSID[1] + ", or empty")]),
    ("switch_fabric_confirm_timeout", 30, [msg("switch_fabric_confirm_timeout", "30", "an integer 60..3600 seconds")]),
    ("switch_fabric_confirm_timeout", 86400, [msg("switch_fabric_confirm_timeout", "86400", "an integer 60..3600 seconds")]),
    ("switch_fabric_connect_timeout", 0, [msg("switch_fabric_connect_timeout", "0", "an integer 1..300 seconds")]),
    ("switch_fabric_profile", "linerate qos", [msg("switch_fabric_profile", "'linerate qos'", variables._PROFILE[1])]),
    (
        "switch_fabric_extra_ports",
        [{"name": "swp9\n", "speed_gbps": 300}],
        [
            msg("switch_fabric_extra_ports[0].name", "'swp9\\n'", FORMATS["port"][1]),
            msg("switch_fabric_extra_ports[0].speed_gbps", "300", " | ".join(map(str, LINK_SPEEDS_GBPS))),
        ],
    ),
    ("switch_fabric_backup_dir", "/x\n", [msg("switch_fabric_backup_dir", "'/x\\n'", f"a string of at most 4096 characters {CTRL}, not empty")]),
    ("switch_fabric_backup_dir", "", [msg("switch_fabric_backup_dir", "''", f"a string of at most 4096 characters {CTRL}, not empty")]),
    ("nvidia_peermem_state", "loaded", [msg("nvidia_peermem_state", "'loaded'", "present | absent")]),
    ("roce_qos_mtu", 9217, [msg("roce_qos_mtu", "9217", "an integer 1280..9216")]),
    ("roce_qos_mtu_change", "up", [msg("roce_qos_mtu_change", "'up'", "any | lower | raise")]),
    ("roce_qos_rail_dir", "/etc/linerate/x;y", [msg("roce_qos_rail_dir", "'/etc/linerate/x;y'", PATH)]),
    ("rdma_netdev_rail_dir", "/etc/linerate/x;y", [msg("rdma_netdev_rail_dir", "'/etc/linerate/x;y'", PATH)]),
    # booleans, strictly
    ("mofed_repo_trusted", "maybe", [msg("mofed_repo_trusted", "'maybe'", variables.BOOL_ALLOWED)]),
    ("mofed_hold", "", [msg("mofed_hold", "''", variables.BOOL_ALLOWED)]),
    ("mofed_hold", 2, [msg("mofed_hold", "2", variables.BOOL_ALLOWED)]),
    ("mofed_hold", "y", [msg("mofed_hold", "'y'", variables.BOOL_ALLOWED)]),
    ("mofed_hold", None, [msg("mofed_hold", "None", variables.BOOL_ALLOWED)]),
    ("verify_fabric_keep_mpi_key", [True], [msg("verify_fabric_keep_mpi_key", "[True]", variables.BOOL_ALLOWED)]),
    ("switch_fabric_host_key_checking", "disabled", [msg("switch_fabric_host_key_checking", "'disabled'", variables.BOOL_ALLOWED)]),
    ("audit_benchmarks", "maybe", [msg("audit_benchmarks", "'maybe'", variables.BOOL_ALLOWED)]),
]

GOOD = [
    ("mofed_repo_url", "https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu22.04/x86_64/"),
    ("mofed_repo_url", "file:/srv/linerate-apt"),
    ("mofed_repo_url", "mirror+file:/etc/apt/mirrors.txt"),
    ("mofed_repo_key_url", ""),
    ("mofed_repo_suite", "./"),
    ("mofed_version", "24.10-1.1.4"),
    ("mofed_version", "1:2.9.1~rc1+dfsg"),
    ("nccl_env_overrides", {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_3:1", "NCCL_IB_TIMEOUT": 22}),
    (
        "ib_subnet_manager_environment",
        {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so", "SIM_HOST": "n1 mlx5_0", "IBSIM_SERVER_PORT": 7070, "_X": "a'b\"c $d"},
    ),
    ("ansible_port", 22),
    ("ansible_port", "2201"),
    ("ansible_port", 65535),
    ("ansible_port", 1),
    ("ansible_host", "10.0.0.1"),
    ("ansible_host", "fd00::1"),
    ("ansible_host", "gpu001.mgmt.example.org"),
    ("ansible_host", "leaf_1"),
    ("ansible_password", "p@ss w0rd!"),
    ("verify_fabric_incast_max_senders", 2),
    ("verify_fabric_incast_max_senders", "7"),
    ("verify_fabric_ib_write_bw_duration", 3600),
    ("verify_fabric_ib_write_bw_duration", 1),
    ("switch_fabric_confirm_timeout", 180),
    ("switch_fabric_confirm_timeout", 3600),
    ("verify_fabric_nccl_min_bytes", "4G"),
    ("verify_fabric_mpi_key_from", ["gpu001.mgmt.example.org", "10.0.0.0/24"]),
    ("connectx_firmware_extra_params", {"NUM_OF_VFS": 0, "SRIOV_EN": False, "LINK_TYPE_P1": "ETH"}),
    ("nccl_env_gid_index", ""),
    ("nccl_env_gid_index", 3),
    ("nccl_env_gid_index", "3"),
    ("switch_fabric_backup_dir", "/home/j.doe@corp/linerate output/backups"),
    ("verify_fabric_checks", ["ports", "nccl"]),
]


@pytest.mark.parametrize("key,value,expected", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_malformed_variable_is_named_exactly(key, value, expected):
    assert variables.validate_host({key: value}) == expected


@pytest.mark.parametrize("key,value", GOOD, ids=[f"{g[0]}-{i}" for i, g in enumerate(GOOD)])
def test_good_values_pass(key, value):
    assert variables.validate_host({key: value}) == []


@pytest.mark.parametrize("value", [True, False, 1, 0, "true", "False", "YES", "no", "On", "off", "1", "0"])
def test_booleans_ansible_writes_pass(value):
    assert variables.validate_host({"mofed_hold": value}) == []
    assert variables.as_bool(value) is (str(value).lower() in ("true", "yes", "on", "1"))


def test_a_secret_is_never_shown():
    problems = variables.validate_host(
        {"ansible_password": "hunter2\n", "switch_password": "s3cret\r", "mofed_repo_url": "https://bob:hunter2@r.example.org/x\n"}
    )
    text = "\n".join(problems)
    assert "hunter2" not in text and "s3cret" not in text and len(problems) == 3


@pytest.mark.parametrize(
    "confirm,command,post,expected",
    [
        (300, 60, True, []),
        (180, 60, True, []),
        (
            179,
            60,
            True,
            [
                "switch_fabric_confirm_timeout: 179 is not allowed (allowed: at least 3 x "
                "switch_fabric_command_timeout (60) = 180 seconds: after the commit the window reads the config "
                "back, runs the post-checks and confirms, each allowed switch_fabric_command_timeout, before "
                "the switch's timer reverts the change)"
            ],
        ),
        (
            119,
            60,
            False,
            [
                "switch_fabric_confirm_timeout: 119 is not allowed (allowed: at least 2 x "
                "switch_fabric_command_timeout (60) = 120 seconds: after the commit the window reads the config "
                "back and confirms, each allowed switch_fabric_command_timeout, before the switch's timer "
                "reverts the change)"
            ],
        ),
        (120, 60, "no", []),
    ],
)
def test_the_confirm_timer_must_outlast_the_post_checks(confirm, command, post, expected):
    values = {"switch_fabric_confirm_timeout": confirm, "switch_fabric_command_timeout": command, "switch_fabric_post_checks": post}
    assert variables.validate_host(values) == expected


def test_the_default_command_timeout_counts_in_the_budget():
    assert variables.validate_host({"switch_fabric_confirm_timeout": 179}) != []
    assert variables.validate_host({"switch_fabric_confirm_timeout": 180}) == []
    assert variables.validate_host({"switch_fabric_command_timeout": 101}) != []  # 303 > the default 300
    assert variables.validate_host({"switch_fabric_command_timeout": 100}) == []


@pytest.mark.parametrize("lo,hi,ok", [("1G", "4G", True), ("4G", "4G", True), ("1025M", "1G", False), ("512", "1K", True), ("2K", "1025", False)])
def test_nccl_sizes_in_order(lo, hi, ok):
    problems = variables.validate_host({"verify_fabric_nccl_min_bytes": lo, "verify_fabric_nccl_max_bytes": hi})
    assert (problems == []) is ok
    if not ok:
        assert problems == [f"verify_fabric_nccl_min_bytes: {lo!r} is not allowed (allowed: at most verify_fabric_nccl_max_bytes ({hi}))"]


def test_every_problem_at_once_sorted_by_key():
    problems = variables.validate_host({"mofed_hold": "maybe", "ansible_port": 0, "verify_fabric_incast_max_senders": 1})
    assert [p.split(":")[0] for p in problems] == ["ansible_port", "mofed_hold", "verify_fabric_incast_max_senders"]


def test_a_mistake_of_many_hosts_is_one_line():
    per_host = [(f"gpu{i:03d}", "mofed_hold: 'maybe' is not allowed") for i in range(1, 6)] + [("gpu009", "x")]
    assert variables.merge_hosts(per_host) == ["gpu001, gpu002, gpu003 and 2 more host(s): mofed_hold: 'maybe' is not allowed", "gpu009: x"]
    assert variables.merge_hosts(per_host[:3]) == ["gpu001, gpu002, gpu003: mofed_hold: 'maybe' is not allowed"]


def test_variables_without_a_rule_are_not_read():
    assert variables.validate_host({"some_site_variable": "x\ny", "ansible_connection": "local"}) == []


def _spec_options():
    names = set()
    for f in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
        with open(f, encoding="utf-8") as fh:
            for spec in yaml.safe_load(fh)["argument_specs"].values():
                names.update((spec.get("options") or {}))
    return names


def _default_names():
    names = set()
    for f in glob.glob(os.path.join(ROOT, "roles", "*", "defaults", "main.yml")):
        with open(f, encoding="utf-8") as fh:
            names.update(yaml.safe_load(fh) or {})
    return names


def test_every_role_variable_has_a_rule():
    missing = sorted((_spec_options() | _default_names()) - set(variables.RULES) - variables.BY_INTENT)
    assert missing == []


@pytest.mark.parametrize(
    "name", ["mofed_repo_url", "ansible_port", "verify_fabric_incast_max_senders", "nccl_env_overrides", "ib_subnet_manager_environment", "audit_benchmarks"]
)
def test_the_rules_the_issue_names_exist(name):
    assert name in variables.RULES


def test_network_os_aliases_are_the_drivers():
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.network_os import ALIASES

    assert cabling.NETWORK_OS_ALLOWED.startswith(" | ".join(ALIASES) + ", ")


# ---------------------------------------------------------------- nccl-tests' source (variables.nccl_tests_problems)
# nccl-tests' source is checked before any node is touched (issue 40, point 6): a run that installs
# nccl-tests (verify.yml, site.yml, nccl_tune.yml) with method source, the role's default, refuses an
# empty release-tarball URL or checksum and a version that is not a release, naming key and nodes;
# the first real verify.yml used to fail on the nodes, after touching them.

BIN = os.path.join(ROOT, ".venv", "bin")
URL = "https://mirror.example.org/nccl-tests/v2.19.6.tar.gz"
SUM = "sha256:" + "0123456789abcdef" * 4
URL_KEY, SUM_KEY = "verify_fabric_nccl_tests_source_url", "verify_fabric_nccl_tests_source_checksum"


def _load(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return yaml.safe_load(f)


def test_the_defaults_the_check_reads_are_the_roles():
    defaults = _load("roles/verify_fabric/defaults/main.yml")
    for key, value in variables.VERIFY_DEFAULTS.items():
        assert defaults[key] == value, key
    specs = _load("roles/verify_fabric/meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert specs["verify_fabric_nccl_tests_method"]["default"] == variables.VERIFY_DEFAULTS["verify_fabric_nccl_tests_method"]
    assert defaults[URL_KEY] == "" and defaults[SUM_KEY] == ""  # no default mirror: the site sets both


def test_the_role_defaults_are_refused_naming_both_keys():
    problems = variables.nccl_tests_problems({})
    assert len(problems) == 2
    assert problems[0].startswith(
        f"{URL_KEY}: '' is not allowed (allowed: the URL of the nccl-tests v2.19.6 release tarball on the site's mirror (https://, http:// or file://)"
    )
    assert problems[1].startswith(f"{SUM_KEY}: '' is not allowed (allowed: sha256:<64 hex digits> of that tarball")
    for p in problems:
        assert "verify_fabric_nccl_tests_method: package" in p and "| none" in p


@pytest.mark.parametrize(
    "values,keys",
    [
        ({URL_KEY: URL, SUM_KEY: SUM}, []),
        ({URL_KEY: URL}, [SUM_KEY]),
        ({SUM_KEY: SUM}, [URL_KEY]),
        ({URL_KEY: URL, SUM_KEY: SUM, "verify_fabric_nccl_tests_version": "2.13.11-1"}, ["verify_fabric_nccl_tests_version"]),
        ({"verify_fabric_nccl_tests_method": "package", "verify_fabric_nccl_tests_version": "2.13.11-1"}, []),
        ({"verify_fabric_nccl_tests_method": "none"}, []),
        # nccl-tests not run: nothing is installed
        ({"verify_fabric_checks": ["ports", "ib_write_bw"]}, []),
        # ... unless the tuning sweep runs it
        ({"verify_fabric_checks": ["ports"], "verify_fabric_nccl_tune": "true"}, [URL_KEY, SUM_KEY]),
        ({"verify_fabric_checks": ["ports", "nccl"]}, [URL_KEY, SUM_KEY]),
    ],
)
def test_what_a_node_needs_for_a_source_build(values, keys):
    assert [p.split(":")[0] for p in variables.nccl_tests_problems(values)] == keys


def test_a_malformed_value_is_its_rules_problem_once():
    values = {URL_KEY: "ftp://mirror/x.tgz", SUM_KEY: "sha256:abc"}
    assert variables.nccl_tests_problems(values) == []
    problems = variables.validate_host(values)
    assert [p.split(":")[0] for p in problems] == [SUM_KEY, URL_KEY]
    assert "sha256:<64 hex digits>" in problems[0]


def test_the_lab_installs_its_package_and_needs_no_mirror():
    lab = _load("inventory/lab/group_vars/gpu_nodes/verify.yml")
    assert lab["verify_fabric_nccl_tests_method"] == "package"
    assert variables.nccl_tests_problems(lab) == []


def _run(inv, playbook, *args):
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FACT_CACHING="memory",
        PATH=BIN + os.pathsep + os.environ["PATH"],
    )
    return subprocess.run(
        [
            os.path.join(BIN, "ansible-playbook"),
            "-i",
            str(inv),
            playbook,
            "--tags",
            "validate",
            "-e",
            "vault_switch_user=admin",
            "-e",
            "vault_switch_password=x",
            *args,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    "playbook,installs",
    [
        ("playbooks/verify.yml", True),
        ("playbooks/site.yml", True),
        ("playbooks/nccl_tune.yml", True),
        ("playbooks/switches.yml", False),
        ("playbooks/validate.yml", False),
    ],
)
def test_a_run_that_installs_nccl_tests_stops_at_validation(tmp_path, playbook, installs):
    inv = tmp_path / "inv"
    shutil.copytree(os.path.join(ROOT, "inventory", "example-roce"), inv)
    r = _run(inv, playbook)
    out = " ".join(r.stdout.split())
    if not installs:
        assert r.returncode == 0 and "intent valid" in out, r.stdout[-3000:]
        return
    assert r.returncode != 0
    assert f"gpu001, gpu002, gpu003 and 1 more host(s): {URL_KEY}: '' is not allowed" in out
    assert f"gpu001, gpu002, gpu003 and 1 more host(s): {SUM_KEY}: '' is not allowed" in out
    # stopped on the controller: no node or switch was reached (none is in the recap)
    recap = r.stdout.split("PLAY RECAP", 1)[1]
    assert [line.split()[0] for line in recap.strip().splitlines() if ":" in line] == ["localhost"]
    # the site's mirror and checksum given: the same run validates
    r = _run(inv, playbook, "-e", f"{URL_KEY}={URL}", "-e", f"{SUM_KEY}={SUM}")
    assert r.returncode == 0, r.stdout[-3000:]
    assert "intent valid" in " ".join(r.stdout.split())


def _action(args, hostvars, groups):
    from unittest import mock
    from ansible_collections.linerate.fabric.plugins.action.validate_intent import ActionModule

    task = mock.MagicMock()
    task.args = args
    templar = mock.MagicMock()
    templar.template.side_effect = lambda v: v
    action = ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=templar, shared_loader_obj=None)
    with mock.patch("ansible.plugins.action.ActionBase.run", return_value={}):
        return action.run(task_vars={"groups": groups, "hostvars": hostvars, "fabric": {"name": "t"}})


def test_the_action_checks_the_host_group_only_when_the_run_installs_nccl_tests():
    groups = {"all": ["n1", "n2", "s1"], "gpus": ["n1", "n2"], "switches": ["s1"]}
    hostvars = {"n1": {URL_KEY: URL, SUM_KEY: SUM}, "n2": {}, "s1": {"switch_platform": "nvue"}}
    args = {"host_group": "gpus", "check_cabling": False}
    assert _action(args, hostvars, groups)["problems"] == []
    res = _action(dict(args, nccl_tests=True), hostvars, groups)
    assert [p.split(": ")[:2] for p in res["problems"]] == [["n2", URL_KEY], ["n2", SUM_KEY]]
    assert res["failed"] is True and "ansible_facts" not in res
    # a different run (with or without the install) is a different digest: never reused across them
    assert res["digest"] != _action(args, hostvars, groups)["digest"]
    res = _action(dict(args, nccl_tests="maybe"), hostvars, groups)
    assert res["failed"] is True and res["msg"] == "nccl_tests: 'maybe' is not allowed (allowed: true, false)"


# ---------------------------------------------------------------- the variables' limits at their edges
# A value at each end of a variable's range passes and one past it fails, with the exact problem; the rule
# table (test_rules_hosts.py, test_rules_fabric.py) pins what each variable refuses, these what it accepts.


@pytest.mark.parametrize(
    "key,value",
    [
        ("verify_fabric_nccl_tune_margin_percent", 0.5),
        ("verify_fabric_nccl_tune_margin_percent", 100),
        ("verify_fabric_nccl_tune_margin_percent", "2.5"),
        ("roce_qos_pfc_priorities", list(range(8))),
        (
            "verify_fabric_nccl_tune_candidates",
            [{"algorithm": a, "protocol": p} for a in ("Ring", "Tree", "PAT", "NVLS") for p in ("LL", "LL128", "Simple")] * 2
            + [{"algorithm": "Ring", "protocol": "LL"}] * 8,
        ),
        ("verify_fabric_nccl_tune_scales", [2, 3]),
        ("verify_fabric_nccl_tune_scales", []),
        ("mofed_repo_url", "file:///srv/mofed/ubuntu22.04"),
        ("mofed_repo_url", "copy:///srv/mofed"),
    ],
)
def test_a_value_at_the_end_of_its_range_passes(key, value):
    assert variables.validate_host({key: value}) == []


@pytest.mark.parametrize(
    "key,value,allowed",
    [
        ("verify_fabric_nccl_tune_margin_percent", 0.4, "a number 0.5..100 percent a candidate must beat NCCL's pick by"),
        (
            "verify_fabric_nccl_tune_scales",
            [1, 4],
            "empty (2 and all nodes) or a list of two or more distinct node counts, each >= 2 (a winner must hold at two scales)",
        ),
        (
            "verify_fabric_nccl_tune_scales",
            [4],
            "empty (2 and all nodes) or a list of two or more distinct node counts, each >= 2 (a winner must hold at two scales)",
        ),
        ("roce_qos_pfc_priorities", [0, 1, 2, 3, 4, 5, 6, 7, 3], "a list of priorities 0..7"),
    ],
)
def test_a_value_past_the_end_of_its_range_fails(key, value, allowed):
    assert variables.validate_host({key: value}) == [f"{key}: {value!r} is not allowed (allowed: {allowed})"]


def test_more_senders_or_tuning_values_than_allowed_fail():
    assert len(variables.validate_host({"verify_fabric_incast_senders": [f"n{i}" for i in range(1024)]})) == 1
    ring = {"algorithm": "Ring", "protocol": "LL"}
    (problem,) = variables.validate_host({"verify_fabric_nccl_tune_candidates": [ring] * 33})
    assert problem.startswith("verify_fabric_nccl_tune_candidates: [{'algorithm': 'Ring', 'protocol': 'LL'}, ")
    assert problem.endswith("is not allowed (allowed: a list of {algorithm, protocol} of 1..32 entries)")
    assert variables.validate_host({"verify_fabric_nccl_tune_candidates": [{"algorithm": "Ring", "protocol": "LL256"}]}) == [
        "verify_fabric_nccl_tune_candidates[0]: {'algorithm': 'Ring', 'protocol': 'LL256'} is not allowed (allowed: "
        "protocol 'LL256' is not one of LL, LL128, Simple; allowed: {algorithm: Tree | Ring | CollNetDirect | "
        "CollNetChain | NVLS | NVLSTree | PAT, protocol: LL | LL128 | Simple})"
    ]


@pytest.mark.parametrize(
    "values,problems",
    [
        (
            {"verify_fabric_nccl_max_bytes": "512M"},  # the default minimum (1G) is above it
            ["verify_fabric_nccl_min_bytes: '1G' is not allowed (allowed: at most verify_fabric_nccl_max_bytes (512M))"],
        ),
        ({"mofed_meta_package_by_source": {"doca": 5}}, ["mofed_meta_package_by_source.doca: 5 is not allowed (allowed: a mapping with name and version)"]),
        (
            {"switch_fabric_extra_ports": [{"name": "swp9", "color": "red"}]},
            ["switch_fabric_extra_ports[0].color: 'red' is not allowed (allowed: unknown key; allowed keys: name, peer, speed_gbps)"],
        ),
    ],
)
def test_more_variable_problems_exact(values, problems):
    assert variables.validate_host(values) == problems
