"""How the two sides of a perftest pair meet (module_utils/probes/meeting.py): the beacon's answer, a part's
watch on its peer, what listens; a schedule played with them: probes/test_schedule.py."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.probes import meeting


def test_the_beacon_answers_its_round_and_a_peer_past_the_round_ends_the_wait():
    port = 0
    beacon = meeting.Beacon(None)
    assert beacon.sock is None and beacon.serve() is None
    import socket

    probe = socket.socket()
    probe.bind(("127.0.0.9", 0))
    port = probe.getsockname()[1]
    probe.close()
    beacon = meeting.Beacon(port)
    try:
        beacon.round = 7
        import threading

        answers = []
        t = threading.Thread(target=lambda: answers.append(meeting.ask_round("127.0.0.9", port, timeout=2)))
        t.start()
        deadline = __import__("time").monotonic() + 3
        while t.is_alive() and __import__("time").monotonic() < deadline:
            beacon.serve()
        t.join()
        assert answers == [7]
        # nobody serving it yet: the connection is taken (the kernel's backlog) but unanswered
        assert meeting.ask_round("127.0.0.9", port, timeout=0.2) is meeting.ALIVE
    finally:
        beacon.close()
    assert meeting.ask_round("127.0.0.9", port, timeout=0.2) is None


@pytest.mark.parametrize(
    "answer,seen,now,state",
    [
        (meeting.ALIVE, False, 0, "behind"),
        (2, False, 0, "behind"),
        (-1, True, 0, "behind"),
        (3, False, 0, "here"),
        (4, True, 0, "past"),
        (None, False, 5, "starting"),
        (None, False, 20, "absent"),
        (None, True, 5, "absent"),
    ],
)
def test_a_watch_reads_the_peers_beacon_against_its_round(monkeypatch, answer, seen, now, state):
    monkeypatch.setattr(meeting, "ask_round", lambda address, port: answer)
    known = {"10.0.0.2"} if seen else set()
    watch = meeting.Watch("10.0.0.2", 18530, 3, known, start_deadline=10)
    assert watch.state(now) == state
    # a peer that answered once is known from then on (its silence later: gone, not starting)
    assert ("10.0.0.2" in known) == (seen or answer is not None)
    assert watch.state(now) is None  # the next question only after BEACON_ASK


def test_listening_ports_reads_the_kernels_listen_table_by_address():
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.5", 0))
    port = sock.getsockname()[1]
    assert port not in meeting.listening_ports("127.0.0.5")
    sock.listen(1)
    try:
        assert port in meeting.listening_ports("127.0.0.5") and port in meeting.listening_ports()
        assert port not in meeting.listening_ports("127.0.0.6")
    finally:
        sock.close()
