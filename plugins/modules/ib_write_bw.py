#!/usr/bin/python
"""Module: run perftest ib_write_bw (server or client side, all rails in parallel) and parse it."""

DOCUMENTATION = r"""
---
module: ib_write_bw
short_description: Run perftest ib_write_bw / ib_read_bw / ib_send_bw / ib_write_lat / ib_send_lat on every rail of a host and parse the results
description:
  - Runs one perftest process per rail, all in parallel, on separate TCP ports, HCA i
    against HCA i. The C(server) side listens and waits for its client; the C(client)
    side connects to the peer's server address and measures.
  - Uses the options real validation suites use - C(--report_gbits), C(-F), a large
    message (C(-s)), a duration (C(-D)), several QPs (C(-q)), the RoCE GID index
    (C(-x)), optionally C(--use_cuda) and C(--out_json).
  - A client whose server is not listening yet (C(Couldn't connect to host:port)) is
    retried until I(connect_timeout); every process is killed at I(timeout).
  - C(schedule) plays this host's whole ib_write_bw schedule in one call (every host at the same
    time, a plain task when the forks hold them all, else C(async)), its part in every round
    (I(parts)), in order. A server part starts one server per rail and waits for them (each
    killed at I(timeout) when its client never comes); once they listen, the host opens the
    round's meeting port. A client part connects to its server's meeting port until it
    answers (or I(connect_timeout) passes), then runs the clients, each retrying while its
    server does not listen yet, up to I(connect_timeout); an idle part does nothing. The rounds
    synchronise through the servers, so no host waits for the controller between rounds. Round
    r's rail i uses TCP port I(base_port) + (r mod I(port_rounds)) x I(port_stride) + i, so a
    client can only reach the server of its own round; the meeting port is the next one after
    the rails (none when the rails fill I(port_stride)). A rail that fails on its host before connecting (port down, no
    device) releases its peer at once (the client connects once and closes, the server listens
    in its place), so the peer goes on to its next round instead of waiting for a timeout.
    A failed or timed-out part is recorded as that part's errors and the schedule goes on.
  - The rounds are not in lock-step (a host whose part ended early enters the next round while
    its peer still measures), so each host's schedule answers, on its beacon port (the last
    port of round 0's stride, I(base_port) + I(port_stride) - 1; none when the rails and the
    meeting port fill the stride), the round it plays. A part's I(connect_timeout) and
    I(timeout) count from the peer's arrival in the round; while the peer's beacon answers an
    earlier round, a client waits at the meeting and a server keeps its processes. A peer whose
    beacon never answered yet is still starting until I(start_timeout); one that stopped
    answering gets I(connect_timeout); one past the round (it gave the round up) nothing.
  - Output is parsed with the perftest parser (real perftest 4.x..25.x formats, error
    outputs included). The module changes nothing on the host, so C(changed) is always
    false; in check mode it only returns the commands it would run.
requirements:
  - ib_write_bw / ib_read_bw (perftest) on both ends
options:
  mode:
    description: Which side this host runs, or its whole schedule of rounds (C(schedule)).
    type: str
    choices: [server, client, schedule]
    required: true
  tests:
    description:
      - One entry per rail. C(device) RDMA device, C(tcp_port) the out-of-band port,
        C(server) the server's address (client side only), C(ib_port) (default 1),
        C(gpu) the CUDA device for C(--use_cuda) (default the rail index).
      - With I(mode=schedule) C(tcp_port) and C(server) are not used (each part derives them).
    type: list
    elements: dict
    required: true
  parts:
    description:
      - I(mode=schedule) only, required there. This host's part in every round, in the order
        they run (filter C(linerate.fabric.verify_schedule)).
      - C(round) the round's id (the report's round number; it picks the TCP ports),
        C(role) C(server), C(client) or C(idle), C(peer) the peer's inventory name,
        C(peer_address) the address its clients connect to (default C(peer)), C(shift) (a
        cross-rail round, client parts) the client's rail i connects to the server's rail
        i + C(shift) (default 0, rail i against rail i).
    type: list
    elements: dict
  base_port:
    description: I(mode=schedule) - TCP port of rail 0 in round 0.
    type: int
    default: 18515
  port_stride:
    description: I(mode=schedule) - TCP ports each round may use (at least the rails).
    type: int
    default: 16
  port_rounds:
    description:
      - I(mode=schedule) - consecutive rounds with their own TCP ports (at least 2); round r
        uses those of round r mod I(port_rounds).
      - I(base_port) + I(port_rounds) x I(port_stride) - 1 must stay below 65536.
    type: int
    default: 64
  tool:
    description:
      - The perftest binary. C(ib_write_bw), C(ib_read_bw) and C(ib_send_bw) measure bandwidth (each
        rail's C(gbps)); C(ib_write_lat) and C(ib_send_lat) measure latency (each rail's C(latency_usec)).
      - A latency test runs one QP with I(size)-byte messages (perftest's default is 2) for I(iterations)
        (or I(duration)) and gets no C(-q), C(--report_gbits), C(--use_cuda) or C(--out_json) - perftest's
        parser refuses C(-q) in a latency test, and ib_write_lat refuses device memory.
    type: str
    choices: [ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_send_lat]
    default: ib_write_bw
  size:
    description: Message size in bytes (C(-s)).
    type: int
    default: 1048576
  qps:
    description: Queue pairs per test (C(-q)).
    type: int
    default: 4
  duration:
    description: Seconds per test (C(-D)); 0 runs C(-n) iterations instead.
    type: int
    default: 10
  iterations:
    description: Iterations when I(duration=0) (C(-n)).
    type: int
    default: 5000
  gid_index:
    description: RoCE GID index (C(-x)); omit on InfiniBand.
    type: int
  tclass:
    description:
      - RoCE traffic class of the test's QPs (C(--tclass), the GRH traffic class = IP ToS byte,
        DSCP << 2). Without it the QPs ride class 0, the lossy class on a DSCP-trusting
        fabric - pass the class NCCL uses (NCCL_IB_TC). C(-T) is not used (real perftest
        accepts it only with C(-R)).
    type: int
  sl:
    description: InfiniBand service level of the test's QPs (C(-S)), the one NCCL uses (NCCL_IB_SL).
    type: int
  use_cuda:
    description: Measure GPU memory to GPU memory (C(--use_cuda=<gpu>)), GPUDirect RDMA.
    type: bool
    default: false
  out_json:
    description: Also ask perftest for its JSON result file (C(--out_json --out_json_file)), where the build has it.
    type: bool
    default: false
  extra_args:
    description: More perftest arguments, appended as they are.
    type: list
    elements: str
    default: []
  timeout:
    description:
      - Seconds after which a test process is killed (default duration + 60).
      - With I(mode=schedule) counted from the start of each part, or from the peer's arrival in
        the round where the peer came later (its beacon).
    type: int
  connect_timeout:
    description:
      - Seconds a client keeps retrying while its server is not listening yet.
      - With I(mode=schedule), counted from the peer's arrival in the round; also how long a part
        waits for a peer whose schedule stopped answering (its beacon).
    type: int
    default: 30
  start_timeout:
    description:
      - I(mode=schedule) - seconds from this schedule's start during which a peer whose schedule
        never answered yet (its beacon) counts as still starting, and is waited for. Default
        I(connect_timeout).
    type: int
attributes:
  check_mode:
    support: full
    description: Runs no benchmark; returns the argv of every test it would run (C(skipped_run)), in every part with I(mode=schedule).
author: linerate developers (@linerate)
"""

