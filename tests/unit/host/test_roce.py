"""roce_qos module: exact argv, changed, check mode, idempotence, verification after apply."""

import json
import os
import shlex

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.host import roce
from ansible_collections.linerate.fabric.plugins.modules import roce_qos

from module_harness import Tools, fixture, run_module

NETDEV = "enp65s0f0np0"
ARGS = {
    "netdev": NETDEV,
    "device": "mlx5_0",
    "trust": "dscp",
    "pfc_priorities": [3],
    "dscp2prio": {"26": 3, "48": 6},
    "ecn_priorities": [3],
    "cnp_dscp": 48,
    "cnp_priority": 6,
    "roce_mode": "v2",
    "roce_tos": 104,
    "mtu": 4200,
}
READS = [
    ["mlnx_qos", "-i", NETDEV],
    ["cma_roce_mode", "-d", "mlx5_0", "-p", "1"],
    ["cma_roce_tos", "-d", "mlx5_0", "-p", "1"],
    ["ip", "-j", "link", "show", "dev", NETDEV],
]


class Nic:
    """A ConnectX port: mlnx_qos, cma_roce_* and ip answer from (and change) its state."""

    def __init__(self, sysfs_root, trust="pcp", pfc=None, mode="IB/RoCE v1", tos=0, mtu=1500, dscp2prio=None, sticky=(), netdev=NETDEV, device="mlx5_0"):
        self.netdev, self.device = netdev, device
        self.trust, self.pfc = trust, list(pfc or [0] * 8)
        self.dscp2prio = dict(dscp2prio or {d: d >> 3 for d in range(64)})
        self.mode, self.tos, self.mtu = mode, tos, mtu
        self.sticky = set(sticky)  # settings that ignore writes (a broken driver)
        self.ecn = os.path.join(sysfs_root, netdev, "ecn")
        for point in ("roce_np", "roce_rp"):
            os.makedirs(os.path.join(self.ecn, point, "enable"))
            for p in range(8):
                self._w(f"{point}/enable/{p}", 0)
        self._w("roce_np/cnp_dscp", 0)
        self._w("roce_np/cnp_802p_prio", 0)
        self.tools = Tools({"mlnx_qos": self.mlnx_qos, "cma_roce_mode": self.cma_roce_mode, "cma_roce_tos": self.cma_roce_tos, "ip": self.ip})

    def _w(self, rel, value):
        with open(os.path.join(self.ecn, rel), "w") as f:
            f.write(f"{value}\n")

    def ecn_value(self, rel):
        with open(os.path.join(self.ecn, rel)) as f:
            return int(f.read())

    def dump(self):
        lines = ["DCBX mode: OS controlled", f"Priority trust state: {self.trust}"]
        if self.trust == "dscp":
            lines.append("dscp2prio mapping:")
            for prio in range(8):
                dscps = sorted((d for d, p in self.dscp2prio.items() if p == prio), reverse=True)
                if dscps:
                    lines.append(f"\tprio:{prio} dscp:" + "".join(f"{d:02d}," for d in dscps))
        lines += [
            "Cable len: 7",
            "PFC configuration:",
            "\tpriority    0   1   2   3   4   5   6   7",
            "\tenabled     " + "   ".join(str(v) for v in self.pfc) + "   ",
        ]
        for tc, prio in enumerate([1, 0, 2, 3, 4, 5, 6, 7]):
            lines += [f"tc: {tc} ratelimit: unlimited, tsa: vendor", f"\t priority:  {prio}"]
        return "\n".join(lines) + "\n"

    def mlnx_qos(self, args):
        assert args[:2] == ["-i", self.netdev]
        opts = dict(zip(args[2::2], args[3::2]))
        if "--trust" in opts and "trust" not in self.sticky:
            self.trust = opts["--trust"]
        if "--pfc" in opts and "pfc" not in self.sticky:
            self.pfc = [int(v) for v in opts["--pfc"].split(",")]
        if "--dscp2prio" in opts:
            action, dscp, prio = opts["--dscp2prio"].split(",")
            assert action == "set"
            self.dscp2prio[int(dscp)] = int(prio)
        return 0, self.dump(), ""

    def cma_roce_mode(self, args):
        assert args[:4] == ["-d", self.device, "-p", "1"]
        if args[4:] == ["-m", "2"]:
            self.mode = "RoCE v2"
        return 0, self.mode + "\n", ""

    def cma_roce_tos(self, args):
        assert args[:4] == ["-d", self.device, "-p", "1"]
        if args[4:5] == ["-t"]:
            self.tos = int(args[5])
        return 0, f"{self.tos}\n", ""

    def ip(self, args):
        if args == ["-j", "link", "show", "dev", self.netdev]:
            link = json.loads(fixture("roce_qos", "ip_link_show.json"))
            link[0]["mtu"] = self.mtu
            return 0, json.dumps(link), ""
        if args[:4] == ["link", "set", "dev", self.netdev] and args[4] == "mtu":
            self.mtu = int(args[5])
            return 0, "", ""
        raise AssertionError(args)


