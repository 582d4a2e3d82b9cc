"""rdma_port_check: exact ibv_devinfo argv, port state/speed/width/GID from its real output format."""
import os

from ansible_collections.linerate.fabric.plugins.modules import rdma_port_check

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "ibv_devinfo")


class FakeModule:
    def __init__(self, outputs):
        self.outputs = outputs
        self.calls = []

    def run_command(self, argv, environ_update=None):
        self.calls.append(argv)
        assert environ_update == {"LC_ALL": "C"}
        return self.outputs.get(argv[0], (0, "[]", ""))


def test_reads_state_speed_width_and_gid_from_ibv_devinfo():
    text = open(os.path.join(FIX, "cx6dx_verbose_tabs.txt")).read()
    mod = FakeModule({"ibv_devinfo": (0, text, ""),
                      "ip": (0, '[{"addr_info": [{"family": "inet", "local": "10.60.0.21"}]}]', "")})
    port = {"device": "mlx5_3", "netdev": "no-such-netdev0"}
    out = rdma_port_check.check_port(mod, "ibv_devinfo", "ip", port, 3)
    assert mod.calls[0] == ["ibv_devinfo", "-v", "-d", "mlx5_3", "-i", "1"]
    assert mod.calls[1] == ["ip", "-j", "-4", "addr", "show", "dev", "no-such-netdev0"]
    assert out["present"] and out["state"] == "ACTIVE" and out["phys_state"] == "LinkUp"
    assert out["speed_gbps"] == 200.0 and out["width"] == 4
    assert out["gid"] == {"index": 3, "type": "RoCE v2", "gid": "::ffff:10.60.0.21", "ipv4": "10.60.0.21"}
    assert out["ipv4"] == ["10.60.0.21"] and out["gid_table"]


def test_missing_device_is_reported_not_raised():
    text = open(os.path.join(FIX, "error_no_devices.txt")).read()
    mod = FakeModule({"ibv_devinfo": (255, "", text)})
    out = rdma_port_check.check_port(mod, "ibv_devinfo", "ip", {"device": "mlx5_9", "netdev": "x"}, 3)
    assert out["present"] is False and out["error"]
