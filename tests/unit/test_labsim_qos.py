"""mlnx_qos, cma_roce_mode, cma_roce_tos against the model."""

from linerate_lab.tools import cma_roce, mlnx_qos

IF = "enp65s0f0np0"
TCS = "".join(
    f"tc: {tc} ratelimit: unlimited, tsa: vendor\n\t priority:  {up}\n" for tc, up in [(0, 1), (1, 0), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7)]
)
PCP = (
    "DCBX mode: OS controlled\nPriority trust state: pcp\n"
    "Receive buffer size (bytes): 262016,0,0,0,0,0,0,0,max_buffer_size=2097152\n"
    "Cable len: 7\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n"
    "\tenabled     0   0   0   0   0   0   0   0   \n"
    "\tbuffer      0   0   0   0   0   0   0   0   \n" + TCS
)
DSCP_TABLE = "".join(f"\tprio:{p} dscp:" + ",".join("%02d" % d for d in range(8 * p + 7, 8 * p - 1, -1)) + ",\n" for p in range(8))


def test_fresh_driver_dump(lab):
    assert lab.run(mlnx_qos, ["-i", IF]) == (0, PCP, "")


def test_trust_dscp_and_pfc(lab):
    rc, out, _ = lab.run(mlnx_qos, ["-i", IF, "--trust", "dscp"])
    assert rc == 0
    assert out.startswith("DCBX mode: OS controlled\nPriority trust state: dscp\ndscp2prio mapping:\n" + DSCP_TABLE + "Receive buffer size")
    rc, out, _ = lab.run(mlnx_qos, ["-i", IF, "--pfc", "0,0,0,1,0,0,0,0"])
    assert "\tenabled     0   0   0   1   0   0   0   0   \n" in out
    q = lab.nic()["qos"]
    assert q["trust"] == "dscp" and q["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert q["dscp2prio"]["26"] == 3 and len(q["dscp2prio"]) == 64
    # the other rail is untouched
    assert lab.nic("mlx5_1")["qos"]["trust"] == "pcp"


def test_dscp2prio_switches_trust_like_dcbnl(lab):
    out = lab.run(mlnx_qos, ["-i", IF, "--dscp2prio", "set,26,3"])[1]
    assert "Priority trust state: dscp\ndscp2prio mapping:\n\tprio:3 dscp:26,\nReceive" in out
    out = lab.run(mlnx_qos, ["-i", IF, "--dscp2prio", "del,26,3"])[1]
    assert "Priority trust state: pcp\nReceive" in out
    lab.run(mlnx_qos, ["-i", IF, "--trust", "dscp"])
    out = lab.run(mlnx_qos, ["-i", IF, "--dscp2prio", "set,48,5"])[1]
    assert "\tprio:5 dscp:48,47,46,45,44,43,42,41,\n\tprio:5 dscp:40,\n" in out
    assert "\tprio:6 dscp:55,54,53,52,51,50,49,\n" in out


def test_ets_and_prio_tc(lab):
    rc, out, _ = lab.run(mlnx_qos, ["-i", IF, "-s", "ets,ets,ets,ets,ets,ets,ets,ets", "-t", "10,10,10,40,10,10,5,5", "-p", "0,0,0,3,0,0,6,0"])
    assert rc == 0
    assert "tc: 0 ratelimit: unlimited, tsa: ets, bw: 10%\n" + "".join(f"\t priority:  {u}\n" for u in (0, 1, 2, 4, 5, 7)) in out
    assert "tc: 3 ratelimit: unlimited, tsa: ets, bw: 40%\n\t priority:  3\n" in out
    assert "tc: 1 " not in out
    rc, out, _ = lab.run(mlnx_qos, ["-i", IF, "-s", "ets,ets,ets,ets,ets,ets,ets,ets", "-t", "10,10,10,10,10,10,10,10"])
    assert (rc, out) == (1, "[Errno 22] Invalid argument\n")
    out = lab.run(mlnx_qos, ["-i", IF, "-r", "0,0,0,100,0,0,0,0"])[1]
    assert "tc: 3 ratelimit: 100.0 Gbps, tsa: ets, bw: 40%\n" in out


def test_mlnx_qos_errors(lab):
    rc, out, _ = lab.run(mlnx_qos, [])
    assert (rc, out) == (1, "Interface name is required\nUsage: mlnx_qos -i <interface> [options]\n")
    rc, out, _ = lab.run(mlnx_qos, ["-i", IF, "--pfc", "0,0,0,2,0,0,0,0"])
    assert rc == 1 and out.startswith("Bad value for PFC: 2 is not in the range 0..1\n")
    assert lab.run(mlnx_qos, ["-i", IF, "--pfc", "0,0,1"])[:2] == (1, "pfc list must have 8 items\n")
    assert lab.run(mlnx_qos, ["-i", IF, "--trust", "l2"])[:2] == (1, "Invalid trust state command. Refer to the help.\n")
    assert lab.run(mlnx_qos, ["-i", IF, "--trust", "dscp", "--dscp2prio", "set,1,1"])[:2] == (
        1,
        "trust and dscp2prio commands cannot be used at the same time.\n",
    )
    rc, out, _ = lab.run(mlnx_qos, ["-i", "eth0"])
    assert rc == 1 and out.endswith("ETS features are not supported on your system\n")
    assert lab.nic()["qos"]["pfc"] == [0] * 8


def test_get_and_specific_pfc(lab):
    # -F/--specific_pfc and -P/--get_pfc are in mlnx-tools v2607.0.6's option table, not in 23.10/24.10's
    lab.run(mlnx_qos, ["-i", IF, "-F", "x,x,x,1,x,x,x,x"], tools="2607.0.6")
    assert lab.run(mlnx_qos, ["-i", IF, "-P", "3"], tools="2607.0.6")[:2] == (0, "1\n")
    assert lab.nic()["qos"]["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    rc, out, err = lab.run(mlnx_qos, ["-i", IF, "-P", "3"], tools="24.10.0-1.2410114")
    assert rc == 2 and err.endswith("mlnx_qos: error: no such option: -P\n")


def test_cma_roce_mode_and_tos(lab):
    assert lab.run(cma_roce, ["-d", "mlx5_0", "-p", "1"], what="mode")[:2] == (0, "RoCE v2\n")
    assert lab.run(cma_roce, ["-d", "mlx5_0", "-p", "1", "-m", "1"], what="mode")[:2] == (0, "IB/RoCE v1\n")
    assert lab.nic()["cma"]["roce_mode"] == "IB/RoCE v1"
    assert lab.run(cma_roce, ["-d", "mlx5_1", "-t", "106"], what="tos")[:2] == (0, "106\n")
    assert lab.nic("mlx5_1")["cma"]["tos"] == 106
    assert lab.run(cma_roce, ["-d", "mlx5_0", "-p", "2"], what="mode")[:2] == (1, "Device mlx5_0 port 2 does not exist\n")
    rc, out, err = lab.run(cma_roce, ["-d", "mlx5_7", "-t", "1"], what="tos")
    assert (rc, out) == (1, "Failed to create configuration for mlx5_7\n")
    lab.update(lambda n: n["modules"].remove("rdma_ucm") or n["modules"].remove("rdma_cm"))
    assert lab.run(cma_roce, ["-d", "mlx5_0"], what="mode")[:2] == (1, "Module rdma_cm is not loaded or does not support configfs\n")
    lab.mp.setattr("os.geteuid", lambda: 1000)
    assert lab.run(cma_roce, [], what="tos")[:2] == (1, "You must be root to run this\n")
