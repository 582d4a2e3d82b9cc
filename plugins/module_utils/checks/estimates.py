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
controller, one beside other tests); tests/unit/test_phase_estimates.py holds every printed estimate within
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
    per_round = ((INCAST_ROUND_TASKS - INCAST_ROUND_LOOPS) * task_seconds(hosts, forks)
                 + INCAST_ROUND_LOOPS * task_seconds(hosts, forks, items=int(_positive("ports", ports)))
                 + d + INCAST_ROUND_SECONDS)
    return n * per_round + INCAST_PLAN_TASKS * task_seconds(hosts, forks)