@pytest.fixture
def sysfs(tmp_path):
    return str(tmp_path)


def writes(nic):
    return [c for c in nic.tools.calls if c not in READS]


def test_fresh_port_gets_every_setting_in_order(sysfs, capsys):
    nic = Nic(sysfs)
    out = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs), nic.tools, capsys)
    assert out["changed"] is True
    assert out["commands"] == [
        ["mlnx_qos", "-i", NETDEV, "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"],
        ["write", f"{sysfs}/{NETDEV}/ecn/roce_np/enable/3", "1"],
        ["write", f"{sysfs}/{NETDEV}/ecn/roce_rp/enable/3", "1"],
        ["write", f"{sysfs}/{NETDEV}/ecn/roce_np/cnp_dscp", "48"],
        ["write", f"{sysfs}/{NETDEV}/ecn/roce_np/cnp_802p_prio", "6"],
        ["cma_roce_mode", "-d", "mlx5_0", "-p", "1", "-m", "2"],
        ["cma_roce_tos", "-d", "mlx5_0", "-p", "1", "-t", "104"],
        ["ip", "link", "set", "dev", NETDEV, "mtu", "4200"],
    ]
    # the default DSCP map already sends 26 to 3 and 48 to 6 once trust is dscp: no --dscp2prio
    assert not any("--dscp2prio" in c for c in nic.tools.calls)
    assert out["before"]["trust"] == "pcp" and out["after"]["trust"] == "dscp"
    assert out["after"]["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert out["after"]["roce_mode"] == "v2" and out["after"]["mtu"] == 4200
    assert nic.ecn_value("roce_rp/enable/3") == 1 and nic.ecn_value("roce_rp/enable/2") == 0


def test_check_mode_changes_nothing_and_lists_everything(sysfs, capsys):
    nic = Nic(sysfs)
    out = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs), nic.tools, capsys, check=True, diff=True)
    assert out["changed"] is True
    assert writes(nic) == []  # only the reads ran
    assert nic.trust == "pcp" and nic.mtu == 1500 and nic.ecn_value("roce_np/enable/3") == 0
    assert ["mlnx_qos", "-i", NETDEV, "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"] in out["commands"]
    assert ["ip", "link", "set", "dev", NETDEV, "mtu", "4200"] in out["commands"]
    assert 'trust = "pcp"' in out["diff"]["before"] and 'trust = "dscp"' in out["diff"]["after"]
    assert "mtu = 4200" in out["diff"]["after"]


def test_idempotent_on_a_configured_port(sysfs, capsys):
    nic = Nic(sysfs)
    run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs), nic.tools, capsys)
    nic.tools.calls.clear()
    out = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs), nic.tools, capsys)
    assert out["changed"] is False
    assert out["commands"] == [] and nic.tools.calls == READS
    assert out["before"] == out["after"]


