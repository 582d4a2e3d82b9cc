"""The job's own preflight (intent/preflight.py): parameters refused with key, value and what is allowed;
the rendered POSIX sh script run here with a controlled environment (its library path, NCCL_NET_PLUGIN,
NCCL_SOCKET_IFNAME, rails that name interfaces this machine lacks), asserting the PREFLIGHT_* codes it
prints and its exit status. No sleeps; each run is one sh process."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.linerate.fabric.plugins.module_utils.findings import FAULT_CODES  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.intent import preflight  # noqa: E402

BASE = {
    "rails": [{"device": "mlx5_0", "port": 1, "netdev": "lo"}],
    "settings": {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_SOCKET_IFNAME": "lo"},
    "nccl_version": "2.21.5",
    "min_memlock_kb": 0,
    "min_shm_mb": 0,
    "handshake": False,
}


def run(tmp_path, params=None, env=None, libver="2.21.5", plugins=()):
    """Render with BASE + params, run with sh; (rc, stdout, stderr). A libnccl.so.2 carrying
    ``libver`` (None: none) and the ``plugins`` libraries lie in the job's LD_LIBRARY_PATH."""
    lib = tmp_path / "lib"
    lib.mkdir(exist_ok=True)
    if libver:
        (lib / "libnccl.so.2").write_bytes(b"\x7fELF...\x00NCCL version " + libver.encode() + b"+cuda12.4\x00")
    for name in plugins:
        (lib / name).write_bytes(b"\x7fELF")
    script = tmp_path / "preflight"
    script.write_text(preflight.preflight_script(dict(BASE, **(params or {}))))
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LD_LIBRARY_PATH": str(lib), "HOME": str(tmp_path)}
    e.update(env or {})
    res = subprocess.run(["sh", str(script)], env=e, capture_output=True, text=True, timeout=60)
    return res.returncode, res.stdout, res.stderr


def codes(text):
    return sorted({line.split()[1] for line in text.splitlines() if line.startswith("linerate: PREFLIGHT_")})


def test_every_code_the_script_prints_is_a_fault_code():
    text = preflight.preflight_script(BASE)
    printed = {w for line in text.splitlines() for w in line.replace('"', " ").split() if w.startswith("PREFLIGHT_")}
    assert printed == {c for c in FAULT_CODES if c.startswith("PREFLIGHT_")}
    assert all(FAULT_CODES[c][0] == "error" for c in printed)


def test_rendered_from_the_derivation():
    text = preflight.preflight_script(
        dict(
            BASE,
            rails=[{"device": "mlx5_0", "port": 1, "netdev": "ens1f0np0"}, {"device": "mlx5_3", "port": 2, "netdev": "ens4f1np1"}],
            settings={"NCCL_SOCKET_IFNAME": "=eth0"},
            nccl_version="2.23.4",
            net_plugins=["libnccl-net-ofi.so"],
            bootstrap_port=29400,
        )
    )
    assert "RAILS='mlx5_0:1:ens1f0np0 mlx5_3:2:ens4f1np1'" in text
    assert "FLEET_SOCKET_IFNAME==eth0" in text and "NCCL_WANT=2.23.4" in text
    assert "PLUGINS_WANT=libnccl-net-ofi.so" in text and "BOOTSTRAP_PORT=29400" in text
    assert subprocess.run(["sh", "-n", "/dev/stdin"], input=text, text=True).returncode == 0


@pytest.mark.parametrize(
    "key, value, allowed",
    [
        ("rails", [], "at least one"),
        ("rails", [{"device": "mlx5_0;rm", "netdev": "eth1"}], "rails[0].device"),
        ("nccl_version", "2.21", "major.minor.patch"),
        ("nccl_version", "", "major.minor.patch"),
        ("min_memlock_kb", -2, "an integer >= -1"),
        ("min_shm_mb", "big", "an integer >= 0"),
        ("bootstrap_port", 70000, "1..65535"),
        ("gdr", "maybe", "auto | yes | no"),
        ("output", "json", "slurm | plain"),
        ("net_plugins", ["lib nccl"], "libnccl-net"),
        ("handshake_program", "a b", "a program name or path"),
    ],
)
def test_bad_parameters_name_key_value_and_allowed(key, value, allowed):
    with pytest.raises(ValueError) as exc:
        preflight.preflight_script(dict(BASE, **{key: value}))
    msg = str(exc.value)
    assert key.split("[")[0] in msg and allowed in msg and repr(value)[:6].strip("[{'") in msg


def test_a_job_with_the_fleets_nccl_passes_the_checks_it_controls(tmp_path):
    rc, out, err = run(tmp_path, {"rails": [{"device": "mlx5_0", "port": 1, "netdev": "lo"}]})
    assert "PREFLIGHT_NCCL_VERSION" not in err and "PREFLIGHT_NET_PLUGIN" not in err
    assert "PREFLIGHT_SOCKET_IFNAME" not in err and "PREFLIGHT_SHM" not in err and "PREFLIGHT_MEMLOCK" not in err


def test_an_image_with_another_nccl_is_refused_with_the_code(tmp_path):
    rc, out, err = run(tmp_path, libver="2.18.3")
    assert rc == 1
    assert "linerate: PREFLIGHT_NCCL_VERSION the job's NCCL is 2.18.3" in err and "the fleet's is 2.21.5" in err
    assert "preflight failed on" in err


def test_an_image_without_nccl_is_refused(tmp_path):
    rc, out, err = run(tmp_path, libver=None, env={"LD_LIBRARY_PATH": str(tmp_path / "nothing")})
    if os.path.exists("/usr/lib/x86_64-linux-gnu/libnccl.so.2"):
        pytest.skip("this machine has a system libnccl.so.2")
    assert rc == 1 and "PREFLIGHT_NCCL_VERSION no libnccl.so.2 in the job's library path" in err


