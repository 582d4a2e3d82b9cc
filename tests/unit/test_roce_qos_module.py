"""roce_qos module: exact argv, changed, check mode, idempotence, verification after apply."""
import json
import os

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils import roce
from ansible_collections.linerate.fabric.plugins.modules import roce_qos

from module_harness import Tools, fixture, run_module

NETDEV = "enp65s0f0np0"
ARGS = {"netdev": NETDEV, "device": "mlx5_0", "trust": "dscp", "pfc_priorities": [3],
        "dscp2prio": {"26": 3, "48": 6}, "ecn_priorities": [3], "cnp_dscp": 48, "cnp_priority": 6,
        "roce_mode": "v2", "roce_tos": 104, "mtu": 4200}
READS = [["mlnx_qos", "-i", NETDEV], ["cma_roce_mode", "-d", "mlx5_0", "-p", "1"],
         ["cma_roce_tos", "-d", "mlx5_0", "-p", "1"], ["ip", "-j", "link", "show", "dev", NETDEV]]


class Nic:
    """A ConnectX port: mlnx_qos, cma_roce_* and ip answer from (and change) its state."""

    def __init__(self, sysfs_root, trust="pcp", pfc=None, mode="IB/RoCE v1", tos=0, mtu=1500,
                 dscp2prio=None, sticky=()):
        self.trust, self.pfc = trust, list(pfc or [0] * 8)
        self.dscp2prio = dict(dscp2prio or {d: d >> 3 for d in range(64)})
        self.mode, self.tos, self.mtu = mode, tos, mtu
        self.sticky = set(sticky)  # settings that ignore writes (a broken driver)
        self.ecn = os.path.join(sysfs_root, NETDEV, "ecn")
        for point in ("roce_np", "roce_rp"):
            os.makedirs(os.path.join(self.ecn, point, "enable"))
            for p in range(8):
                self._w(f"{point}/enable/{p}", 0)
        self._w("roce_np/cnp_dscp", 0)
        self._w("roce_np/cnp_802p_prio", 0)
        self.tools = Tools({"mlnx_qos": self.mlnx_qos, "cma_roce_mode": self.cma_roce_mode,
                            "cma_roce_tos": self.cma_roce_tos, "ip": self.ip})

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
        lines += ["Cable len: 7", "PFC configuration:",
                  "\tpriority    0   1   2   3   4   5   6   7",
                  "\tenabled     " + "   ".join(str(v) for v in self.pfc) + "   "]
        for tc, prio in enumerate([1, 0, 2, 3, 4, 5, 6, 7]):
            lines += [f"tc: {tc} ratelimit: unlimited, tsa: vendor", f"\t priority:  {prio}"]
        return "\n".join(lines) + "\n"

    def mlnx_qos(self, args):
        assert args[:2] == ["-i", NETDEV]
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
        assert args[:4] == ["-d", "mlx5_0", "-p", "1"]
        if args[4:] == ["-m", "2"]:
            self.mode = "RoCE v2"
        return 0, self.mode + "\n", ""

    def cma_roce_tos(self, args):
        assert args[:4] == ["-d", "mlx5_0", "-p", "1"]
        if args[4:5] == ["-t"]:
            self.tos = int(args[5])
        return 0, f"{self.tos}\n", ""

    def ip(self, args):
        if args == ["-j", "link", "show", "dev", NETDEV]:
            link = json.loads(fixture("roce_qos", "ip_link_show.json"))
            link[0]["mtu"] = self.mtu
            return 0, json.dumps(link), ""
        if args[:4] == ["link", "set", "dev", NETDEV] and args[4] == "mtu":
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
    nic = Nic(sysfs, trust="dscp", pfc=[0, 0, 0, 1, 1, 0, 0, 0], dscp2prio=dmap, mode="RoCE v2", tos=104,
              mtu=4200)
    for rel, v in (("roce_np/enable/3", 1), ("roce_rp/enable/3", 1), ("roce_np/cnp_dscp", 48),
                   ("roce_np/cnp_802p_prio", 6)):
        nic._w(rel, v)
    out = run_module(roce_qos.main, dict(ARGS, sysfs_net=sysfs), nic.tools, capsys)
    assert out["commands"] == [["mlnx_qos", "-i", NETDEV, "--pfc", "0,0,0,1,0,0,0,0"],
                               ["mlnx_qos", "-i", NETDEV, "--dscp2prio", "set,26,3"]]
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
    assert nic.tools.calls == [["ip", "-j", "link", "show", "dev", NETDEV],
                               ["ip", "link", "set", "dev", NETDEV, "mtu", "4200"],
                               ["ip", "-j", "link", "show", "dev", NETDEV]]
    assert out["before"] == {"mtu": 1500}


def test_missing_ecn_controls_fail_clearly(tmp_path, capsys):
    nic = Nic(str(tmp_path))
    out = run_module(roce_qos.main, {"netdev": NETDEV, "ecn_priorities": [3], "sysfs_net": str(tmp_path / "none")},
                     nic.tools, capsys)
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