def test_wrong_pfc_vector_and_custom_dscp_map_are_corrected(sysfs, capsys):
    dmap = {d: d >> 3 for d in range(64)}
    dmap[26] = 0
    nic = Nic(sysfs, trust="dscp", pfc=[0, 0, 0, 1, 1, 0, 0, 0], dscp2prio=dmap, mode="RoCE v2", tos=104, mtu=4200)
    for rel, v in (("roce_np/enable/3", 1), ("roce_rp/enable/3", 1), ("roce_np/cnp_dscp", 48), ("roce_np/cnp_802p_prio", 6)):
        nic._w(rel, v)
    out = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs), nic.tools, capsys)
    assert out["commands"] == [["mlnx_qos", "-i", NETDEV, "--pfc", "0,0,0,1,0,0,0,0"], ["mlnx_qos", "-i", NETDEV, "--dscp2prio", "set,26,3"]]
    assert out["before"]["dscp2prio"] == {"26": 0, "48": 6}
    assert out["after"]["dscp2prio"] == {"26": 3, "48": 6}


def test_setting_that_does_not_take_fails(sysfs, capsys):
    nic = Nic(sysfs, sticky={"trust"})
    out = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs), nic.tools, capsys)
    assert out["failed"] is True
    assert "did not take" in out["msg"] and "--trust dscp" in out["msg"]


def test_only_given_settings_are_managed(sysfs, capsys):
    nic = Nic(sysfs)
    out = run_module(roce_qos.main, {"netdev": NETDEV, "mtu": 4200}, nic.tools, capsys)
    assert nic.tools.calls == [
        ["ip", "-j", "link", "show", "dev", NETDEV],
        ["ip", "link", "set", "dev", NETDEV, "mtu", "4200"],
        ["ip", "-j", "link", "show", "dev", NETDEV],
    ]
    assert out["before"] == {"mtu": 1500}


def test_missing_ecn_controls_fail_clearly(tmp_path, capsys):
    nic = Nic(str(tmp_path))
    out = run_module(roce_qos.main, {"netdev": NETDEV, "ecn_priorities": [3], "sysfs_net": str(tmp_path / "none")}, nic.tools, capsys)
    assert out["failed"] is True and "no RoCE ECN controls" in out["msg"]


def test_mlnx_qos_error_fails_with_its_message(sysfs, capsys):
    tools = Tools({"mlnx_qos": lambda a: (1, fixture("mlnx_qos", "error_no_device.txt"), "")})
    out = run_module(roce_qos.main, {"netdev": NETDEV, "trust": "dscp"}, tools, capsys)
    assert out["failed"] is True and out["rc"] == 1
    assert "No such device" in out["msg"]


def test_cma_error_is_reported(sysfs, capsys):
    tools = Tools({"cma_roce_mode": lambda a: (1, "Module rdma_cm is not loaded or does not support configfs\n", "")})
    out = run_module(roce_qos.main, {"netdev": NETDEV, "device": "mlx5_0", "roce_mode": "v2"}, tools, capsys)
    assert out["failed"] is True and "rdma_cm is not loaded" in out["msg"]


def test_rdma_cm_needs_device(sysfs, capsys):
    tools = Tools({})
    out = run_module(roce_qos.main, {"netdev": NETDEV, "roce_tos": 104}, tools, capsys)
    assert out["failed"] is True and "device: required" in out["msg"] and tools.calls == []


@pytest.mark.parametrize("text,mode", [("RoCE v2\n", "v2"), ("IB/RoCE v1\n", "v1")])
def test_read_roce_mode(text, mode):
    assert roce.read_roce_mode(text) == mode


def test_read_roce_tos_as_printed_after_a_set():
    assert roce.read_roce_tos("106\n") == 106


# ---------------------------------------------------------------- ports: several ports in one execution

NETDEV2 = "enp193s0f0np0"
SHARED = {k: v for k, v in ARGS.items() if k not in ("netdev", "device")}
PORTS = [{"netdev": NETDEV, "device": "mlx5_0"}, {"netdev": NETDEV2, "device": "mlx5_1"}]


