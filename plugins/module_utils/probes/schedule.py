"""The ib_write_bw schedule on one node (module ib_write_bw with ``parts``): its parts played in order,
one round each, over ``probes/perftest.py:run_rails``; the TCP ports of every round, its meeting port
and the node's beacon (probes/meeting.py).
"""

import time

from ansible_collections.linerate.fabric.plugins.module_utils.probes import meeting, perftest

# TCP ports of a schedule: round r's rail i listens on base + (r mod PORT_ROUNDS) x PORT_STRIDE + i,
# so a client of round r can only reach its peer's server of round r, never one still
# listening for an earlier round (the rounds are not in lock-step).
PORT_STRIDE = 16
PORT_ROUNDS = 64


def schedule_port(base_port, round_id, rail, stride=PORT_STRIDE, port_rounds=PORT_ROUNDS):
    """TCP port of ``rail`` in round ``round_id``: ``base + (round mod port_rounds) x stride + rail``.

    Raises ValueError when the rail does not fit the stride, when fewer than two rounds
    have their own ports, or when the range base .. base + port_rounds x stride - 1 leaves 1..65535.
    """
    base_port, round_id, rail, stride, port_rounds = map(int, (base_port, round_id, rail, stride, port_rounds))
    if stride < 1 or not 0 <= rail < stride:
        raise ValueError(f"rail {rail} does not fit {stride} TCP ports a round (port_stride)")
    if port_rounds < 2:
        raise ValueError(f"port_rounds {port_rounds}: consecutive rounds need their own ports (at least 2)")
    top = base_port + port_rounds * stride - 1
    if base_port < 1 or top > 65535:
        raise ValueError(f"TCP ports {base_port}..{top} (base_port + port_rounds x port_stride) must stay within 1..65535")
    if round_id < 0:
        raise ValueError(f"round {round_id} is negative")
    return base_port + (round_id % port_rounds) * stride + rail


def part_tests(tests, part, base_port, stride=PORT_STRIDE, port_rounds=PORT_ROUNDS):
    """The rails' tests of one part: the round's TCP port and, on a client, the peer's address.

    A server listens on each rail's own port. In a cross-rail round (the part's ``shift`` k,
    ``plans.cross_rail_round``) the client's rail i connects to the port of the server's rail
    i + k (perftest's ``-d`` is each side's own: ib_write_bw -d mlx5_0 against a server run with
    -d mlx5_1) and names it ``peer_device``; without a shift, rail i meets rail i."""
    out = []
    shift = int(part.get("shift") or 0) if part["role"] == "client" else 0
    for rail, t in enumerate(tests):
        peer = (rail + shift) % len(tests)
        t = dict(t, tcp_port=schedule_port(base_port, part["round"], peer, stride, port_rounds))
        t.pop("server", None)
        if part["role"] == "client":
            t["server"] = part.get("peer_address") or part["peer"]
        if shift:
            t["peer_device"] = tests[peer]["device"]
        out.append(t)
    return out


def meet_port(p, part):
    """The round's meeting port: the first port of its stride after the rails, None when the
    rails fill the stride (the clients then start again until their servers listen)."""
    rails = len(p["tests"])
    if rails >= int(p["port_stride"]):
        return None
    return schedule_port(p["base_port"], part["round"], rails, p["port_stride"], p["port_rounds"])


def beacon_port(p):
    """This schedule's beacon port: the last port of round 0's stride, None when the rails and the
    meeting port leave it no room (then each side counts its own clock, as without one)."""
    stride = int(p["port_stride"])
    if len(p["tests"]) + 2 > stride:
        return None
    return schedule_port(p["base_port"], 0, stride - 1, stride, p["port_rounds"])


def _part_failed(tests, msg):
    return [
        dict(
            {
                "device": t["device"],
                "tcp_port": t["tcp_port"],
                "server": t.get("server"),
                "argv": None,
                "exit_status": None,
                "attempts": 0,
                "gbps": None,
                "error": msg,
                "parsed": None,
            },
            **({"peer_device": t["peer_device"]} if t.get("peer_device") else {}),
        )
        for t in tests
    ]


def run_schedule(run, p, check=False):
    """Play this node's parts in order (``p["parts"]``, see ``plans.schedule_parts``).

    server: one server per rail, each waited for until ``timeout`` (killed when its client
    never comes); client: the clients, each retrying until ``connect_timeout`` while its
    server does not listen yet; idle: nothing. The rounds synchronise through the servers:
    a client's retries wait for its peer to reach the round. A part that fails or times
    out is that part's errors and the next part starts (a dead peer costs its rounds, no
    more). A part's clocks count from its peer's arrival in the round (the Beacon: while the
    peer's schedule answers that it is still in an earlier round, this side waits for it).
    Returns ``[{"round", "role", "peer", "results", "seconds", "peer_wait"}]`` for the server
    and client parts (the records of ``verify_fabric_rdma_log``; ``peer_wait``: seconds spent
    waiting for the peer); with ``check``, each rail's argv and nothing run.
    """
    binary = (run.which(p["tool"]) or p["tool"]) if check else run.path(p["tool"])
    records = []
    port = None if check else beacon_port(p)
    beacon = meeting.Beacon(port)
    # a peer whose schedule never answered is still starting until start_timeout (the nodes'
    # schedules start with some skew: forks, SSH, an async start in batches)
    seen, start_deadline = set(), time.monotonic() + (p.get("start_timeout") or p["connect_timeout"])
    try:
        for part in p["parts"]:
            if part["role"] in ("server", "client"):
                watch = meeting.Watch(part.get("peer_address") or part["peer"], port, int(part["round"]), seen, start_deadline) if port else None
                records.append(_play_part(run, p, part, binary, check, beacon, watch))
    finally:
        beacon.close()
    return records


def _play_part(run, p, part, binary, check, beacon, watch):
    """One server or client part of the schedule: its record."""
    tests = part_tests(p["tests"], part, p["base_port"], p["port_stride"], p["port_rounds"])
    pp = dict(p, mode=part["role"], tests=tests)
    started = time.monotonic()
    record = {"round": int(part["round"]), "role": part["role"], "peer": part["peer"]}
    beacon.round = record["round"]
    if check:
        record["results"] = [
            dict(
                {
                    "device": t["device"],
                    "tcp_port": t["tcp_port"],
                    "server": t.get("server"),
                    "argv": perftest.perftest_argv(binary, pp, t, i),
                    "exit_status": None,
                    "gbps": None,
                    "error": None,
                },
                **({"peer_device": t["peer_device"]} if t.get("peer_device") else {}),
            )
            for i, t in enumerate(tests)
        ]
    else:
        stats = {}
        try:
            record["results"] = perftest.run_rails(run, pp, tests, release=True, meet=meet_port(p, part), beacon=beacon, watch=watch, stats=stats)
        except Exception as e:  # noqa: BLE001 - one part's failure must not end the schedule
            record["error"] = f"{type(e).__name__}: {e}"
            record["results"] = _part_failed(tests, f"part failed: {record['error']}")
        record["peer_wait"] = round(stats.get("peer_wait", 0.0), 1)
    record["seconds"] = round(time.monotonic() - started, 1)
    return record
