"""Grammar gates: the host tools' own option tables (lab/sim/linerate_lab/grammar, extracted from their
sources per release by lab/grammar_extract.py) refuse an invented form, accept a real-but-rare one, and
accept every argv linerate's modules build for the releases the lab ships. The last group is the one
that catches a future invented flag: it builds argv through the product's own code."""

import os
import re

import pytest
import yaml
from labsim import lab  # noqa: F401  (puts lab/sim on sys.path)
from linerate_lab import grammar
from linerate_lab.tools import all_reduce_perf, ib_write_bw

from ansible_collections.linerate.fabric.plugins.module_utils.probes import nccl_tests
from ansible_collections.linerate.fabric.plugins.module_utils.probes import perftest
from ansible_collections.linerate.fabric.plugins.module_utils.host import fwprofile
from ansible_collections.linerate.fabric.plugins.module_utils.host import roce
from ansible_collections.linerate.fabric.plugins.module_utils.host.connectx import set_arg

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# the releases the lab ships (lab/packages.py OFED_STACKS, NCCL_TESTS_VERSION) and the newest extracted
PERFTESTS = ["23.10.0-0.29.g0705c22.2310213", "24.10.0-0.65.g9093bae.2410114", "26.04.17"]
MFTS = ["4.26.1-3", "4.30.0-139"]
MLNX_TOOLS = ["23.10.0-1.2310213", "24.10.0-1.2410114"]
NCCL_OLD, NCCL_NEW = "2.13.11-1", "2.19.6"
OPENSM = "3.3.23"  # Debian 12's opensm, which the lab runs for real


def test_every_grammar_file_names_its_source_and_each_version_its_commit():
    for tool in ("perftest", "nccl_tests", "mlnx_qos", "mlxconfig", "mlxfwreset", "mlxlink", "opensm"):
        t = grammar.table(tool)
        assert t["_source"]["repo"] and t["_source"]["file"] and t["_source"]["licence"], tool
        assert all(re.fullmatch(r"[0-9a-f]{40}", v["commit"]) for v in t["versions"].values()), tool


def test_pick_takes_the_newest_tag_not_newer_and_refuses_an_older_release():
    # perftest 24.10.0-0.65 (the DOCA 2.9 build) is older than the 24.10.0-0.66 tag: 23.10's table applies
    assert grammar.pick(grammar.table("perftest")["versions"], PERFTESTS[1]) == "23.10.0-0.29"
    assert grammar.pick(grammar.table("perftest")["versions"], "24.10.0-0.66.g1") == "24.10.0-0.66"
    assert grammar.pick(grammar.table("nccl_tests")["versions"], "2.18.4") == "2.18.3"
    with pytest.raises(grammar.GrammarError, match="no grammar extracted for version '2.12.0'"):
        grammar.pick(grammar.table("nccl_tests")["versions"], "2.12.0")


# ---------------------------------------------------------------- getopt_long (glibc)

LONGS = [
    {"name": "report_gbits", "has_arg": 0, "short": None},
    {"name": "report-both", "has_arg": 0, "short": None},
    {"name": "tclass", "has_arg": 1, "short": None},
    {"name": "size", "has_arg": 1, "short": "s"},
]


def test_getopt_long_permutes_takes_prefixes_and_both_argument_forms():
    opts, operands = grammar.getopt_long("t", ["srv", "--report_g", "--tclass", "96", "-s65536", "--size=8", "--", "-x"], "s:", LONGS)
    assert opts == [("--report_gbits", None), ("--tclass", "96"), ("s", "65536"), ("s", "8")]
    assert operands == ["srv", "-x"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--bogus"], "t: unrecognized option '--bogus'"),
        (["-q"], "t: invalid option -- 'q'"),
        (["-s"], "t: option requires an argument -- 's'"),
        (["--tclass"], "t: option '--tclass' requires an argument"),
        (["--report_gbits=1"], "t: option '--report_gbits' doesn't allow an argument"),
        (["--report"], "t: option '--report' is ambiguous; possibilities: '--report_gbits' '--report-both'"),
    ],
)
def test_getopt_long_refuses_with_glibcs_message(argv, message):
    with pytest.raises(grammar.GetoptError) as e:
        grammar.getopt_long("t", argv, "s:", LONGS)
    assert e.value.message == message