class Nics:
    """Several ConnectX ports on one host: each tool call goes to the port it names; one list of calls."""

    def __init__(self, *nics):
        self.nics = {n.netdev: n for n in nics}
        self.nics.update({n.device: n for n in nics})
        self.tools = Tools(
            {
                "mlnx_qos": lambda a: self.nics[a[1]].mlnx_qos(a),
                "cma_roce_mode": lambda a: self.nics[a[1]].cma_roce_mode(a),
                "cma_roce_tos": lambda a: self.nics[a[1]].cma_roce_tos(a),
                "ip": lambda a: self.nics[a[a.index("dev") + 1]].ip(a),
            }
        )


def fresh_commands(sysfs, netdev, device):
    return [
        ["mlnx_qos", "-i", netdev, "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"],
        ["write", f"{sysfs}/{netdev}/ecn/roce_np/enable/3", "1"],
        ["write", f"{sysfs}/{netdev}/ecn/roce_rp/enable/3", "1"],
        ["write", f"{sysfs}/{netdev}/ecn/roce_np/cnp_dscp", "48"],
        ["write", f"{sysfs}/{netdev}/ecn/roce_np/cnp_802p_prio", "6"],
        ["cma_roce_mode", "-d", device, "-p", "1", "-m", "2"],
        ["cma_roce_tos", "-d", device, "-p", "1", "-t", "104"],
        ["ip", "link", "set", "dev", netdev, "mtu", "4200"],
    ]


def reads(netdev, device):
    return [
        ["mlnx_qos", "-i", netdev],
        ["cma_roce_mode", "-d", device, "-p", "1"],
        ["cma_roce_tos", "-d", device, "-p", "1"],
        ["ip", "-j", "link", "show", "dev", netdev],
    ]


def configured(sysfs, netdev, device, **state):
    """A port as the intent makes it, but for what ``state`` says."""
    nic = Nic(
        sysfs,
        **dict({"trust": "dscp", "pfc": [0, 0, 0, 1, 0, 0, 0, 0], "mode": "RoCE v2", "tos": 104, "mtu": 4200, "netdev": netdev, "device": device}, **state),
    )
    for rel, v in (("roce_np/enable/3", 1), ("roce_rp/enable/3", 1), ("roce_np/cnp_dscp", 48), ("roce_np/cnp_802p_prio", 6)):
        nic._w(rel, v)
    return nic


def test_ports_configures_each_port_in_one_execution_only_the_delta(sysfs, capsys):
    fresh = Nic(sysfs)
    almost = configured(sysfs, NETDEV2, "mlx5_1", mtu=1500)
    nics = Nics(fresh, almost)
    out = run_module(roce_qos.main, dict(SHARED, ports=PORTS, sysfs_net=sysfs), nics.tools, capsys)
    assert out["changed"] is True
    first, second = out["ports"]
    assert (first["netdev"], first["device"], first["port"], first["changed"]) == (NETDEV, "mlx5_0", 1, True)
    assert first["commands"] == fresh_commands(sysfs, NETDEV, "mlx5_0")
    # the second port differs only in its MTU: that is all it gets
    assert (second["netdev"], second["device"], second["port"], second["changed"]) == (NETDEV2, "mlx5_1", 1, True)
    assert second["commands"] == [["ip", "link", "set", "dev", NETDEV2, "mtu", "4200"]]
    assert second["before"]["mtu"] == 1500 and second["after"]["mtu"] == 4200
    assert second["before"]["trust"] == second["after"]["trust"] == "dscp"
    assert out["commands"] == first["commands"] + second["commands"]
    # port after port: the first is read, changed and read back before the second is read
    calls = nics.tools.calls
    assert calls.index(["ip", "link", "set", "dev", NETDEV, "mtu", "4200"]) < calls.index(["mlnx_qos", "-i", NETDEV2])
    assert fresh.trust == "dscp" and fresh.mtu == 4200 and fresh.mode == "RoCE v2" and almost.mtu == 4200
    assert fresh.ecn_value("roce_np/enable/3") == 1
    assert "diff" not in out and "before" not in out

    nics.tools.calls.clear()
    again = run_module(roce_qos.main, dict(SHARED, ports=PORTS, sysfs_net=sysfs), nics.tools, capsys)
    assert again["changed"] is False and again["commands"] == []
    assert [p["changed"] for p in again["ports"]] == [False, False]
    assert nics.tools.calls == reads(NETDEV, "mlx5_0") + reads(NETDEV2, "mlx5_1")


