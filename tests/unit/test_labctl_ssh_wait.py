"""labctl's wait for the nodes' sshd reads the controller's path too (a recreated node keeps its address
but not its MAC: with the controller's stale neighbour entry, sshd was active inside and every ssh timed out)."""

import os
import socket
import sys
import threading

import pytest

from labsim import ROOT

sys.path.insert(0, os.path.join(ROOT, "lab"))
import labctl  # noqa: E402


def serve(banner):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)

    def loop():
        while True:
            try:
                conn, _addr = srv.accept()
            except OSError:
                return
            with conn:
                conn.sendall(banner)

    threading.Thread(target=loop, daemon=True).start()
    return srv


def test_ssh_banner_is_sshd_answering_here():
    srv = serve(b"SSH-2.0-OpenSSH_9.2p1\r\n")
    other = serve(b"HTTP/1.1 400\r\n")
    try:
        assert labctl.ssh_banner("127.0.0.1", srv.getsockname()[1])
        assert not labctl.ssh_banner("127.0.0.1", other.getsockname()[1])
    finally:
        srv.close()
        other.close()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    assert not labctl.ssh_banner("127.0.0.1", port, timeout=0.5)


class Podman:
    def __init__(self):
        self.calls = []

    def __call__(self, *argv, check=True, capture=False):
        self.calls.append(argv)
        out = "ssh-ed25519 AAAAkey root@n\n" if "cat" in argv else "active\n"

        class R:
            returncode, stdout = 0, out

        return R()


def test_a_node_whose_sshd_does_not_answer_from_here_is_still_waited_for(monkeypatch):
    monkeypatch.setattr(labctl, "podman", Podman())
    monkeypatch.setattr(labctl, "container_running", lambda name: True)
    answers = iter([False, False, True])
    monkeypatch.setattr(labctl, "ssh_banner", lambda address, port=22, timeout=2.0: next(answers))
    got = labctl.wait_ssh(["node4"], key=None, addresses={"node4": "10.0.0.4"})
    assert got == {"node4": ["ssh-ed25519", "AAAAkey"]}
    with pytest.raises(StopIteration):
        next(answers)  # asked until it answered, not accepted from inside the container alone


def test_the_timeout_names_the_node_that_does_not_answer(monkeypatch):
    monkeypatch.setattr(labctl, "podman", Podman())
    monkeypatch.setattr(labctl, "container_running", lambda name: True)
    monkeypatch.setattr(labctl, "ssh_banner", lambda address, port=22, timeout=2.0: False)
    with pytest.raises(SystemExit, match="not answering on port 22 from here: node4"):
        labctl.wait_ssh(["node4"], key=None, deadline=1.5, addresses={"node4": "10.0.0.4"})
