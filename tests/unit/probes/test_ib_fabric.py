"""ib_fabric_check (module_utils/probes/ib_fabric.py): the diag tools run under timeout through the shared Runner
(locale C plus the given environment), on real captures of the lab fabric; findings, summary, pkey tables."""

import os

from ansible_collections.linerate.fabric.plugins.module_utils.probes import ib_fabric as ibfabric
from ansible_collections.linerate.fabric.plugins.module_utils.runner import Runner
from ansible_collections.linerate.fabric.plugins.modules import ib_fabric_check
from module_harness import Tools, fixture, run_module
from checks.test_ib import _intent

LINKS, UPLINKS, SWITCHES = _intent()
NODE1, NODE3 = "0xa088c20300000101", "0xa088c20300000301"
PARTS = [
    {"name": "storage", "pkey": "0x0010", "membership": "full", "guids": [NODE3, NODE1]},
    {"name": "tenant_a", "pkey": "0x0020", "membership": "limited", "guids": [NODE3]},
]
ARGS = {
    "expected_sm_priority": 15,
    "expected_links": LINKS,
    "switch_links": UPLINKS,
    "switches": SWITCHES,
    "link_width": 4,
    "link_speed_gbps": 40,
    "partitions": PARTS,
    "timeout": 7,
    "environment": {"SIM_HOST": "node1", "IBSIM_PORT": 7070},
}


def counters(name):
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "counters", name)) as f:
        return f.read()


class Diag:
    def __init__(
        self,
        topology="lab-ib.txt",
        sminfo=(0, fixture("sminfo", "master.txt"), ""),
        netdiscover=None,
        queryerrors=(0, counters("ibqueryerrors_lab_ibsim_clean.txt"), ""),
    ):
        self.topology, self.sminfo, self.netdiscover = topology, sminfo, netdiscover
        self.queryerrors = queryerrors
        self.envs = []

    def __call__(self, args):
        timeout, tool, *rest = args
        assert timeout == "7"
        if tool == "sminfo":
            return self.sminfo
        if tool == "ibnetdiscover":
            return self.netdiscover or (0, fixture("ibnetdiscover", self.topology), "")
        if tool == "iblinkinfo":
            return 0, fixture("iblinkinfo", self.topology), ""
        if tool == "ibqueryerrors":
            # every threshold zero (an empty threshold file); never -k/-K (clearing is a change)
            assert rest == ["--threshold-file", "/dev/null"]
            return self.queryerrors
        if tool == "smpquery" and rest[0] == "pkeys":
            pkeys = {"1": "pkeys-node1.txt", "4": "pkeys-node3.txt"}.get(rest[1])
            return (0, fixture("smpquery", pkeys), "") if pkeys else (1, "", "ibwarn: mad query failed\n")
        raise AssertionError(args)


def run(capsys, diag, **args):
    tools = Tools({"timeout": diag})
    return run_module(ib_fabric_check.main, dict(ARGS, **args), tools, capsys), tools.calls


def test_clean_fabric_runs_each_tool_once_under_timeout(capsys):
    res, calls = run(capsys, Diag(), partitions=PARTS[:1])
    assert calls == [
        ["timeout", "7", "sminfo"],
        ["timeout", "7", "ibnetdiscover"],
        ["timeout", "7", "iblinkinfo"],
        ["timeout", "7", "smpquery", "pkeys", "4"],
        ["timeout", "7", "smpquery", "pkeys", "1"],
        ["timeout", "7", "ibqueryerrors", "--threshold-file", "/dev/null"],
    ]
    assert res["findings"] == [] and res["changed"] is False and res["sminfo"]["priority"] == 15
    assert res["summary"] == {"switches": 3, "cas": 4, "links": 6}
    assert set(res["pkey_tables"]) == {NODE1, NODE3}
    assert res["pkey_tables"][NODE1][:2] == ["0xffff", "0x8010"]