def test_ports_port_number_goes_to_rdma_cm(sysfs, capsys):
    calls = []

    def cma(args):
        calls.append(args)
        return 0, "RoCE v2\n" if len(args) == 4 else "", ""

    tools = Tools({"cma_roce_mode": cma})
    out = run_module(roce_qos.main, {"ports": [{"netdev": NETDEV, "device": "mlx5_0", "port": 2}], "roce_mode": "v2"}, tools, capsys)
    assert calls == [["-d", "mlx5_0", "-p", "2"]] and out["ports"][0]["port"] == 2 and out["changed"] is False


def test_ports_check_mode_changes_nothing_and_diffs_each_port(sysfs, capsys):
    fresh, almost = Nic(sysfs), configured(sysfs, NETDEV2, "mlx5_1", trust="pcp")
    nics = Nics(fresh, almost)
    out = run_module(roce_qos.main, dict(SHARED, ports=PORTS, sysfs_net=sysfs), nics.tools, capsys, check=True, diff=True)
    assert nics.tools.calls == reads(NETDEV, "mlx5_0") + reads(NETDEV2, "mlx5_1")  # only reads ran
    assert fresh.trust == "pcp" and fresh.mtu == 1500 and almost.trust == "pcp"
    assert fresh.ecn_value("roce_np/enable/3") == 0
    first, second = out["ports"]
    # in pcp trust mlnx_qos shows no DSCP map: check mode lists the entries (the run reads the map again first)
    dscp_map = [["mlnx_qos", "-i", NETDEV, "--dscp2prio", "set,26,3"], ["mlnx_qos", "-i", NETDEV, "--dscp2prio", "set,48,6"]]
    fresh_cmds = fresh_commands(sysfs, NETDEV, "mlx5_0")
    assert first["commands"] == fresh_cmds[:1] + dscp_map + fresh_cmds[1:]
    # the second port: its trust mode and nothing else
    assert second["commands"] == [["mlnx_qos", "-i", NETDEV2, "--trust", "dscp"], *([c[0], c[1], NETDEV2, *c[3:]] for c in dscp_map)]
    assert out["changed"] is True and out["commands"] == first["commands"] + second["commands"]
    assert [d["before_header"] for d in out["diff"]] == [NETDEV, NETDEV2]
    assert 'trust = "pcp"' in out["diff"][1]["before"] and 'trust = "dscp"' in out["diff"][1]["after"]
    assert "mtu = 1500" in out["diff"][0]["before"] and "mtu = 4200" in out["diff"][0]["after"]
    assert "mtu = 4200" in out["diff"][1]["before"]


def test_ports_a_failing_port_does_not_stop_the_others(sysfs, capsys):
    broken = Nic(sysfs, sticky={"trust"})  # a driver that ignores the trust mode
    fresh = Nic(sysfs, netdev=NETDEV2, device="mlx5_1")
    nics = Nics(broken, fresh)
    out = run_module(roce_qos.main, dict(SHARED, ports=PORTS, sysfs_net=sysfs), nics.tools, capsys)
    assert out["failed"] is True
    assert out["msg"].startswith(f"1 of 2 ports failed (the others were done): {NETDEV}: {NETDEV}: settings did not take")
    assert "--trust dscp" in out["msg"] and NETDEV2 not in out["msg"]
    first, second = out["ports"]
    assert first["failed"] is True and first["netdev"] == NETDEV and first["device"] == "mlx5_0"
    assert first["commands"][0] == ["mlnx_qos", "-i", NETDEV, "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"]
    # the second port was still configured, completely
    assert "failed" not in second and second["changed"] is True
    assert second["commands"] == fresh_commands(sysfs, NETDEV2, "mlx5_1")
    assert fresh.trust == "dscp" and fresh.mtu == 4200 and fresh.mode == "RoCE v2"
    assert out["commands"] == first["commands"] + second["commands"] and out["changed"] is True
    assert "diff" not in out  # without --diff, not even on failure