# ---------------------------------------------------------------- perftest


@pytest.mark.parametrize("version", PERFTESTS)
def test_perftest_refuses_invented_options_as_its_parser_does(version):
    with pytest.raises(grammar.PerftestRefused) as e:
        grammar.perftest_parse("ib_write_bw", ["-d", "mlx5_0", "--traffic_class=96"], version)
    assert e.value.lines == [
        "ib_write_bw: unrecognized option '--traffic_class=96'",
        " Invalid Command or flag.",
        " Please check command line and run again.",
        "",
        " Parser function exited with Error",
    ]
    for argv, first in (
        (["-D", "2.5"], " Duration period argument 2.5 should be int"),
        (["-D", "0"], " Duration period must be positive"),
        (["-x", "3", "-x", "5"], " Duplicated argument: -x "),
        (["--tclass=1", "--tclass=2"], " Duplicated argument: tclass "),
        (["-b", "h1", "h2"], " Invalid Command line. Please check command rerun "),
    ):
        with pytest.raises(grammar.PerftestRefused) as e:
            grammar.perftest_parse("ib_write_bw", argv, version)
        assert e.value.lines == [first, " Parser function exited with Error"], argv


def test_perftest_bw_only_and_latency_only_options():
    with pytest.raises(grammar.PerftestRefused, match="Bidirectional is only available in BW test"):
        grammar.perftest_parse("ib_write_lat", ["-b"], PERFTESTS[1], kind="lat")
    with pytest.raises(grammar.PerftestRefused, match="Available only on Latency tests"):
        grammar.perftest_parse("ib_write_bw", ["-C"], PERFTESTS[1])
    with pytest.raises(grammar.PerftestRefused, match="run_infinitely exists only in BW tests"):
        grammar.perftest_parse("ib_write_lat", ["--run_infinitely"], PERFTESTS[1], kind="lat")
    # -q on a latency test: refused by 24.10, allowed since (26.04's parser dropped the check)
    with pytest.raises(grammar.PerftestRefused, match="Multiple QPs only available on bw tests"):
        grammar.perftest_parse("ib_write_lat", ["-q", "2"], PERFTESTS[1], kind="lat")
    assert grammar.perftest_parse("ib_write_lat", ["-q", "2"], PERFTESTS[2], kind="lat")[0] == [("q", "2")]


def test_perftest_accepts_real_but_rare_forms():
    opts, operands = grammar.perftest_parse(
        "ib_write_bw", ["--run_infinitely", "--flow_label", "7", "-T", "106", "-R", "--use_cuda_dmabuf", "--report-both", "-x3", "10.0.0.2"], PERFTESTS[0]
    )
    assert ("--flow_label", "7") in opts and ("T", "106") in opts and operands == ["10.0.0.2"]


def test_the_simulated_perftest_prints_the_refusal_and_exits_1(capsys):
    assert ib_write_bw.main(["-d", "mlx5_0", "--gid_index", "3"], perftest=PERFTESTS[1]) == 1
    assert capsys.readouterr().err == (
        "ib_write_bw: unrecognized option '--gid_index'\n Invalid Command or flag.\n"
        " Please check command line and run again.\n\n Parser function exited with "
        "Error\n"
    )


PERF = {
    "size": 1048576,
    "qps": 4,
    "duration": 10,
    "iterations": 5000,
    "gid_index": 3,
    "tclass": 106,
    "sl": 3,
    "use_cuda": True,
    "extra_args": [],
    "mode": "client",
}


