"""How long a verification phase will take: the ``expected ~...`` of the line printed before it starts.

Stdlib only. A model of what the phase really costs, not only its measuring floor (rounds x one test's
duration, which was 2.5-16x low: the lab's incast rotation printed "~40 s" and took 661 s):

- the benchmark: one test's ``duration`` per round;
- per ib_write_bw schedule round, ``SCHEDULE_ROUND_SECONDS``: perftest's server start, the client's
  connect and its retries, the end-of-round beacon, the parse (all inside the one task per node);
- per Ansible task, ``task_seconds``: ``TASK_SECONDS`` per batch of ``forks`` hosts (the worker's start,
  the connection, the module's transfer and run) plus ``HOST_SECONDS`` per host (the controller's own
  work per host: templating the task, the result, the callback), and ``ITEM_SECONDS`` per loop item
  per batch;
- per incast round, its tasks (``INCAST_ROUND_TASKS``: the include, the part, the counters before and
  after, the servers, the writers, the collect, the record; ``INCAST_ROUND_LOOPS`` of them loop over the
  ports), the writers' start and connect (``INCAST_ROUND_SECONDS``) and the test's duration.

The constants are calibrated on two recorded lab runs (tests/unit/fixtures/report/lab_verify_4nodes*.json:
their ``meta.phases``, rounds and schedule, and the shape they ran: 4 nodes, 2 rails, forks 32, the role's
default durations; ib_write_bw 52.1 s and 54.5 s measured, incast 96.3 s and 147.9 s, one on a quiet
controller, one beside other tests); tests/unit/checks/test_estimates.py holds every printed estimate within
2x of both. On a controller shared by many runs at once (the issue's 661 s incast) every task waits for a
core and the phases take longer still.
"""

import math

# seconds of one Ansible task on one batch of forks (worker start, connection, module transfer and run)
TASK_SECONDS = 0.6
# seconds of the controller's work per host and task (templating, the result, the callback)
HOST_SECONDS = 0.1
# seconds of one loop item on one batch of forks (a command module run per item)
ITEM_SECONDS = 0.4
# seconds an ib_write_bw schedule round costs beyond its test's duration (inside the one task per node)
SCHEDULE_ROUND_SECONDS = 1.2
# an incast round: its tasks (incast_round.yml and the include), those that loop over the node's ports,
# and the writers' start and connect beyond the test's duration
INCAST_ROUND_TASKS = 11
INCAST_ROUND_LOOPS = 4
INCAST_ROUND_SECONDS = 2.0
# the tasks around the rounds, in tasks on every node: the schedule task's own start and its results
# (rdma.yml, rdma_schedule.yml: the plan and the records are controller-side set_facts, a fraction of one),
# incast's plan
SCHEDULE_TASKS = 4
INCAST_PLAN_TASKS = 3