def test_ports_a_port_whose_tool_fails_is_named_with_the_error(sysfs, capsys):
    gone = fixture("mlnx_qos", "error_no_device.txt")
    nic2 = Nic(sysfs, netdev=NETDEV2, device="mlx5_1")

    def mlnx_qos(args):
        return (1, gone, "") if args[1] == NETDEV else nic2.mlnx_qos(args)

    tools = Tools({"mlnx_qos": mlnx_qos})
    out = run_module(roce_qos.main, {"ports": PORTS, "trust": "dscp", "pfc_priorities": [3]}, tools, capsys)
    assert out["failed"] is True and out["msg"].startswith(f"1 of 2 ports failed (the others were done): {NETDEV}: mlnx_qos -i {NETDEV} exited 1")
    assert "No such device" in out["msg"]
    first, second = out["ports"]
    assert first["failed"] is True and first["rc"] == 1 and first["commands"] == []
    assert second["commands"] == [["mlnx_qos", "-i", NETDEV2, "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"]]
    assert nic2.trust == "dscp" and out["commands"] == second["commands"]


def test_ports_are_checked_before_any_is_touched(sysfs, capsys):
    tools = Tools({})
    bad = [{"netdev": NETDEV, "device": "mlx5_0"}, {"netdev": NETDEV2}]
    out = run_module(roce_qos.main, {"ports": bad, "roce_tos": 104, "mtu": 4200}, tools, capsys)
    assert out["failed"] is True and tools.calls == []
    assert out["msg"] == "ports[1].device: required with roce_mode or roce_tos (RDMA-CM defaults are per RDMA device)"
    out = run_module(roce_qos.main, {"ports": [PORTS[0], dict(PORTS[0], device="mlx5_1")], "mtu": 4200}, tools, capsys)
    assert out["failed"] is True and tools.calls == []
    assert out["msg"] == f"ports[1].netdev: {NETDEV!r} is already ports[0]"
    out = run_module(roce_qos.main, {"ports": PORTS, "trust": "pcp", "dscp2prio": {"26": 3}}, tools, capsys)
    assert out["failed"] is True and tools.calls == [] and out["msg"].startswith("dscp2prio: only with trust: dscp")


@pytest.mark.parametrize("extra", [{"netdev": NETDEV}, {"device": "mlx5_0"}, {"port": 1}])
def test_ports_excludes_the_single_port_options(sysfs, capsys, extra):
    tools = Tools({})
    out = run_module(roce_qos.main, dict({"ports": PORTS, "mtu": 4200}, **extra), tools, capsys)
    assert out["failed"] is True and tools.calls == []
    assert out["msg"] == f"parameters are mutually exclusive: {next(iter(extra))}|ports"


def test_netdev_or_ports_is_required(capsys):
    out = run_module(roce_qos.main, {"mtu": 4200}, Tools({}), capsys)
    assert out["failed"] is True and out["msg"] == "one of the following is required: netdev, ports"


def test_an_empty_ports_list_does_nothing(capsys):
    tools = Tools({})
    out = run_module(roce_qos.main, {"ports": [], "mtu": 4200}, tools, capsys)
    assert out["changed"] is False and out["ports"] == [] and out["commands"] == [] and tools.calls == []


# ---------------------------------------------------------------- the MTU order and the boot plan (issue 25)