@pytest.mark.parametrize("version", PERFTESTS)
@pytest.mark.parametrize("variant", [{}, {"mode": "server"}, {"duration": 0}, {"use_cuda": False, "sl": None, "tclass": None, "gid_index": None}])
def test_every_perftest_argv_linerate_builds_passes_the_gate(version, variant):
    p = dict(PERF, **variant)
    test = {"device": "mlx5_0", "ib_port": 1, "tcp_port": 18515, "gpu": 2, "server": "10.0.0.2"}
    for json_path in (None, "/tmp/r.json"):
        argv = perftest.perftest_argv("ib_write_bw", p, test, 0, json_path)
        opts, operands = grammar.perftest_parse("ib_write_bw", argv[1:], version)
        assert operands == (["10.0.0.2"] if p["mode"] == "client" else [])


# ---------------------------------------------------------------- nccl-tests


def test_output_file_minus_j_first_appears_in_nccl_tests_2_17_3():
    versions = grammar.table("nccl_tests")["versions"]
    first = min((v for v in versions if grammar.nccl_tests_has(v, "output_file")), key=grammar.version_key)
    assert first == "2.17.3"
    assert not grammar.nccl_tests_has(NCCL_OLD, "output_file") and grammar.nccl_tests_has(NCCL_NEW, "output_file")
    assert grammar.nccl_tests_header("2.17.3") is None
    assert grammar.nccl_tests_header("2.17.4").startswith("# nccl-tests version %s")


def test_an_old_nccl_tests_given_minus_j_prints_its_usage_and_exits_0_with_no_results(capsys):
    assert all_reduce_perf.main(["-b", "8", "-e", "8M", "-J", "/tmp/x.json"], version=NCCL_OLD) == 0
    out, err = capsys.readouterr()
    assert err == "all_reduce_perf: invalid option -- 'J'\n"
    assert out.startswith("invalid option '?'\nUSAGE: all_reduce_perf \n\t[-t,--nthreads <num threads>] \n\t")
    assert "--output_file" not in out and "# Avg bus bandwidth" not in out
    assert all_reduce_perf.main(["--minbytes=8", "--bogus"], version=NCCL_NEW) == 0
    assert capsys.readouterr().err == "all_reduce_perf: unrecognized option '--bogus'\n"


def test_nccl_tests_accepts_real_but_rare_forms():
    opts, _ = grammar.nccl_tests_parse("all_reduce_perf", ["-G", "10", "--average", "2", "-z1", "-R", "1"], NCCL_OLD)
    assert opts == [("G", "10"), ("a", "2"), ("z", "1"), ("R", "1")]
    opts, _ = grammar.nccl_tests_parse("all_reduce_perf", ["--output_file", "r.json", "-M", "1"], NCCL_NEW)
    assert opts == [("J", "r.json"), ("M", "1")]


NCCL = {
    "test": "all_reduce_perf",
    "hosts": ["10.0.0.1", "10.0.0.2"],
    "gpus": 8,
    "min_bytes": "1G",
    "max_bytes": "4G",
    "step_factor": 2,
    "iterations": 20,
    "env": {"NCCL_DEBUG": "INFO"},
    "json": True,
    "mpirun": "mpirun",
    "mpirun_args": [],
    "ssh_args": "",
    "timeout": 60,
}


def test_every_nccl_tests_argv_linerate_builds_passes_the_gate_of_its_release():
    argv = nccl_tests.nccl_argv(NCCL, "/usr/bin/mpirun")
    test_args = argv[argv.index("all_reduce_perf") + 1 :]
    for version in (NCCL_OLD, NCCL_NEW):
        grammar.nccl_tests_parse("all_reduce_perf", test_args, version)
    with_json = nccl_tests.nccl_argv(NCCL, "/usr/bin/mpirun", "/tmp/r.json")
    grammar.nccl_tests_parse("all_reduce_perf", with_json[with_json.index("all_reduce_perf") + 1 :], NCCL_NEW)
    with pytest.raises(grammar.NcclTestsUsage):
        grammar.nccl_tests_parse("all_reduce_perf", with_json[with_json.index("all_reduce_perf") + 1 :], NCCL_OLD)


