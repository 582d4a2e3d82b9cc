"""switch/window_signals.py: SIGINT and SIGTERM during a window become Interrupted until the guard defers,
then they are only recorded; the previous handlers come back; a signal is named, and SIGTERM from the
controller watch (journal.py) by the controller's end."""

import os
import signal
import threading

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.switch import journal
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window_signals import Interrupted, SignalGuard, cause


@pytest.fixture
def no_cause(monkeypatch):
    monkeypatch.setattr(journal, "CAUSE", {})


def test_a_signal_is_named_by_its_name_or_its_number(no_cause):
    assert (cause(signal.SIGINT), cause(signal.SIGTERM), cause(255)) == ("SIGINT", "SIGTERM", "signal 255")


def test_a_sigterm_from_the_controller_watch_is_named_by_the_controllers_end(monkeypatch):
    monkeypatch.setattr(journal, "CAUSE", {"name": "the end of its controller (ansible-playbook pid 7: killed)"})
    assert cause(signal.SIGTERM) == "the end of its controller (ansible-playbook pid 7: killed)"
    assert cause(signal.SIGINT) == "SIGINT"  # only SIGTERM is the watch's


def test_interrupted_is_a_keyboard_interrupt_carrying_the_signal(no_cause):
    e = Interrupted(signal.SIGTERM)
    assert isinstance(e, KeyboardInterrupt) and (e.signum, e.name, str(e)) == (signal.SIGTERM, "SIGTERM", "SIGTERM")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_first_signal_raises_a_second_is_only_recorded(own_handlers, no_cause, signum):
    with SignalGuard() as g:
        with pytest.raises(Interrupted) as err:
            os.kill(os.getpid(), signum)
        assert err.value.signum == signum
        os.kill(os.getpid(), signal.SIGINT)  # the recovery runs on: nothing raised
        assert g.received == [signum, signal.SIGINT]


def test_after_defer_a_signal_is_only_recorded(own_handlers, no_cause):
    with SignalGuard() as g:
        g.defer()
        os.kill(os.getpid(), signal.SIGTERM)
        assert g.received == [signal.SIGTERM]
    assert signal.getsignal(signal.SIGTERM) is own_handlers


def test_a_previous_default_handler_is_put_back_as_default():
    prev = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with SignalGuard() as g:
            g.previous[signal.SIGTERM] = None  # what signal.signal returns for a handler not set from Python
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, prev)


def test_signal_guard_restores_handlers_and_installs_nothing_off_the_main_thread(own_handlers):

    with SignalGuard() as g:
        assert signal.getsignal(signal.SIGTERM) == g._handler
    assert signal.getsignal(signal.SIGTERM) is own_handlers
    seen = {}

    def other():
        with SignalGuard() as g2:
            seen["previous"] = dict(g2.previous)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen["previous"] == {}