def test_net_plugins_against_the_fleets(tmp_path):
    rc, out, err = run(tmp_path, plugins=["libnccl-net-ofi.so"])
    assert rc == 1 and "PREFLIGHT_NET_PLUGIN the job's NCCL net plugins are 'libnccl-net-ofi.so'" in err
    rc, out, err = run(tmp_path, {"net_plugins": ["libnccl-net-ofi.so"]}, plugins=["libnccl-net-ofi.so"])
    assert "PREFLIGHT_NET_PLUGIN" not in err
    # NCCL_NET_PLUGIN, when the job sets it, is the plugin NCCL loads
    rc, out, err = run(
        tmp_path / "x" if (tmp_path / "x").mkdir() is None else tmp_path, {"net_plugins": ["libnccl-net-ofi.so"]}, env={"NCCL_NET_PLUGIN": "aws-ofi"}
    )
    assert "net plugins are 'aws-ofi', the fleet's 'libnccl-net-ofi.so'" in err


def test_socket_ifname_that_resolves_to_nothing(tmp_path):
    rc, out, err = run(tmp_path, env={"NCCL_SOCKET_IFNAME": "nosuchif"})
    assert rc == 1 and "PREFLIGHT_SOCKET_IFNAME NCCL_SOCKET_IFNAME=nosuchif names no interface" in err
    # the fleet's value applies when the job sets none; an exclude list that leaves lo out names nothing else here
    rc, out, err = run(tmp_path, {"settings": {"NCCL_SOCKET_IFNAME": "=nosuch0,nosuch1"}})
    assert "NCCL_SOCKET_IFNAME==nosuch0,nosuch1 names no interface" in err


def test_a_rail_netdev_the_job_does_not_see(tmp_path):
    rc, out, err = run(tmp_path, {"rails": [{"device": "mlx5_7", "port": 1, "netdev": "lrnone9"}]})
    assert rc == 1 and "PREFLIGHT_RDMA_DEVICE rail netdev lrnone9 (mlx5_7) is not visible in the job" in err
    if not os.path.isdir("/dev/infiniband"):
        assert "the job sees 0 verbs device file(s) in /dev/infiniband, the node has 1 rail(s)" in err


def test_shm_and_memlock_minimums(tmp_path):
    rc, out, err = run(tmp_path, {"min_shm_mb": 10**9})
    assert rc == 1 and "PREFLIGHT_SHM /dev/shm in the job is" in err and "at least 1000000000 MiB" in err
    limit = subprocess.run(["sh", "-c", "ulimit -l"], capture_output=True, text=True).stdout.strip()
    with open("/proc/self/status") as f:
        cap = int(next(line.split()[1] for line in f if line.startswith("CapEff:")), 16)
    rc, out, err = run(tmp_path, {"min_memlock_kb": -1})
    # CAP_IPC_LOCK (root, a pod's IPC_LOCK) registers memory whatever the limit says
    assert ("PREFLIGHT_MEMLOCK" in err) == (limit != "unlimited" and not cap >> 14 & 1)
    if limit != "unlimited":  # without the capability the limit rules (a job of an ordinary user)
        text = preflight.preflight_script(dict(BASE, min_memlock_kb=-1))
        res = subprocess.run(["capsh", "--drop=cap_ipc_lock", "--", "-c", text], capture_output=True, text=True) if os.path.exists("/usr/sbin/capsh") else None
        if res is not None:
            assert f"PREFLIGHT_MEMLOCK RLIMIT_MEMLOCK in the job is {limit} KiB (expected: unlimited" in res.stderr


def test_slurm_output_prints_to_the_tasks_output(tmp_path):
    rc, out, err = run(tmp_path, {"output": "slurm"}, libver="2.18.3")
    assert "print linerate: PREFLIGHT_NCCL_VERSION the job's NCCL is 2.18.3" in out
    assert all(line.startswith("print ") for line in out.splitlines())
    rc, out, err = run(tmp_path, {"output": "plain"}, libver="2.18.3")
    assert out == ""


def test_the_handshake_is_not_run_when_a_check_failed(tmp_path):
    """A job that cannot run NCCL is refused on what it lacks; the handshake would only hang."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    marker = tmp_path / "ran"
    for name in ("mpirun", "all_reduce_perf"):
        (bindir / name).write_text(f"#!/bin/sh\ntouch {marker}\necho 'NCCL INFO Channel 00/0 : 0[0] -> 1[0] via NET/IB/0'\n")
        (bindir / name).chmod(0o755)
    rc, out, err = run(tmp_path, {"handshake": True}, libver="2.18.3", env={"PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}"})
    assert rc == 1 and not marker.exists()


def test_bootstrap_port_taken_on_the_first_node_and_an_address_off_the_socket_interface(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        rc, out, err = run(tmp_path, env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    assert rc == 1 and f"PREFLIGHT_BOOTSTRAP the bootstrap port {port} is already taken on" in err
    rc, out, err = run(tmp_path, env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    assert "PREFLIGHT_BOOTSTRAP" not in err  # closed again: free
    # another node's address that NCCL_SOCKET_IFNAME's interfaces (lo here) do not reach
    rc, out, err = run(tmp_path, env={"MASTER_ADDR": "192.0.2.1", "MASTER_PORT": "29500"})
    assert rc == 1 and "PREFLIGHT_BOOTSTRAP" in err and "192.0.2.1" in err
    rc, out, err = run(tmp_path, env={"MASTER_ADDR": "no-such-host.invalid"})
    assert "note: the bootstrap port is not checked: no-such-host.invalid" in err and "PREFLIGHT_BOOTSTRAP" not in err