class SimRun:
    """A Runner whose nccl-tests is the lab simulator at ``version`` and whose mpirun prints ``table``."""

    def __init__(self, version, table, capsys):
        self.version, self.table, self.capsys, self.calls, self.started = version, table, capsys, [], []

    def path(self, tool, argv=None):
        return "/usr/bin/" + tool

    def __call__(self, argv, env=None, data=None):
        self.calls.append(argv)
        self.capsys.readouterr()
        rc = all_reduce_perf.main(argv[1:], version=self.version)
        out, err = self.capsys.readouterr()
        return rc, out, err

    def start(self, argv, merge_stderr=False):
        self.started.append(argv)
        import subprocess

        return subprocess.Popen(["cat", self.table], stdout=subprocess.PIPE, text=True)


FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "nccl_tests")


def test_nccl_tests_json_is_asked_only_of_a_release_that_has_minus_j(capsys):
    table = os.path.join(FIX, "all_reduce_2_19_two_nodes.txt")
    old = SimRun(NCCL_OLD, table, capsys)
    res = nccl_tests.run_nccl_tests(old, NCCL)
    assert old.calls == [["all_reduce_perf", "-h"]] and "-J" not in old.started[0]
    assert res["json_used"] is False and "before 2.17.3" in res["json_note"]
    assert res["busbw"] and res["passed"] is True  # the text table was read instead
    new = SimRun(NCCL_NEW, table, capsys)
    res = nccl_tests.run_nccl_tests(new, NCCL)
    assert new.started[0][-2] == "-J" and res["json_used"] is True and res["json_note"] is None
    # json not asked: no probe at all
    quiet = SimRun(NCCL_NEW, table, capsys)
    nccl_tests.run_nccl_tests(quiet, dict(NCCL, json=False))
    assert quiet.calls == [] and "-J" not in quiet.started[0]


def test_a_probe_that_prints_no_usage_falls_back_to_the_text_table():
    def run(argv):
        return 127, "", "all_reduce_perf: error while loading shared libraries: libnccl.so.2"

    assert nccl_tests.nccl_json_supported(run, "all_reduce_perf") == (False, "all_reduce_perf -h printed no usage (exit status 127); reading the text table")


def test_the_nccl_tests_version_header_is_read_when_the_release_prints_it(capsys, tmp_path):
    # the fixture (a 2.19 run) carries util.cu's header; a release before 2.17.4 prints none
    fixture = os.path.join(FIX, "all_reduce_2_19_two_nodes.txt")
    res = nccl_tests.run_nccl_tests(SimRun(NCCL_NEW, fixture, capsys), dict(NCCL, json=False))
    assert res["nccl_tests_version"] == "2.19.6"
    table = tmp_path / "t.txt"
    table.write_text("".join(line for line in open(fixture) if "nccl-tests version" not in line))
    res = nccl_tests.run_nccl_tests(SimRun(NCCL_OLD, str(table), capsys), dict(NCCL, json=False))
    assert res["nccl_tests_version"] is None and res["busbw"]


# ---------------------------------------------------------------- mlnx_qos (mlnx-tools optparse table)


def _mlnx_qos_parse(argv, version):
    from linerate_lab.tools import mlnx_qos

    return mlnx_qos.parser(version).parse_args(argv)


@pytest.mark.parametrize("version", MLNX_TOOLS)
def test_mlnx_qos_refuses_invented_options_and_takes_rare_real_ones(version, capsys):
    with pytest.raises(SystemExit) as e:
        _mlnx_qos_parse(["-i", "eth0", "--dscp-prio", "set,26,3"], version)
    assert e.value.code == 2 and "mlnx_qos: error: no such option: --dscp-prio" in capsys.readouterr().err
    o, _ = _mlnx_qos_parse(["-i", "eth0", "--defltprio", "3", "--prio2buffer", "0,0,0,1,0,0,0,0", "-a"], version)
    assert o.defltprio == "3" and o.printall is True