EXAMPLES = r"""
- name: Start the servers of this round in the background
  linerate.fabric.ib_write_bw:
    mode: server
    tests:
      - {device: mlx5_0, tcp_port: 18515}
      - {device: mlx5_1, tcp_port: 18516}
    gid_index: 3
  async: 120
  poll: 0
  register: servers

- name: Run the clients against them
  linerate.fabric.ib_write_bw:
    mode: client
    tests:
      - {device: mlx5_0, tcp_port: 18515, server: 10.0.0.12}
      - {device: mlx5_1, tcp_port: 18516, server: 10.0.0.12}
    gid_index: 3

- name: Play this node's whole schedule (every round) in one task
  linerate.fabric.ib_write_bw:
    mode: schedule
    parts:
      - {round: 0, role: server, peer: node2, peer_address: 10.0.0.12}
      - {round: 1, role: client, peer: node3, peer_address: 10.0.0.13}
      - {round: 2, role: idle, peer: null}
    tests:
      - {device: mlx5_0}
      - {device: mlx5_1}
    gid_index: 3
    duration: 10
    connect_timeout: 15
    timeout: 30
  async: 200
  poll: 0
  register: schedule
"""

RETURN = r"""
tests:
  description: One entry per test (rail); empty with I(mode=schedule) (see I(parts)).
  returned: always
  type: list
  elements: dict
  contains:
    device: {description: RDMA device, type: str}
    argv: {description: The command that ran, type: list}
    exit_status: {description: Exit status (null in check mode or when killed), type: int}
    gbps: {description: Average bandwidth of the last row in Gb/s (null on error and for a latency test), type: float}
    latency_usec:
      description: Latency tests - the last row's average one-way latency in usec (t_avg; t_typical where the build prints no average), null on error.
      type: float
    latency:
      description: Latency tests - the figures perftest printed (t_min_usec, t_typical_usec, t_avg_usec, p99_usec, p99_9_usec, t_max_usec).
      type: dict
    error: {description: The tool's error lines when it failed, type: str}
    parsed: {description: The perftest parser's result, type: dict}
    json: {description: perftest's --out_json document when asked for and written, type: dict}
    stdout: {description: Raw output, type: str}
    stderr: {description: Raw error output, type: str}
parts:
  description:
    - I(mode=schedule) - one record per server or client part, in the order played (idle parts
      have none); the records the verify_fabric role keeps in C(verify_fabric_rdma_log).
  returned: when mode is schedule
  type: list
  elements: dict
  contains:
    round: {description: The round's id, type: int}
    role: {description: server or client, type: str}
    peer: {description: The peer's inventory name, type: str}
    results:
      description:
        - One entry per rail as in I(tests) (with its C(tcp_port)); C(peer_device) the server's
          rail a client rail wrote into, in a cross-rail round (a part with C(shift)).
      type: list
    seconds: {description: How long the part took, type: float}
    error: {description: Why the whole part failed (each rail's C(error) says it too), type: str}
passed:
  description: True when every test produced a result.
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils.common import exit_measurement, preview_in_check_mode
from ansible_collections.linerate.fabric.plugins.module_utils.probes.perftest import BW_TOOLS, LAT_TOOLS, perftest_argv, run_perftest
from ansible_collections.linerate.fabric.plugins.module_utils.probes.schedule import run_schedule, schedule_port
from ansible_collections.linerate.fabric.plugins.module_utils.runner import Runner


def _check_schedule(module, p):
    """The schedule's arguments: parts, roles, peers and the port range (fails the module)."""
    for i, part in enumerate(p["parts"]):
        if part.get("role") not in ("server", "client", "idle"):
            module.fail_json(msg=f"parts[{i}]: role {part.get('role')!r} is not allowed (server | client | idle)")
        if part.get("round") is None or not str(part["round"]).lstrip("-").isdigit():
            module.fail_json(msg=f"parts[{i}]: round must be an integer")
        if part["role"] != "idle" and not part.get("peer"):
            module.fail_json(msg=f"parts[{i}]: missing peer")
    try:
        # the last rail of any round: validates the stride and the whole port range
        schedule_port(p["base_port"], 0, max(len(p["tests"]) - 1, 0), p["port_stride"], p["port_rounds"])
    except ValueError as e:
        module.fail_json(msg=str(e))
    p["parts"] = [dict(part, round=int(part["round"])) for part in p["parts"]]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", choices=["server", "client", "schedule"], required=True),
            tests=dict(type="list", elements="dict", required=True),
            parts=dict(type="list", elements="dict"),
            base_port=dict(type="int", default=18515),
            port_stride=dict(type="int", default=16),
            port_rounds=dict(type="int", default=64),
            tool=dict(type="str", choices=list(BW_TOOLS + LAT_TOOLS), default="ib_write_bw"),
            size=dict(type="int", default=1048576),
            qps=dict(type="int", default=4),
            duration=dict(type="int", default=10),
            iterations=dict(type="int", default=5000),
            gid_index=dict(type="int"),
            tclass=dict(type="int"),
            sl=dict(type="int"),
            use_cuda=dict(type="bool", default=False),
            out_json=dict(type="bool", default=False),
            extra_args=dict(type="list", elements="str", default=[]),
            timeout=dict(type="int"),
            connect_timeout=dict(type="int", default=30),
            start_timeout=dict(type="int"),
        ),
        required_if=[("mode", "schedule", ["parts"])],
        supports_check_mode=True,
    )
    p = module.params
    for key, top in (("tclass", 255), ("sl", 15), ("gid_index", 255)):
        if p[key] is not None and not 0 <= p[key] <= top:
            module.fail_json(msg=f"{key}: {p[key]} is out of range; allowed: 0..{top}")
    if p["tool"] in LAT_TOOLS:
        for key, why in (
            ("use_cuda", "ib_write_lat refuses device memory (perftest 26.04: use --write_with_imm)"),
            ("out_json", "a latency test writes no bandwidth report file here"),
        ):
            if p[key]:
                module.fail_json(msg=f"{key}: true is not allowed with tool {p['tool']}; allowed: false ({why})")
        if "-q" in p["extra_args"] or any(a.startswith("--qp") for a in p["extra_args"]):
            module.fail_json(
                msg=f"extra_args: {p['extra_args']} - -q/--qp is not allowed with tool {p['tool']} (perftest: 'Multiple QPs only available on bw tests')"
            )
    needed = ("device",) if p["mode"] == "schedule" else ("device", "tcp_port")
    for i, t in enumerate(p["tests"]):
        missing = [k for k in needed + (("server",) if p["mode"] == "client" else ()) if not t.get(k)]
        if missing:
            module.fail_json(msg=f"tests[{i}]: missing {', '.join(missing)}")
    run = Runner(module)
    if p["mode"] == "schedule":
        _check_schedule(module, p)
        parts = run_schedule(run, p, check=module.check_mode)
        ok = all(r["error"] is None for part in parts for r in part["results"])
        exit_measurement(module, parts=parts, tests=[], passed=ok)

    def preview():
        binary = run.which(p["tool"]) or p["tool"]
        argvs = [perftest_argv(binary, p, t, i) for i, t in enumerate(p["tests"])]
        return {
            "passed": True,
            "tests": [{"device": t["device"], "argv": a, "exit_status": None, "gbps": None, "error": None} for t, a in zip(p["tests"], argvs)],
        }

    preview_in_check_mode(module, preview)
    results = run_perftest(run, p)
    module.exit_json(changed=False, tests=results, passed=all(r["error"] is None for r in results))


if __name__ == "__main__":
    main()