BOOT = [
    ["mlnx_qos", "-i", NETDEV, "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"],
    ["mlnx_qos", "-i", NETDEV, "--dscp2prio", "set,26,3"],
    ["mlnx_qos", "-i", NETDEV, "--dscp2prio", "set,48,6"],
    ["write", "SYSFS/enp65s0f0np0/ecn/roce_np/enable/3", "1"],
    ["write", "SYSFS/enp65s0f0np0/ecn/roce_rp/enable/3", "1"],
    ["write", "SYSFS/enp65s0f0np0/ecn/roce_np/cnp_dscp", "48"],
    ["write", "SYSFS/enp65s0f0np0/ecn/roce_np/cnp_802p_prio", "6"],
    ["cma_roce_mode", "-d", "mlx5_0", "-p", "1", "-m", "2"],
    ["cma_roce_tos", "-d", "mlx5_0", "-p", "1", "-t", "104"],
    ["ip", "link", "set", "dev", NETDEV, "mtu", "4200"],
]


def boot(sysfs):
    return [[a.replace("SYSFS", sysfs) for a in argv] for argv in BOOT]


def test_lower_only_leaves_a_raise_for_later_and_says_so(sysfs, capsys):
    nic = Nic(sysfs, mtu=1500)
    out = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs, mtu_change="lower"), nic.tools, capsys)
    assert nic.mtu == 1500
    assert not any(c[:3] == ["ip", "link", "set"] for c in out["commands"])
    assert out["mtu_deferred"] == {"from": 1500, "to": 4200}
    assert out["before"]["mtu"] == 1500 and out["after"]["mtu"] == 1500
    # the raise, later: only the MTU is left to change
    nic.tools.calls.clear()
    out = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs, mtu_change="raise"), nic.tools, capsys)
    assert out["commands"] == [["ip", "link", "set", "dev", NETDEV, "mtu", "4200"]]
    assert out["changed"] is True and out["mtu_deferred"] is None and nic.mtu == 4200
    out = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs, mtu_change="raise"), nic.tools, capsys)
    assert out["changed"] is False and out["commands"] == []


def test_lower_only_lowers_and_raise_only_leaves_a_lowering(sysfs, capsys):
    nic = Nic(sysfs, mtu=9000)
    out = run_module(roce_qos.main, {"netdev": NETDEV, "mtu": 4200, "mtu_change": "raise"}, nic.tools, capsys)
    assert out["changed"] is False and out["commands"] == [] and nic.mtu == 9000
    assert out["mtu_deferred"] == {"from": 9000, "to": 4200}
    out = run_module(roce_qos.main, {"netdev": NETDEV, "mtu": 4200, "mtu_change": "lower"}, nic.tools, capsys)
    assert out["commands"] == [["ip", "link", "set", "dev", NETDEV, "mtu", "4200"]] and nic.mtu == 4200
    assert out["mtu_deferred"] is None


def test_check_mode_with_a_deferred_raise_previews_no_mtu(sysfs, capsys):
    nic = Nic(sysfs, mtu=1500)
    out = run_module(roce_qos.main, {"netdev": NETDEV, "mtu": 4200, "mtu_change": "lower"}, nic.tools, capsys, check=True, diff=True)
    assert out["changed"] is False and out["commands"] == []
    assert out["mtu_deferred"] == {"from": 1500, "to": 4200}


def test_unknown_mtu_change_is_refused_before_anything_runs(sysfs, capsys):
    nic = Nic(sysfs)
    out = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs, mtu_change="up"), nic.tools, capsys)
    assert out["failed"] is True and "mtu_change" in out["msg"] and "up" in out["msg"]
    assert nic.tools.calls == []


def test_boot_plan_is_every_step_from_defaults_whatever_the_port_holds(sysfs, capsys):
    nic = Nic(sysfs)
    first = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs), nic.tools, capsys)
    again = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs), nic.tools, capsys)
    assert first["boot"] == again["boot"] == boot(sysfs)
    # a deferred MTU raise is still in the boot plan: at boot the switches are configured
    lower = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs, mtu_change="lower"), Nic(os.path.join(sysfs, "other")).tools, capsys)
    assert lower["boot"][-1] == ["ip", "link", "set", "dev", NETDEV, "mtu", "4200"]