@pytest.mark.parametrize("version", MLNX_TOOLS)
def test_every_mlnx_qos_argv_linerate_builds_passes_the_gate(version):
    port = roce.Port(run=None, netdev="enp65s0f0np0", device="mlx5_0")
    want = {"trust": "dscp", "pfc": [0, 0, 0, 1, 0, 0, 0, 0], "dscp2prio": {"26": 3, "48": 6}}
    have = {"trust": "pcp", "pfc": [0] * 8, "dscp2prio": {}}
    cmds = [argv for kind, argv in port.plan(want, have) if kind == "cmd" and argv[0] == "mlnx_qos"]
    assert len(cmds) == 3
    for argv in cmds + [["mlnx_qos", "-i", "enp65s0f0np0"]]:
        _opts, args = _mlnx_qos_parse(argv[1:], version)
        assert args == []


# ---------------------------------------------------------------- mlxconfig (mstflint parameter database)


def _linerate_mlxconfig_sets():
    """NAME=value pairs linerate's role and profiles set, rendered with the module's own set_arg."""
    with open(os.path.join(ROOT, "roles", "connectx_firmware", "defaults", "main.yml")) as f:
        d = yaml.safe_load(f)
    pairs = {}
    for name, value in d["connectx_firmware_params"].items():
        pairs[name] = ["ETH", "IB"] if "link_type" in str(value) else [value]
    for name in d["connectx_firmware_roce_params"]:
        pairs[name] = {"ROCE_CC_PRIO_MASK_P1": [255, 247], "CNP_DSCP_P1": [48], "CNP_802P_PRIO_P1": [6]}[name]
    for gen in fwprofile.GENERATIONS:
        for profile in fwprofile.PROFILES:
            for name, value in fwprofile.profile_params(profile, gen)[0].items():
                pairs.setdefault(name, []).append(value)
    return pairs, d["connectx_firmware_cold_reboot_params"] + d["connectx_firmware_reboot_params"]


@pytest.mark.parametrize("mft", MFTS)
def test_every_mlxconfig_parameter_linerate_sets_is_in_the_database_with_a_valid_value(mft):
    pairs, names = _linerate_mlxconfig_sets()
    assert {"LINK_TYPE_P1", "PCI_WR_ORDERING", "ADVANCED_PCI_SETTINGS", "ROCE_CC_PRIO_MASK_P1"} <= set(pairs)
    for name, values in pairs.items():
        entry = grammar.mlxconfig_param(name, mft)
        assert entry is not None, f"{name} is not an mlxconfig parameter in mstflint {mft}"
        for v in values:
            assert grammar.mlxconfig_value_ok(entry[0], set_arg(v)), (name, v, entry)
    for name in names:
        assert grammar.mlxconfig_param(name, mft) is not None, f"{name} is not an mlxconfig parameter in {mft}"


def test_mlxconfig_database_refuses_invented_names_and_values():
    assert grammar.mlxconfig_param("PCI_WRITE_ORDERING", MFTS[1]) is None
    assert grammar.mlxconfig_param("SRIOV_EN_P1", MFTS[1]) is None  # a global TLV takes no port suffix
    assert grammar.mlxconfig_param("LINK_TYPE", MFTS[1]) is None  # a port TLV needs one
    entry, port = grammar.mlxconfig_param("LINK_TYPE_P2", MFTS[1])
    assert port == 2 and entry["enum"] == {"IB": 1, "ETH": 2}
    assert not grammar.mlxconfig_value_ok(entry, "VPI") and grammar.mlxconfig_value_ok(entry, "eth")
    mask, _ = grammar.mlxconfig_param("ROCE_CC_PRIO_MASK_P1", MFTS[1])
    assert grammar.mlxconfig_value_ok(mask, "255") and not grammar.mlxconfig_value_ok(mask, "256")
    # real but rare: present in the 4.30 database, not yet in 4.26's
    assert grammar.mlxconfig_param("ROCE_CC_CNP_MODERATION_P1", MFTS[1]) is not None
    assert grammar.mlxconfig_param("ROCE_CC_CNP_MODERATION_P1", MFTS[0]) is None