def _positive(name, value, allow_zero=True):
    """``value`` as a float; a clear error naming it when it is not a number >= 0 (> 0 unless allow_zero)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: {value!r} is not allowed (allowed: a number of seconds or a count)") from None
    if isinstance(value, bool) or math.isnan(v) or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name}: {value!r} is not allowed (allowed: a number {'>=' if allow_zero else '>'} 0)")
    return v


def task_seconds(hosts, forks=None, items=0):
    """One Ansible task on ``hosts`` hosts with ``forks`` workers (default: all at once), looping over
    ``items`` items per host (0: no loop)."""
    hosts = int(_positive("hosts", hosts))
    if hosts == 0:
        return 0.0
    forks = int(_positive("forks", forks if forks is not None else hosts, allow_zero=False))
    batches = math.ceil(hosts / forks)
    return batches * (TASK_SECONDS + ITEM_SECONDS * int(_positive("items", items))) + HOST_SECONDS * hosts


def schedule_seconds(rounds, duration, hosts=2, forks=None):
    """An ib_write_bw schedule of ``rounds`` rounds of ``duration`` s: every node plays all its rounds in
    one task, so the rounds add up inside it (``SCHEDULE_ROUND_SECONDS`` each beyond the test), plus the
    tasks around it."""
    n = int(_positive("rounds", rounds))
    d = _positive("duration", duration)
    if n == 0:
        return 0.0
    return n * (d + SCHEDULE_ROUND_SECONDS) + SCHEDULE_TASKS * task_seconds(hosts, forks)


def incast_seconds(rounds, duration, ports=1, hosts=None, forks=None):
    """The incast rotation: ``rounds`` rounds, each its Ansible tasks on every node of the play (``hosts``,
    default one per round: the rotation makes every node a receiver once), of which ``INCAST_ROUND_LOOPS``
    loop over the ``ports`` rails, plus one test's ``duration`` and the writers' start."""
    n = int(_positive("rounds", rounds))
    d = _positive("duration", duration)
    hosts = n if hosts is None else hosts
    if n == 0:
        return 0.0
    per_round = (
        (INCAST_ROUND_TASKS - INCAST_ROUND_LOOPS) * task_seconds(hosts, forks)
        + INCAST_ROUND_LOOPS * task_seconds(hosts, forks, items=int(_positive("ports", ports)))
        + d
        + INCAST_ROUND_SECONDS
    )
    return n * per_round + INCAST_PLAN_TASKS * task_seconds(hosts, forks)


# ---------------------------------------------------------------- the lines printed, the phases' times


def schedule_summary(rounds, duration, rails=1, label="rounds", hosts=None, forks=None):
    """The line printed before a schedule starts: ``3 rounds, 6 pairs x 2 rails, one task per node;
    expected ~12 s (3 x 2 s tests, 1.2 s a round more, and the tasks around them)``.

    The expectation is this module's model: every node plays all its rounds in one task, each
    round costs its test's ``duration`` and the start and connect around it, and the tasks around the
    schedule cost their Ansible time on ``hosts`` nodes (default: the nodes of the rounds) with ``forks``.
    """
    n = len(rounds or [])
    pairs = sum(len(r) for r in rounds or [])
    rails = int(rails)
    if hosts is None:
        hosts = len({x for r in rounds or [] for pair in r for x in pair[:2]}) or 2
    seconds = schedule_seconds(n, float(duration or 0), hosts, forks)
    return (
        f"{n} {label if n != 1 else label.rstrip('s')}, {pairs} pair{'' if pairs == 1 else 's'} x "
        f"{rails} rail{'' if rails == 1 else 's'}, one task per node; expected ~{duration_text(seconds)} "
        f"({n} x {duration_text(duration or 0)} tests, {SCHEDULE_ROUND_SECONDS:g} s a round more, "
        "and the tasks around them)"
    )


def incast_summary(rounds, k, duration, ports=1, hosts=None, forks=None):
    """The line printed before the incast rotation: rounds, senders, and this module's
    expectation (each round's Ansible tasks on every node, its test, the writers' start)."""
    n = len(rounds or [])
    seconds = incast_seconds(n, float(duration or 0), ports, hosts, forks)
    return (
        f"incast: {n} round{'' if n == 1 else 's'}, every node a receiver once, up to {int(k)} senders each; "
        f"expected ~{duration_text(seconds)} ({n} x ({duration_text(duration or 0)} test + "
        f"{duration_text(seconds / n - float(duration or 0)) if n else '0 s'} of Ansible tasks and starts))"
    )


def duration_text(seconds):
    """41 s, 6 min 32 s, 1 h 02 min: how long, for people."""
    s = max(0, int(round(float(seconds))))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def phase_timings(marks, end, report_seconds=None):
    """Per-phase wall times from the start marks the role leaves (``{phase: epoch seconds}``).

    Each phase lasts until the next mark, the last one until ``end``; ``report_seconds`` (the
    report's own time) is appended as phase ``report``. Returns ``[{"phase", "seconds"}]`` in
    the order the phases ran.
    """
    order = sorted(((float(t), p) for p, t in (marks or {}).items() if t not in (None, "")))
    out = []
    for i, (t, phase) in enumerate(order):
        stop = order[i + 1][0] if i + 1 < len(order) else float(end)
        out.append({"phase": phase, "seconds": round(max(0.0, stop - t), 1)})
    if report_seconds is not None:
        out.append({"phase": "report", "seconds": round(float(report_seconds), 1)})
    return out
