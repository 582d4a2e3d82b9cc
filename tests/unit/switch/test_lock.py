"""The window lock's primitives (switch/lock.py): the holder line, the machine id it names, the controller's
copy of the lock."""

import os

from ansible_collections.linerate.fabric.plugins.module_utils.switch import lock

OTHER_MACHINE = "0123456789abcdef0123456789abcdef"  # another controller's /etc/machine-id


def test_holder_lines_round_trip_and_refuse_other_text():
    h = lock.Holder("a b", "host.x", 7, "T1", 0, machine=OTHER_MACHINE, start=99)
    assert h.line() == f"linerate a_b@host.x machine={OTHER_MACHINE} pid=7 start=99 run=T1 time=19700101T000000Z"
    assert lock.Holder.parse(h.line()) == h
    old = "linerate a@b pid=7 run=T1 time=19700101T000000Z"  # a line of the releases before the machine id
    assert (lock.Holder.parse(old).machine, lock.Holder.parse(old).start) == (None, None)
    for bad in (
        "",
        "linerate x",
        "linerate a@b pid=x run=T time=19700101T000000Z",
        h.line() + " extra",
        "linerate a@b machine=XYZ pid=7 run=T1 time=19700101T000000Z",
    ):
        assert lock.Holder.parse(bad) is None
    me = lock.Holder("u", "h", 1, "T", 1000, machine=OTHER_MACHINE, start=5)
    peer = lock.Holder("u", "h", 2, "T", 1000, machine=OTHER_MACHINE, start=6)
    assert lock.stale(peer, 300, me, 900, alive=lambda p, s: True) is None
    assert "901 s ago" in lock.stale(peer, 300, me, 901, alive=lambda p, s: True)
    # the age is the caller's (the switch's clock): the line's own time plays no part
    assert lock.stale(lock.Holder("u", "h", 2, "T", 0, machine=OTHER_MACHINE), 300, me, 10, lambda p, s: True) is None
    # another machine (or a line without a machine id) with the same host: its process is not judged from here
    other = lock.Holder("u", "h", 2, "T", 1000, machine="f" * 32)
    assert lock.stale(other, 300, me, 1, alive=lambda p, s: False) is None
    assert lock.stale(lock.Holder.parse("linerate u@h pid=2 run=T time=19700101T000000Z"), 300, me, 1, alive=lambda p, s: False) is None
    seen = []
    assert "process 2" in lock.stale(peer, 300, me, 1, alive=lambda p, s: seen.append((p, s)))
    assert seen == [(2, 6)]  # judged by pid and start time


def test_machine_id_reads_the_first_valid_file(tmp_path):
    bad, good = tmp_path / "bad", tmp_path / "good"
    bad.write_text("not-an-id\n")
    good.write_text(OTHER_MACHINE + "\n")
    assert lock.machine_id((str(tmp_path / "missing"), str(bad), str(good))) == OTHER_MACHINE
    assert lock.machine_id((str(bad),)) is None
    me = lock.Holder("u", "h", 1, "T", 0, machine=None)
    assert " machine=unknown " in me.line() and lock.Holder.parse(me.line()).machine is None


def test_the_controller_copy_handles_an_empty_file_by_its_age(tmp_path):
    copy = lock.ControllerLock(str(tmp_path))
    (tmp_path / "linerate.lock").write_text("")
    me = lock.Holder("u", "h", 1, "T", 0)
    now = os.stat(tmp_path / "linerate.lock").st_mtime
    assert copy.acquire(me, 300, now=now + 10) == "(an empty lock file: another window is taking it)"
    assert copy.acquire(me, 300, now=now + lock.EMPTY_GRACE_S + 1) is None
    assert copy.broken[0] is None and "it is empty and 61 s old" in copy.broken[1]
    assert (tmp_path / "linerate.lock").read_text() == me.line() + "\n"