# ---------------------------------------------------------------- mlxfwreset, mlxlink


@pytest.mark.parametrize("mft", MFTS)
def test_mlxfwreset_argv_linerate_builds_pass_and_invented_ones_fail(mft, capsys):
    from linerate_lab.tools import mlxfwreset

    p = mlxfwreset.parser(mft)
    for argv in (
        ["-d", "0000:41:00.0", "q"],
        ["-d", "0000:41:00.0", "-l", "3", "-y", "reset"],
        ["-d", "0000:41:00.0", "-l", "4", "-y", "reset"],
        ["--device", "x", "--sync", "1", "--skip_driver", "r"],
    ):  # rare but real
        p.parse_args(argv)
    for argv, msg in (
        (["-d", "x", "-l", "2", "reset"], "argument --level/-l: invalid choice: 2"),
        (["-d", "x", "--force", "reset"], "unrecognized arguments: --force"),
        (["-d", "x", "restart"], "argument command: invalid choice: 'restart'"),
    ):
        with pytest.raises(SystemExit) as e:
            p.parse_args(argv)
        assert e.value.code == 2 and msg in capsys.readouterr().err


@pytest.mark.parametrize("mft", MFTS)
def test_mlxlink_argv_linerate_builds_pass_and_invented_ones_fail(mft):
    with open(os.path.join(ROOT, "roles", "verify_fabric", "tasks", "link_health.yml")) as f:
        text = f.read()
    m = re.search(r"argv: \[mlxlink, (.*)\]", text)
    argv = [a.strip().strip('"') for a in m.group(1).split(",")]
    argv[1] = "0000:41:00.0"
    opts, operands = grammar.mlxlink_parse(argv, mft)
    assert [k for k, _ in opts] == ["d", "c", "m"] and operands == []
    opts, _ = grammar.mlxlink_parse(["-d", "x", "--show_fec", "--json", "-e"], mft)  # rare but real
    assert [k for k, _ in opts] == ["d", "--show_fec", "--json", "e"]
    with pytest.raises(grammar.MlxlinkRefused) as e:
        grammar.mlxlink_parse(["-d", "x", "--show_bler"], mft)
    assert e.value.lines == ["mlxlink: unrecognized option `--show_bler'", "-E- failed to parse arguments. Bad input parameter"]


# ---------------------------------------------------------------- OpenSM (the lab runs the real one)


def test_every_opensm_conf_key_linerate_writes_is_in_opensms_option_table():
    with open(os.path.join(ROOT, "roles", "ib_subnet_manager", "templates", "opensm.conf.j2")) as f:
        template = f.read()
    keys = set(re.findall(r"^([a-z_0-9]+)[ \t]", template, re.M))
    assert keys, "no key found in opensm.conf.j2"
    known = grammar.opensm_conf_keys(OPENSM)
    assert not keys - known, f"opensm.conf keys OpenSM {OPENSM} does not have: {sorted(keys - known)}"
    assert "routing_engine" in known and "sm_priority" in known and "routing_engines" not in known


def test_opensm_command_line_linerate_uses_is_in_main_c():
    o = grammar.opensm_options(OPENSM)
    with open(os.path.join(ROOT, "roles", "ib_subnet_manager", "templates", "linerate-opensm.service.j2")) as f:
        service = f.read()
    argv = re.search(r"ExecStart=/usr/sbin/opensm (.*)", service).group(1).split()
    opts, _ = grammar.getopt_long("opensm", argv, o["optstring"], o["long"], long_only=True)
    assert [k for k, _ in opts] == ["F"]
    with pytest.raises(grammar.GetoptError, match="unrecognized option '--cfg'"):
        grammar.getopt_long("opensm", ["--cfg", "x"], o["optstring"], o["long"], long_only=True)