def test_the_given_environment_reaches_the_tools_as_strings():
    envs = []

    def run(argv, env=None):
        envs.append(env)
        return Diag()(argv[1:])

    res = ibfabric.fabric_check(run, dict(ARGS, checks=["sm"], expected_sm_guid=None, expected_sm_node=None))
    assert envs == [{"SIM_HOST": "node1", "IBSIM_PORT": "7070"}]
    assert res["findings"] == [] and "summary" not in res and "pkey_tables" not in res


def test_the_runner_keeps_the_c_locale_over_an_extra_environment():
    class Module:
        def get_bin_path(self, name, required=False, opt_dirs=None):
            return "/usr/bin/" + name

        def run_command(self, argv, environ_update=None):
            return argv, environ_update

    argv, env = Runner(Module())(["timeout", "7", "sminfo"], env={"SIM_HOST": "node1", "LC_ALL": "de_DE.UTF-8"})
    assert argv == ["/usr/bin/timeout", "7", "sminfo"] and env == {"SIM_HOST": "node1", "LC_ALL": "C", "LANG": "C"}


def test_findings_fail_the_task_naming_code_node_and_port(capsys):
    res, _calls = run(capsys, Diag(topology="lab-ib-missing-swapped.txt"), checks=["topology"])
    assert res["failed"] and res["msg"] == "InfiniBand fabric check: IB_LINK_MISSING leaf1 port 2; IB_PORTS_SWAPPED leaf2 port 1"
    assert [f["code"] for f in res["findings"]] == ["IB_LINK_MISSING", "IB_PORTS_SWAPPED"]
    res, _calls = run(capsys, Diag(topology="lab-ib-missing-swapped.txt"), checks=["topology"], fail_on_findings=False)
    assert not res.get("failed") and len(res["findings"]) == 2


def test_an_unanswered_sminfo_is_a_finding_and_an_undiscoverable_subnet_fails(capsys):
    diag = Diag(sminfo=(124, "", ""), netdiscover=(1, "", "ibwarn: [1234] mad_rpc_open_port: can't open UMAD port\n"))
    res, calls = run(capsys, diag)
    assert res["failed"] and res["msg"] == ("cannot discover the subnet: ibnetdiscover: exit 1: ibwarn: [1234] mad_rpc_open_port: can't open UMAD port")
    assert res["sminfo_error"] == "sminfo: exit 124: " and [f["code"] for f in res["findings"]] == ["IB_SM_NOT_MASTER"]
    assert [c[2] for c in calls] == ["sminfo", "ibnetdiscover"]


def test_an_unreadable_pkey_table_is_a_partition_finding(capsys):
    parts = [{"name": "storage", "pkey": "0x0010", "membership": "full", "guids": ["0xa088c20300000201"]}]
    res, calls = run(capsys, Diag(), checks=["partitions"], partitions=parts, fail_on_findings=False)
    assert calls[-1] == ["timeout", "7", "smpquery", "pkeys", "3"] and res["pkey_tables"] == {}
    assert [(f["code"], f["node"]) for f in res["findings"]] == [("IB_PARTITION_NOT_IN_FORCE", "node2 mlx5_0")]


def test_a_failed_discovery_query_reaches_the_task_as_a_warning(capsys, monkeypatch):
    from ansible.module_utils import basic

    warned = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, msg: warned.append(msg))
    text = "src/query_smp.c:195; umad (DR path slid 0; dlid 0; 0,1,1,31 Attr 0x11:0) bad status 110; Connection timed out\n" + fixture(
        "ibnetdiscover", "lab-ib.txt"
    )
    res, _ = run(capsys, Diag(netdiscover=(0, text, "")), partitions=PARTS[:1])
    assert res["summary"] == {"switches": 3, "cas": 4, "links": 6}
    assert len(res["discovery_warnings"]) == 1
    assert "Connection timed out" in res["discovery_warnings"][0] and "may be missing" in res["discovery_warnings"][0]
    assert warned == res["discovery_warnings"]
    warned.clear()
    res, _ = run(capsys, Diag(), partitions=PARTS[:1])
    assert "discovery_warnings" not in res and warned == []
