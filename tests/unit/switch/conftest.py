"""Fixtures of the switch package's tests."""

import signal

import pytest


class Escaped(Exception):
    """Raised by the test's own handlers: a signal that reached them escaped the window's guard."""


@pytest.fixture
def own_handlers():
    def handler(signum, frame):
        raise Escaped(signum)

    prev = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    yield handler
    for s, h in prev.items():
        signal.signal(s, h)