def test_the_module_renders_its_boot_plan_once_as_script_and_tmpfiles_lines(sysfs, capsys):
    # the role writes these as they are (issue 29 item 3: one renderer per plan)
    out = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs), Nic(sysfs).tools, capsys, check=True)
    assert out["boot_commands"] == [
        f"mlnx_qos -i {NETDEV} --trust dscp --pfc 0,0,0,1,0,0,0,0",
        f"mlnx_qos -i {NETDEV} --dscp2prio set,26,3",
        f"mlnx_qos -i {NETDEV} --dscp2prio set,48,6",
        "cma_roce_mode -d mlx5_0 -p 1 -m 2",
        "cma_roce_tos -d mlx5_0 -p 1 -t 104",
        f"ip link set dev {NETDEV} mtu 4200",
    ]
    assert out["boot_tmpfiles"] == [f"w {a[1]} - - - - {a[2]}" for a in boot(sysfs) if a[0] == "write"]
    assert len(out["boot_tmpfiles"]) == 4
    # every argument shell-quoted, as sh reads it back
    lines = roce.boot_lines([["mlnx_qos", "-i", "x;touch /tmp/p", "--trust", "dscp"], ["write", "/p", "1"]])
    assert lines == {"commands": ["mlnx_qos -i 'x;touch /tmp/p' --trust dscp"], "tmpfiles": ["w /p - - - - 1"]}
    assert shlex.split(lines["commands"][0]) == ["mlnx_qos", "-i", "x;touch /tmp/p", "--trust", "dscp"]
    # without ECN settings there is no tmpfiles line
    assert roce.boot_result({"mtu": 9000}, "eth9")["boot_tmpfiles"] == []


def test_boot_plan_per_port_and_only_managed_settings():
    assert roce.boot_plan({"mtu": 9000, "trust": "pcp"}, "eth9") == [
        ["mlnx_qos", "-i", "eth9", "--trust", "pcp"],
        ["ip", "link", "set", "dev", "eth9", "mtu", "9000"],
    ]
    with pytest.raises(ToolFailure, match="device: required"):
        roce.boot_plan({"roce_mode": "v2"}, "eth9")


# ---------------------------------------------------------------- state=rendered (playbooks/render.yml, issue 40)


def test_rendered_is_the_boot_plan_of_a_fresh_port_and_runs_nothing(sysfs, capsys):
    nic = Nic(sysfs)
    rendered = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs, state="rendered"), nic.tools, capsys)
    assert nic.tools.calls == []  # no tool read or run, no sysfs write
    assert nic.trust == "pcp" and nic.ecn_value("roce_np/enable/3") == 0
    assert rendered["changed"] is False
    # what a configure of the same port puts in its boot unit, whatever the port held
    applied = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs), nic.tools, capsys)
    for key in ("boot", "boot_commands", "boot_tmpfiles"):
        assert rendered[key] == applied[key], key
    assert rendered["netdev"] == NETDEV and rendered["boot_commands"][-1] == f"ip link set dev {NETDEV} mtu 4200"


def test_rendered_ports_one_result_each_and_bad_settings_are_refused(sysfs, capsys):
    nic = Nic(sysfs)
    ports = [{"netdev": NETDEV, "device": "mlx5_0"}, {"netdev": "eth9", "device": "mlx5_9", "port": 2}]
    args = {k: v for k, v in ARGS.items() if k not in ("netdev", "device")}
    out = run_module(roce_qos.main, dict(args, sysfs_net=sysfs, state="rendered", ports=ports), nic.tools, capsys)
    assert nic.tools.calls == []
    assert [(p["netdev"], p["port"]) for p in out["ports"]] == [(NETDEV, 1), ("eth9", 2)]
    assert "cma_roce_mode -d mlx5_9 -p 2 -m 2" in out["ports"][1]["boot_commands"]
    out = run_module(roce_qos.main, dict(args, sysfs_net=sysfs, state="rendered", ports=ports + ports[:1]), nic.tools, capsys)
    assert out["failed"] and NETDEV in out["msg"]
