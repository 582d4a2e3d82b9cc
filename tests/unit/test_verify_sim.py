"""The lab's simulated ib_write_bw and nccl-tests: real formats (read by the real parsers), real
failure texts, bandwidth and failures from the simulated data path."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.probes import meeting
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.nccl_log import parse_nccl_log
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.perftest import parse_ib_write_bw

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lab", "sim"))
from linerate_lab import rdma  # noqa: E402
from linerate_lab.tools import common  # noqa: E402

RUNNER = os.path.join(HERE, "sim_runner.py")


def nic(node_i, rail, **kw):
    n = {
        "device": f"mlx5_{rail}",
        "netdev": f"enp{65 + 16 * rail}s0f0np0",
        "port": 1,
        "link_layer": "Ethernet",
        "speed_gbps": 400,
        "width": 4,
        "cable": "up",
        "switch": f"leaf{rail + 1}",
        "switch_port": f"swp{node_i}",
        "address": f"192.168.{100 + rail}.{10 + node_i}/24",
        "mac": f"a0:88:c2:{node_i:02x}:{rail:02x}:01",
        "qos": {"trust": "dscp", "pfc": [0, 0, 0, 1, 0, 0, 0, 0], "dscp2prio": {"26": 3}},
        "cma": {"tos": 104},
    }
    n.update(kw)
    return n


def lab_model():
    nodes = {f"node{i}": {"gpus": 8, "modules": ["nvidia_peermem"], "nics": [nic(i, 0), nic(i, 1)]} for i in (1, 2)}
    switches = {f"leaf{r + 1}": {"ports": {f"swp{i}": {"up": True, "mtu": 9216, "pfc": [3], "speed_gbps": 400} for i in (1, 2)}} for r in (0, 1)}
    return {"version": 1, "transport": "roce", "nodes": nodes, "switches": switches, "faults": []}


def netdevs(node_i, mtu=4200, ipv4=True):
    return {
        f"enp{65 + 16 * r}s0f0np0": {
            "exists": True,
            "carrier": True,
            "mtu": mtu,
            "mac": f"a0:88:c2:{node_i:02x}:{r:02x}:01",
            "ipv4": [f"192.168.{100 + r}.{10 + node_i}"] if ipv4 else [],
        }
        for r in (0, 1)
    } | {"lo": {"exists": True, "carrier": True, "mtu": 65536, "mac": "00:00:00:00:00:00", "ipv4": ["127.0.0.1"]}}


@pytest.fixture
def lab(tmp_path):
    state = tmp_path / "state"
    state.mkdir()

    class Lab:
        model = lab_model()
        nets = {"node1": netdevs(1), "node2": netdevs(2)}

        def save(self):
            (state / "fabric.json").write_text(json.dumps(self.model))

        def env(self, node, **extra):
            return dict(os.environ, LINERATE_LAB_STATE=str(state), LINERATE_LAB_NODE=node, SIM_NETDEVS=json.dumps(self.nets[node]), PYTHONPATH="", **extra)

        def start(self, node, tool, *args, **extra):
            self.save()
            return subprocess.Popen(
                [sys.executable, RUNNER, tool, *args], env=self.env(node, **extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )

    return Lab()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(servers, ports, timeout=20):
    """Until a server listens on each TCP port (as the operator's script waits for the server before
    starting the client: a client started earlier fails to connect, as perftest's does), or a server
    has ended (a server that refuses to start, e.g. on a port that is down)."""
    want = {int(p) for p in ports}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and all(srv.poll() is None for srv in servers):
        listening = meeting.listening_ports() or set()
        if want <= listening:
            return
        time.sleep(0.02)
    if all(srv.poll() is None for srv in servers):
        raise AssertionError(f"no server listening on {sorted(ports)} after {timeout} s")


def pair(lab, *extra, tool="ib_write_bw", server_node="node2", client_node="node1", server_gid="3", tclass="104"):
    # perftest refuses an option given twice (" Duplicated argument"), so each side's values are set, not appended
    port = str(free_port())
    args = ["-d", "mlx5_0", "-x", "3", "-F", "--report_gbits", "-q", "4", "-D", "1", "-p", port, *extra]
    args += [f"--tclass={tclass}"] if tclass is not None else []
    srv = lab.start(server_node, tool, *[server_gid if a == "3" and args[i - 1] == "-x" else a for i, a in enumerate(args)])
    wait_listening([srv], [port])
    cli = lab.start(client_node, tool, *args, "127.0.0.1")
    c_out, c_err = cli.communicate(timeout=30)
    s_out, s_err = srv.communicate(timeout=30)
    return (cli.returncode, c_out + c_err), (srv.returncode, s_out + s_err)


def test_healthy_pair_near_line_rate_in_real_format(lab):
    (crc, cout), (src, sout) = pair(lab)
    assert crc == 0 and src == 0, cout + sout
    c, s = parse_ib_write_bw(cout), parse_ib_write_bw(sout)
    assert c["role"] == "client" and s["role"] == "server"
    assert c["device"] == "mlx5_0" and c["num_qps"] == 4 and c["link_type"] == "Ethernet" and c["gid_index"] == 3
    assert c["mtu"] == 4096 and c["duration_mode"] and c["bw_peak_gbps"] is None
    assert 370 < c["bw_average_gbps"] < 400 and 370 < s["bw_average_gbps"] < 400
    assert c["local"][0]["ipv4"] == "192.168.100.11" and c["remote"][0]["ipv4"] == "192.168.100.12"
    assert len(c["local"]) == 4
    assert "\t\tDevice         : mlx5_0" in cout  # perftest >= 4.5 TAB layout


def test_read_bw_and_mib_units(lab):
    port = str(free_port())
    srv = lab.start("node2", "ib_read_bw", "-d", "mlx5_1", "-x", "3", "-s", "65536", "-n", "1000", "-p", port)
    wait_listening([srv], [port])
    cli = lab.start("node1", "ib_read_bw", "-d", "mlx5_1", "-x", "3", "-s", "65536", "-n", "1000", "-p", port, "127.0.0.1")
    out = cli.communicate(timeout=30)[0]
    srv.communicate(timeout=30)
    r = parse_ib_write_bw(out)
    assert r["verb"] == "read" and r["units"] == "MiB/sec" and r["outstand_reads"] == 16
    assert 350 < r["bw_average_gbps"] < 400


def test_no_server_gives_perftests_connect_error(lab):
    lab.save()
    port = str(free_port())
    res = subprocess.run(
        [sys.executable, RUNNER, "ib_write_bw", "-d", "mlx5_0", "-x", "3", "-p", port, "127.0.0.1"],
        env=lab.env("node1"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert res.returncode == 1
    assert f"Couldn't connect to 127.0.0.1:{port}" in res.stderr
    with pytest.raises(ParseError, match="Unable to init the socket connection"):
        parse_ib_write_bw(res.stdout + res.stderr)


def test_port_down_is_the_real_port_state_error(lab):
    lab.model["nodes"]["node2"]["nics"][0]["cable"] = "down"
    (crc, cout), (src, sout) = pair(lab)
    assert src == 1 and "Port number 1 state is Down" in sout
    assert crc == 1 and "Couldn't connect to" in cout


def test_lower_speed_lowers_bandwidth(lab):
    lab.model["nodes"]["node2"]["nics"][0]["speed_gbps"] = 200
    (crc, cout), _ = pair(lab)
    assert crc == 0 and 180 < parse_ib_write_bw(cout)["bw_average_gbps"] < 200


@pytest.mark.parametrize("where", ["host", "switch", "no-tclass"])
def test_one_uncongested_pair_runs_at_line_rate_whatever_pfc_is(lab, where):
    """Hardware: a single pair never congests a non-blocking fabric; PFC shows only under incast."""
    tclass = "104"
    if where == "host":
        lab.model["nodes"]["node1"]["nics"][0]["qos"]["pfc"] = [0] * 8
    elif where == "switch":
        lab.model["switches"]["leaf1"]["ports"]["swp2"]["pfc"] = []
    else:
        tclass = "0"
    (crc, cout), _ = pair(lab, tclass=tclass)
    bw = parse_ib_write_bw(cout)["bw_average_gbps"]
    assert crc == 0 and 370 < bw < 400


def test_traffic_class_comes_only_from_the_programs_own_argv(lab, monkeypatch):
    """Real perftest: --tclass sets the GRH class of a verbs QP; -T only with -R; nothing -> class 0."""
    lab.save()
    monkeypatch.setenv("LINERATE_LAB_STATE", lab.env("node1")["LINERATE_LAB_STATE"])
    monkeypatch.setenv("LINERATE_LAB_NODE", "node1")
    monkeypatch.setattr(rdma, "netdev_state", lambda name: lab.nets["node1"].get(name, {"exists": False}))
    monkeypatch.setattr(rdma.subnet, "refresh_nic", lambda *a, **k: None)
    # the node's RDMA-CM default ToS (104 -> DSCP 26 -> priority 3) is NOT applied to a verbs QP
    assert rdma.local_port("mlx5_0", 1, 3)["priority"] == 0
    assert rdma.local_port("mlx5_0", 1, 3, 104)["priority"] == 3
    assert rdma.local_port("mlx5_0", 1, 3, None, rdma_cm=True)["priority"] == 3
    assert rdma.local_port("mlx5_0", 1, 3, 0, rdma_cm=True)["priority"] == 0


def test_tos_without_rdma_cm_is_refused_like_perftest(lab):
    proc = lab.start("node1", "ib_write_bw", "-d", "mlx5_0", "-x", "3", "-T", "104", "-p", str(free_port()))
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and "TOS only valid for rdma_cm based QP" in out


def test_frames_above_the_receivers_mtu_are_retry_exceeded(lab):
    lab.nets["node2"] = netdevs(2, mtu=1500)
    (crc, cout), (src, sout) = pair(lab)
    assert crc == 1 and "Failed status 12" in cout
    with pytest.raises(ParseError, match="Completion with error"):
        parse_ib_write_bw(cout)
    assert src == 1 and "Failed to exchange data" in sout
    # the other way the small frames fit: it runs, a little slower
    (crc, cout), _ = pair(lab, server_node="node1", client_node="node2")
    assert crc == 0 and "Requested mtu is higher than active mtu" not in cout
    assert parse_ib_write_bw(cout)["mtu"] == 1024


def test_missing_rocev2_gid_fails_to_rtr(lab):
    lab.nets["node1"] = netdevs(1, ipv4=False)
    (crc, cout), _ = pair(lab)
    assert crc == 1 and "to RTR" in cout and "Unable to Connect the HCA's through the link" in cout


def test_gid_table_and_active_mtu():
    # perftest and NCCL read the one GID table show_gids prints (tools/common.gids)
    st = {"exists": True, "carrier": True, "mtu": 4200, "mac": "a0:88:c2:01:00:01", "ipv4": ["192.168.100.11"]}
    table = common.gids(nic(1, 0), st)
    assert [(i, t, ip) for i, _, t, ip in table] == [(0, "v1", None), (1, "v2", None), (2, "v1", "192.168.100.11"), (3, "v2", "192.168.100.11")]
    assert table[3][1] == "0000:0000:0000:0000:0000:ffff:c0a8:640b"
    assert rdma.perftest_gid(table[3][1]) == "00:00:00:00:00:00:00:00:00:00:255:255:192:168:100:11"
    assert [rdma.active_mtu(m) for m in (1500, 4200, 9000, 1000, 300)] == [1024, 4096, 4096, 512, 256]


def moved_gid(lab, node):
    """An IPv6 address came up on node's rail 0 first (lab fault gid-index-moved): RoCE v2 IPv4 at 5."""
    lab.model["nodes"][node]["nics"][0]["gids_first"] = ["fd00:5ca1::2"]
    lab.nets[node]["enp65s0f0np0"]["ipv6"] = ["fd00:5ca1::2"]


def test_gid_index_is_each_sides_own(lab):
    # perftest's -x names the local GID; the remote one comes over the out-of-band exchange,
    # so node2 at index 5 and node1 at 3 connect, as on hardware
    moved_gid(lab, "node2")
    assert [g[0] for g in common.gids(lab.model["nodes"]["node2"]["nics"][0], lab.nets["node2"]["enp65s0f0np0"]) if g[2] == "v2" and g[3]] == [5]
    (crc, cout), (src, sout) = pair(lab, server_gid="5")
    assert crc == 0 and src == 0, cout + sout
    c, s = parse_ib_write_bw(cout), parse_ib_write_bw(sout)
    assert c["gid_index"] == 3 and s["gid_index"] == 5
    assert c["remote"][0]["ipv4"] == "192.168.100.12" and s["local"][0]["ipv4"] == "192.168.100.12"


def test_stale_gid_index_after_the_move_fails_to_rtr(lab):
    # node2's index 3 now holds the IPv6 GID (no IPv4): its QP cannot reach RTR on a RoCE v2 IPv4 fabric
    moved_gid(lab, "node2")
    (crc, cout), (src, sout) = pair(lab)
    assert src == 1 and "to RTR" in sout, sout
    assert crc == 1, cout


# ---------------------------------------------------------------- nccl-tests


def nccl_job(lab, nodes=("node1", "node2"), conf=None, test="all_reduce_perf"):
    jobid = f"t{free_port()}"
    procs = []
    for rank, node in enumerate(nodes):
        env = {
            "OMPI_COMM_WORLD_RANK": str(rank),
            "OMPI_COMM_WORLD_SIZE": str(len(nodes)),
            "OMPI_MCA_ess_base_jobid": jobid,
            "NCCL_DEBUG": "INFO",
            "NCCL_SOCKET_IFNAME": "lo",
            "NCCL_IB_GID_INDEX": "3",
            "NCCL_IB_HCA": "mlx5_0,mlx5_1",
        }
        env.update((conf or {}).get(node, {}))
        procs.append(lab.start(node, "nccl_tests", "-b", "256M", "-e", "1G", "-f", "2", "-g", "8", **env))
    outs = [p.communicate(timeout=60) for p in procs]
    return [p.returncode for p in procs], "\n".join(o + e for o, e in outs)


def test_nccl_healthy_uses_ib_with_gdr(lab):
    rcs, out = nccl_job(lab)
    assert rcs == [0, 0], out
    t = parse_nccl_tests(out)
    assert len(t["devices"]) == 16 and t["rows"][-1]["size"] == 2**30
    busbw = t["rows"][-1]["out_of_place"]["busbw"]
    assert 0.8 * 2 * 400 / 8 < busbw < 2 * 400 / 8
    log = parse_nccl_log(out)
    assert log["transport"] == "IB" and log["gdr"] is True and log["num_nics"] == 2
    assert log["env"]["NCCL_IB_HCA"] == "mlx5_0,mlx5_1"


def test_nccl_wrong_hca_falls_back_to_socket(lab):
    rcs, out = nccl_job(lab, conf={"node1": {"NCCL_IB_HCA": "mlx5_8"}, "node2": {"NCCL_IB_HCA": "mlx5_8"}})
    assert rcs == [0, 0]
    log = parse_nccl_log(out)
    assert log["transport"] == "Socket"
    assert any(f["signal"] == "socket_instead_of_ib" for f in log["fallbacks"])
    assert parse_nccl_tests(out)["rows"][-1]["out_of_place"]["busbw"] < 5


def test_nccl_without_peermem_has_no_gdrdma(lab):
    lab.model["nodes"]["node2"]["modules"] = []
    rcs, out = nccl_job(lab)
    node2 = "\n".join(line for line in out.splitlines() if line.startswith("node2:"))
    assert parse_nccl_log(node2)["gdr"] is False
    assert parse_nccl_tests(out)["rows"][-1]["out_of_place"]["busbw"] < 0.8 * 100


def test_nccl_wrong_gid_index_fails_like_nccl(lab):
    rcs, out = nccl_job(lab, conf={"node2": {"NCCL_IB_GID_INDEX": "0"}})
    assert rcs == [3, 3]
    with pytest.raises(ParseError, match="Test NCCL failure"):
        parse_nccl_tests(out)
    node2 = "\n".join(line for line in out.splitlines() if line.startswith("node2:"))
    assert "ibv_modify_qp" in parse_nccl_log(node2)["error"]


def test_nccl_port_down_uses_fewer_nics(lab):
    lab.model["nodes"]["node1"]["nics"][1]["cable"] = "down"
    rcs, out = nccl_job(lab)
    node1 = "\n".join(line for line in out.splitlines() if line.startswith("node1:"))
    assert parse_nccl_log(node1)["num_nics"] == 1
    assert parse_nccl_tests(out)["rows"][-1]["out_of_place"]["busbw"] < 0.8 * 100


def test_nccl_single_process_and_all_gather(lab):
    lab.save()
    res = subprocess.run(
        [sys.executable, RUNNER, "nccl_tests", "-b", "1G", "-e", "1G", "-g", "8"],
        env=lab.env("node1", NCCL_SOCKET_IFNAME="lo"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0
    assert parse_nccl_tests(res.stdout)["avg_bus_bandwidth"] > 100
    rcs, out = nccl_job(lab, test="all_gather_perf")
    assert rcs == [0, 0]


def incast(lab, senders=("node1", "node3"), receiver="node2", tclass="104"):
    """k clients write into one receiver port at once, each to its own server process."""
    lab.model["nodes"]["node3"] = {"gpus": 8, "modules": ["nvidia_peermem"], "nics": [nic(3, 0), nic(3, 1)]}
    for r in (0, 1):
        lab.model["switches"][f"leaf{r + 1}"]["ports"]["swp3"] = {"up": True, "mtu": 9216, "pfc": [3], "speed_gbps": 400}
    lab.nets["node3"] = netdevs(3)
    ports = [str(free_port()) for _ in senders]
    args = ["-d", "mlx5_0", "-x", "3", f"--tclass={tclass}", "-F", "--report_gbits", "-q", "4", "-D", "1"]
    servers = [lab.start(receiver, "ib_write_bw", *args, "-p", p) for p in ports]
    wait_listening(servers, ports)
    clients = [lab.start(s, "ib_write_bw", *args, "-p", p, "127.0.0.1") for s, p in zip(senders, ports)]
    outs = [c.communicate(timeout=30) for c in clients]
    for s in servers:
        s.communicate(timeout=30)
    with open(os.path.join(lab.env("node1")["LINERATE_LAB_STATE"], "fabric.json")) as f:
        m = json.load(f)
    bws = [parse_ib_write_bw(o)["bw_average_gbps"] for o, _ in outs]
    return bws, m


def counters(m, node, device="mlx5_0"):
    return next(n for n in m["nodes"][node]["nics"] if n["device"] == device).get("counters") or {}


def test_incast_on_a_lossless_class_pauses_the_senders_and_marks_ecn(lab):
    bws, m = incast(lab)
    assert all(180 < b < 200 for b in bws), bws  # two flows share the receiver's line rate
    for s in ("node1", "node3"):
        assert counters(m, s)["rx_prio3_pause"] > 0 and counters(m, s)["rp_cnp_handled"] > 0
        assert not [k for k in counters(m, s) if "pause" in k and "prio3" not in k]
    r = counters(m, "node2")
    assert r["np_ecn_marked_roce_packets"] > 0 and r["np_cnp_sent"] > 0 and "out_of_sequence" not in r
    sw = m["switches"]["leaf1"]["ports"]
    # pauses leave the senders' switch ports; marking happens on the receiver's egress port
    assert sw["swp1"]["counters"]["pfc_tx"]["3"] > 0 and sw["swp3"]["counters"]["pfc_tx"]["3"] > 0
    assert sw["swp2"]["counters"]["ecn_marked"]["3"] > 0 and "queue_drop" not in sw["swp2"]["counters"]


@pytest.mark.parametrize("where", ["host", "switch", "no-tclass"])
def test_incast_without_pfc_on_the_class_drops(lab, where):
    tclass = "104"
    if where == "host":
        lab.model["nodes"]["node1"]["nics"][0]["qos"]["pfc"] = [0] * 8
    elif where == "switch":
        lab.model["switches"]["leaf1"]["ports"]["swp2"]["pfc"] = []
    else:
        tclass = "0"  # class 0: the lossy one
    bws, m = incast(lab, ("node1", "node3"), "node2", tclass=tclass)
    assert min(bws) < 0.5 * 200, bws
    assert counters(m, "node2")["out_of_sequence"] > 0
    assert m["switches"]["leaf1"]["ports"]["swp2"]["counters"]["queue_drop"]
