"""Fabric verification logic: pairing plans, thresholds, localisation, diagnosis.

Pure functions over plain data (stdlib only), used by the verify_report
action, the verify filters and the tests. Nothing here runs a tool.

Vocabulary:

- an *endpoint* is ``(node, device)``: one cabled RDMA port, which the
  inventory ties to ``switch``/``switch_port`` through ``rdma_ports``;
- a *test* is one ib_write_bw run of a client endpoint against a server
  endpoint (HCA i against HCA i), with ``ok``, ``gbps`` and the tool's
  ``errors``;
- a *finding* is one diagnosed problem: a stable ``code``, the suspect
  ``layer``, and where: ``node``, ``device``, ``switch``, ``switch_port``.
"""
import re
from collections import Counter
from operator import itemgetter

from ansible_collections.linerate.fabric.plugins.module_utils.intent import fabric as intent
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.nccl_log import untangle_tagged

# code -> (severity, suspect layer, what it means). Codes are stable: reports,
# dashboards and CI key on them; add new ones, never rename.
FAULT_CODES = {
    "PORT_MISSING": ("error", "hca", "a cabled RDMA device is not present on the host"),
    "PORT_DOWN": ("error", "link", "a cabled RDMA port is not ACTIVE / LinkUp"),
    "PORT_SPEED": ("error", "link", "a port trained below the expected link speed"),
    "PORT_WIDTH": ("error", "link", "a port trained with fewer lanes than expected"),
    "MTU_MISMATCH": ("error", "mtu", "the netdev MTU differs from the intent"),
    "GID_MISSING": ("error", "gid", "no RoCE v2 IPv4 GID on the port (rail address missing)"),
    "RDMA_CONNECT_FAILED": ("error", "host", "the ib_write_bw client could not reach its server"),
    "RDMA_QP_FAILED": ("error", "gid", "queue pairs did not connect (GID index / addressing)"),
    "RDMA_TRANSPORT_RETRY": ("error", "mtu", "transport retry exceeded: frames dropped on the path"),
    "RDMA_TEST_ERROR": ("error", "host", "ib_write_bw failed"),
    "RDMA_BW_LOW": ("error", "link", "RDMA write bandwidth below the threshold"),
    # an error since issue 24: a failing test is a fault on its path whether or not its end is isolated
    "RDMA_INCONCLUSIVE": ("error", "link", "a failing pair whose bad end could not be isolated"),
    "RDMA_INTERMITTENT": ("error", "link", "a rail that fails a share of its tests (k of n) in one direction or both"),
    "UPLINK_DEGRADED": ("error", "fabric", "cross-leaf tests through one leaf's uplinks fail while its same-leaf tests pass"),
    # ib_send_bw and ib_write_lat on the first rounds' pairs (benchcheck.py)
    "RDMA_SEND_BW_LOW": ("error", "link", "RDMA send bandwidth (ib_send_bw) below the threshold"),
    "RDMA_LATENCY_HIGH": ("error", "link", "RDMA write latency (ib_write_lat) above fabric.verify.latency_us_max"),
    # GPUDirect RDMA: ib_write_bw --use_cuda on the first rounds' pairs and gdrcopy's sanity test (gpudirect.py)
    "GPUDIRECT_UNAVAILABLE": ("error", "peermem", "ib_write_bw cannot use GPU memory (perftest without CUDA, no peermem/DMA-BUF, no CUDA)"),
    "GPUDIRECT_RDMA_SLOW": ("error", "pcie", "RDMA write bandwidth from GPU memory below the threshold"),
    "GDRCOPY_SANITY_FAILED": ("error", "peermem", "gdrcopy's sanity test failed or gave no result"),
    "NCCL_NET_SOCKET": ("error", "hca_selection", "NCCL fell back to NET/Socket (TCP)"),
    "NCCL_NO_GDR": ("error", "peermem", "GPUDirect RDMA expected but not used"),
    "NCCL_FEW_NICS": ("error", "hca_selection", "fewer NICs carry NCCL traffic than are cabled"),
    "NCCL_BUSBW_LOW": ("error", "fabric", "NCCL bus bandwidth below the threshold"),
    "NCCL_QP_FAILED": ("error", "gid", "NCCL could not connect its queue pairs (GID index)"),
    "NCCL_TRANSPORT_RETRY": ("error", "mtu", "NCCL completion error 12: frames dropped on the path"),
    "NCCL_FAILED": ("error", "host", "nccl-tests failed"),
    # NCCL's own configuration read back from each node (nccl_conf_findings)
    "NCCL_CONF_MISSING": ("error", "hca_selection", "NCCL's configuration file is absent or unreadable"),
    "NCCL_CONF_INVALID": ("error", "hca_selection", "a line of NCCL's configuration file NCCL would not apply as meant"),
    "NCCL_TC_MISMATCH": ("error", "pfc", "NCCL_IB_TC differs from the intent's data class (DSCP << 2)"),
    "NCCL_SL_MISMATCH": ("error", "pfc", "NCCL_IB_SL differs from the service level the benchmarks ran on"),
    "NCCL_GID_INDEX_MISMATCH": ("error", "gid", "NCCL_IB_GID_INDEX differs from the port's RoCE v2 IPv4 GID index"),
    "NCCL_HCA_MISMATCH": ("error", "hca_selection", "NCCL_IB_HCA differs from the cabled, active ports"),
    # Lossless proof under incast (incast_findings): counters and goodput of k senders into one receiver
    "INCAST_NO_PAUSE": ("error", "pfc", "no PFC pause on the no-drop priority under incast on a lossless intent"),
    "INCAST_PAUSE_WRONG_PRIORITY": ("error", "pfc", "pause frames on a priority other than the no-drop one"),
    "INCAST_DROPS": ("error", "pfc", "drops on the no-drop priority under incast"),
    "INCAST_GOODPUT_LOW": ("error", "pfc", "an incast flow kept far less than its fair share (drops, go-back-N)"),
    "INCAST_FAILED": ("error", "host", "an incast flow did not run"),
    "INCAST_INCONCLUSIVE": ("warning", "pfc", "an incast flow ran alone (the others had finished): no proof for its port"),
    "INCAST_OUT_OF_SEQUENCE": ("error", "pfc", "out-of-sequence / sequence errors at the receiver: loss on the no-drop class"),
    "INCAST_ECN_NO_CNP": ("error", "pfc", "ECN marks not answered by CNPs, or CNPs a sender does not handle"),
    "INCAST_NO_ECN": ("error", "pfc", "no ECN mark and no CNP under incast although the intent enables ECN"),
    "COUNTER_MISSING": ("warning", "hca", "a counter this driver/firmware does not expose: what it proves is not proven"),
    # the switches' own counters over the benchmarks (incastcheck.switch_findings)
    "SWITCH_PAUSE_WRONG_PRIORITY": ("error", "pfc", "a switch port sent or received pause frames on a priority other than the no-drop one"),
    "SWITCH_DROPS_NO_DROP": ("error", "pfc", "a switch port dropped packets of the no-drop priority"),
    # the switches' lossless state read back in the same snapshots (incastcheck.lossless_findings) and
    # the hosts' pause counters over the verification window (linkcheck.port_health)
    "SWITCH_NO_HEADROOM": ("error", "pfc", "a switch port has no lossless headroom for the no-drop priority: it drops under incast"),
    "PFC_WATCHDOG_OFF": ("error", "pfc", "a switch port's PFC watchdog does not guard the no-drop priority: a pause storm would stall the fabric"),
    "PFC_STORM": ("error", "pfc", "a NIC keeps sending pause frames (host tx pauses, or the switch's watchdog detected a storm)"),
    # Host readiness below the fabric (readiness.py): PCIe, ACS, IOMMU, affinity, parity, limits
    "PCIE_DEGRADED": ("error", "pcie", "a NIC's or GPU's PCIe link trained below what both its ends can do (width or generation)"),
    "PCIE_SLOT_LIMITED": ("warning", "pcie", "a NIC's or GPU's PCIe link runs at its slot's (upstream port's) capability, below its own"),
    "ACS_ENABLED": ("error", "pcie", "ACS redirects peer-to-peer traffic on a bridge between a NIC and its GPU"),
    "IOMMU_NOT_PASSTHROUGH": ("warning", "pcie", "the IOMMU translates DMA (no iommu=pt): GPUDirect RDMA pays for it"),
    "MAX_READ_REQ_LOW": ("warning", "pcie", "a NIC's PCIe MaxReadReq is below 4096 bytes"),
    "GPU_NIC_AFFINITY": ("warning", "pcie", "a rail has no GPU behind its PCIe switch (PIX/PXB)"),
    "VERSION_SKEW": ("error", "host", "nodes run different kernel/OFED/firmware/GPU driver/peermem/NCCL versions"),
    "MEMLOCK_LIMITED": ("error", "host", "RLIMIT_MEMLOCK is not unlimited: RDMA memory registration fails"),
    "SHM_SMALL": ("warning", "host", "/dev/shm is smaller than NCCL's shared-memory transport needs"),
    "READINESS_UNPROVEN": ("warning", "host", "a readiness source could not be read: what it proves is not proven"),
    # Link health over the verification window (linkcheck.py): ethtool -S / perfquery deltas, mlxlink BER
    "LINK_ERRORS": ("error", "link", "physical errors (CRC, symbol, uncorrectable FEC) over the threshold in the window"),
    "LINK_FLAP": ("error", "link", "the link went down and came back during verification"),
    "LINK_BER_HIGH": ("error", "link", "mlxlink's effective or raw bit error rate above the threshold"),
    # Optics (mlxlink -m Module Info) against the module's own thresholds and fabric.verify's margins
    "OPTIC_RX_POWER_LOW": ("error", "link", "an optical module's received power on a lane below its low threshold (+ margin)"),
    "OPTIC_TEMP_HIGH": ("error", "link", "an optical module's temperature above its high threshold (- margin)"),
    "MLXLINK_RECOMMENDATION": ("warning", "link", "mlxlink's troubleshooting status is not 'No issue was observed'"),
    # InfiniBand: the subnet manager / topology / partition check (ibcheck.py)
    "IB_CHECK_FAILED": ("error", "subnet_manager", "the subnet could not be checked (sminfo / ibnetdiscover failed)"),
    "IB_SM_NOT_MASTER": ("error", "subnet_manager", "no SM is MASTER, or the master is not the intended port"),
    "IB_SM_PRIORITY_MISMATCH": ("error", "subnet_manager", "the master SM's priority differs from the intent"),
    "IB_LINK_MISSING": ("error", "cabling", "an intended link is absent"),
    "IB_PORTS_SWAPPED": ("error", "cabling", "two cables of a switch are on each other's ports"),
    "IB_LINK_MISWIRED": ("error", "cabling", "an intended peer is cabled to another port or switch"),
    "IB_UNEXPECTED_LINK": ("warning", "cabling", "a link the intent does not have"),
    "IB_UNEXPECTED_DEVICE": ("warning", "cabling", "a switch or CA the inventory does not know"),
    "IB_LINK_DEGRADED": ("error", "link", "a link trained below the intended width or speed"),
    "IB_PARTITION_NOT_IN_FORCE": ("error", "partition", "a member port lacks its partition key or membership"),
    # InfiniBand port error counters over the whole subnet (ibqueryerrors; ibcheck.check_port_errors)
    "IB_LINK_ERRORS": ("error", "link", "a switch port, inter-switch link or CA port counts errors above fabric.verify.ib_error_thresholds (both ends named)"),
    "IB_COUNTERS_UNREADABLE": ("error", "subnet_manager", "ibqueryerrors could not read the subnet's port error counters: they are not proven"),
    # RoCE: cabling by LLDP (cabling.py), switch neighbour tables and lldpd on hosts vs the inventory
    "CABLE_SWAPPED": ("error", "cabling", "two ports of a switch see each other's intended neighbour (cables swapped)"),
    "CABLE_MISWIRED": ("error", "cabling", "a port sees another endpoint than the inventory cables there"),
    "CABLE_MISSING": ("error", "cabling", "no LLDP neighbour on an intended switch-to-switch link"),
    "CABLE_UNEXPECTED": ("warning", "cabling", "a neighbour the inventory does not know, on a port it does not cable"),
    "CABLE_UNVERIFIED": ("warning", "cabling", "LLDP could not be read (switch, lldpd on a host, silent host port): cabling unproven"),

    # The read-only audit (playbooks/audit.yml, module_utils/checks/audit.py): what a role would change in check mode
    "DRIFT_FIRMWARE": ("error", "firmware", "a NIC firmware (mlxconfig Next Boot) value differs from the intent"),
    "DRIFT_ROCE_QOS": ("error", "pfc", "a port's trust, PFC, DSCP map, ECN, RDMA-CM ToS or MTU differs from the intent"),
    "DRIFT_NCCL_CONF": ("error", "hca_selection", "a NCCL_* line of NCCL's configuration differs from the intent"),
    "DRIFT_HOST": ("error", "host", "another host setting (packages, netdevs, peermem, boot units) differs from the intent"),
    "DRIFT_SUBNET_MANAGER": ("error", "subnet_manager", "the subnet manager's configuration differs from the intent"),
    "DRIFT_SWITCH": ("error", "switch", "a switch's running config differs from the intent"),
    "AUDIT_LAYER_FAILED": ("error", "host", "the audit could not run a layer's role on the node: its drift is unproven"),
    # Every node and switch in scope accounted for (accounting.py): what did not finish is not verified
    "NODE_NOT_VERIFIED": ("error", "host", "a node in scope did not finish the verification (unreachable or failed)"),
    "SWITCH_UNREACHABLE": ("error", "switch", "a switch in scope could not be read (unreachable, login refused, or left the run)"),
    "FIRMWARE_PENDING": ("warning", "firmware", "a firmware value is set for the next boot but not running yet"),
}

LAYERS = ("link", "hca", "hca_selection", "interface_selection", "peermem", "pfc", "mtu", "gid",
          "host", "fabric", "subnet_manager", "cabling", "partition", "firmware", "switch", "pcie")

# Which report check an InfiniBand finding belongs to.
IB_CHECK_OF = {"IB_CHECK_FAILED": "subnet_manager", "IB_SM_NOT_MASTER": "subnet_manager",
               "IB_SM_PRIORITY_MISMATCH": "subnet_manager", "IB_PARTITION_NOT_IN_FORCE": "ib_partitions",
               "IB_LINK_ERRORS": "ib_port_errors", "IB_COUNTERS_UNREADABLE": "ib_port_errors"}


# ---------------------------------------------------------------- plans

def round_robin(nodes):
    """Rounds of disjoint pairs covering every pair once (circle method).

    N nodes -> N-1 rounds (N even) or N rounds (N odd, one node idle per
    round). Each pair is ``[server, client]``; for nodes i < j (plan order)
    i serves when i + j is odd, so every node is server in about half of its
    tests (an asymmetric fault shows whichever way it points).
    """
    nodes = list(nodes)
    order = {n: k for k, n in enumerate(nodes)}
    if len(nodes) < 2:
        return []
    ring = nodes + ([None] if len(nodes) % 2 else [])
    n = len(ring)
    rounds = []
    for r in range(n - 1):
        pairs = []
        for i in range(n // 2):
            a, b = ring[i], ring[n - 1 - i]
            if a is None or b is None:
                continue
            lo, hi = sorted((a, b), key=order.get)
            pairs.append([lo, hi] if (order[lo] + order[hi]) % 2 else [hi, lo])
        rounds.append(pairs)
        ring = [ring[0]] + [ring[-1]] + ring[1:-1]
    return rounds


PLANS = ("auto", "full", "sampled")


def resolve_plan(plan, n_nodes, full_max):
    """The ib_write_bw plan that runs: ``auto`` is ``full`` up to ``full_max`` nodes, ``sampled`` above."""
    if plan not in PLANS:
        raise ValueError(f"ib_write_bw plan {plan!r} is not allowed (allowed: {' | '.join(PLANS)})")
    if plan != "auto":
        return plan
    return "full" if int(n_nodes) <= int(full_max) else "sampled"


def node_groups(nodes, leaf_of=None):
    """Nodes grouped by the leaves their rails are cabled to, in plan order.

    ``leaf_of``: {(node, device): switch} (``cabling_index``'s switch per endpoint, or a plain
    {node: leaf}). Two nodes share a group when every rail of theirs lands on the same leaves
    (a rail-optimised scalable unit, or one leaf per rack): HCA i against HCA i of two nodes of
    one group stays under its leaf; of two groups it crosses the leaves' uplinks. Without
    ``leaf_of`` every node is in one group.
    """
    leaf_of = leaf_of or {}
    key = {}
    for k, leaf in leaf_of.items():
        node = k[0] if isinstance(k, (tuple, list)) else k
        key.setdefault(node, set()).add(str(leaf))
    groups = {}
    for n in nodes:
        groups.setdefault(tuple(sorted(key.get(n, ()))), []).append(n)
    return list(groups.values())


def _group_rounds(groups, count):
    """Up to ``count`` rounds of cross-group pairs: the groups meet in circle order (group A's
    i-th node with group B's i-th); server and client alternate so each uplink carries both
    directions. Pairs of a round are disjoint."""
    out = []
    for meeting in round_robin(list(range(len(groups))))[:count]:
        pairs = []
        for ga, gb in meeting:
            for i, (a, b) in enumerate(zip(groups[ga], groups[gb])):
                pairs.append([a, b] if i % 2 == 0 else [b, a])
        out.append(pairs)
    return out


def rail_shift(leaf_of, nodes=None):
    """The rail shift ``k`` of a cross-rail round (the client's HCA i writes into the server's HCA
    (i + k) mod R, rails in cabling order) that puts the most rails' tests across two leaves, and
    those leaves' uplinks and the spine on the path; 0 when no shift does (every rail on one leaf).

    ``leaf_of``: {(node, device): leaf} (``leaves_of``); the first of ``nodes`` (else of ``leaf_of``)
    with two or more rails stands for all (a rail-optimised unit cables every node alike)."""
    devs = {}
    for k, leaf in (leaf_of or {}).items():
        if isinstance(k, (tuple, list)):
            devs.setdefault(k[0], []).append(str(leaf))
    order = [n for n in (nodes or devs) if len(devs.get(n, ())) >= 2]
    if not order:
        return 0
    leaves = devs[order[0]]
    r = len(leaves)
    best = max(range(1, r), key=lambda k: (sum(leaves[i] != leaves[(i + k) % r] for i in range(r)), -k))
    return best if any(leaves[i] != leaves[(i + best) % r] for i in range(r)) else 0


def cross_rail_round(nodes, leaf_of=None, pairs=None):
    """One round of cross-rail pairs ``[server, client, k]`` (``rail_shift``) that crosses every leaf's
    uplinks both ways, or None where none is needed or possible.

    Needed where the nodes are one leaf group (``node_groups``: a rail-optimised unit, the lab) whose
    rails land on two or more leaves: same-rail tests then never leave a leaf, and an uplink (or the
    spine) is proven by no ib_write_bw test. Rail i of each client writes into rail i + k of its
    server: leaf(i)'s uplinks carry it out, leaf(i + k)'s in. ``pairs``: the [server, client] pairs to
    use (default the circle's first round)."""
    nodes = list(nodes)
    if len(nodes) < 2 or len(node_groups(nodes, leaf_of)) != 1:
        return None
    k = rail_shift(leaf_of, nodes)
    if not k:
        return None
    pairs = pairs if pairs is not None else round_robin(nodes)[0]
    return [[p[0], p[1], k] for p in pairs]


def pair_shift(pair):
    """The rail shift of a planned pair (``cross_rail_round``): 0 for HCA i against HCA i."""
    return int(pair[2]) if len(pair) > 2 and pair[2] else 0


def full_plan(nodes, leaf_of=None):
    """Every pair once (``round_robin``), plus one cross-rail round (``cross_rail_round``) where the
    nodes are one rail-optimised unit: the leaves' uplinks are proven at the cost of one round."""
    rounds = round_robin(nodes)
    cross = cross_rail_round(nodes, leaf_of)
    return rounds + ([cross] if cross else [])


def sampled_plan(nodes, rounds=2, leaf_of=None):
    """The cheaper plan's first phase: a few disjoint pairings (rounds of the circle).

    With the cabling (``leaf_of``, see ``node_groups``) and nodes under two or more leaf
    groups, the plan is topology-aware: one round of same-leaf pairs (the circle within each
    group), then up to two rounds of cross-leaf pairs (each group meets two others, so a
    leaf's uplinks are told from its peers'), then circle rounds up to ``rounds`` + the
    topology rounds. Nodes under one leaf group whose rails land on several leaves (a
    rail-optimised unit) get the circle rounds and one cross-rail round (``cross_rail_round``).
    Every node is in at most one pair of a round.
    """
    nodes = list(nodes)
    full = round_robin(nodes)
    step = max(1, len(full) // max(1, rounds))
    circle = [full[i] for i in range(0, len(full), step)][:rounds]
    groups = node_groups(nodes, leaf_of)
    if len(groups) < 2:
        # one rail-optimised unit: a cross-rail round, on pairs the circle rounds did not meet
        unused = [r for r in full if r not in circle]
        cross = cross_rail_round(nodes, leaf_of, unused[0] if unused else None)
        return circle + ([cross] if cross else [])
    same = [p for g in groups for p in (round_robin(g)[:1] or [[]])[0]]
    cross = _group_rounds(groups, 2 if len(groups) > 2 else 1)
    return ([same] if same else []) + cross + circle


def retest_plan(suspects, good, tested=(), repeats=1, group_of=None, spare=None, rails_of=None):
    """Rounds re-testing each suspect node against known-good peers, in both directions.

    ib_write_bw's client writes into its server: a suspect as client proves its send side,
    as server its receive side. Each suspect gets ``repeats`` tests as client and ``repeats``
    as server (an intermittent rail fails k of n; more samples give its rate; ``repeats`` is a
    number or {suspect: number}), each against a good peer: with ``group_of`` ({node: leaf group
    key}, see ``node_groups``) peers under its own leaves first (a same-leaf test proves the
    rail without any uplink; a same-leaf peer is met again, the other way, rather than cross
    an uplink), peers it has not met before first. ``suspects``/``good``: node names;
    ``tested``: pairs already run; ``spare``: {node: devices it failed on} of nodes that are
    no suspects, a peer for a suspect whose ``rails_of`` ({suspect: devices under test}) they
    do not share. A round never uses a node twice; a good node serves several suspects over
    the rounds, so the rounds stay about 2 x ``repeats`` while the good nodes outnumber the
    suspects.
    """
    seen = {frozenset(p[:2]) for p in tested}
    wanted, have, suspect_set = [], set(), set(suspects)
    spare = spare or {}
    by_group = {}
    for g in suspects:
        by_group.setdefault((group_of or {}).get(g), []).append(g)
    for i, s in enumerate(suspects):
        reps = max(1, int(repeats.get(s, 1) if isinstance(repeats, dict) else repeats))
        mine = set((rails_of or {}).get(s) or ())
        # each suspect starts further along the good nodes, so suspects share rounds
        pool = [g for g in good if g != s] + [g for g, bad in spare.items()
                                              if g != s and mine and not set(bad) & mine]
        if not pool:
            continue
        near = [g for g in pool if group_of and group_of.get(g) == group_of.get(s)]
        far = [g for g in pool if g not in near]
        if group_of:
            # the other suspects under the same leaves, after the good peers there: a same-leaf test
            # between two of them proves both rails without an uplink (the victims of a bad uplink
            # clear each other in one test instead of queueing for the few good nodes of their leaf)
            near += [g for g in by_group.get(group_of.get(s), ()) if g != s]

        def rotate(peers, k):
            fresh = [g for g in peers if frozenset((s, g)) not in seen]
            met = [g for g in peers if g not in fresh]
            k = k % len(fresh) if fresh else 0
            return fresh[k:] + fresh[:k] + met
        near, far = rotate(near, 2 * reps * i), rotate(far, 2 * reps * i)
        if group_of and near:
            order = near * -(-2 * reps // len(near))   # the same-leaf peers again rather than an uplink
        else:
            order = near + far
        peers = [order[j % len(order)] for j in range(2 * reps)]
        for j, g in enumerate(peers):
            pair = [g, s] if j % 2 == 0 else [s, g]
            if tuple(pair) not in have or g not in suspect_set:   # two suspects' one test serves both
                wanted.append(pair)
                have.add(tuple(pair))
    rounds, busy = [], []
    for pair in wanted:
        for rnd, used in zip(rounds, busy):
            if not (set(pair) & used):
                rnd.append(pair)
                used.update(pair)
                break
        else:
            rounds.append([pair])
            busy.append(set(pair))
    return rounds


PROBE_PHASES = 1   # re-test phases whose idle nodes take fresh sample pairs (``fill_idle``)
PROBE_WINDOW = 64  # how far along the idle nodes a fresh peer is looked for


def fill_idle(rounds, nodes, tested=()):
    """``rounds`` with each round's idle nodes paired among themselves, pairs not met before.

    A re-test round keeps only the suspects and their peers busy; the rest of the fleet would
    wait. Paired, each idle rail takes one more sample for free (no round added): a rail that
    fails a share of its tests (``RDMA_INTERMITTENT``) and passed every test of the first rounds
    (a 50 % flaky rail passes 5 in a row 3 % of the time) is seen failing here. ``nodes`` in plan
    order; ``tested``: pairs already run (each pair once); server and client alternate by round."""
    seen = {frozenset(p[:2]) for p in tested} | {frozenset(p[:2]) for rnd in rounds for p in rnd}
    out = []
    for j, rnd in enumerate(rounds):
        busy = {n for p in rnd for n in p[:2]}
        idle = [n for n in nodes if n not in busy]
        if idle:
            k = (j * (PROBE_WINDOW // 2 + 1)) % len(idle)
            idle = idle[k:] + idle[:k]
        extra, used = [], set()
        for i, a in enumerate(idle):
            if a in used:
                continue
            for b in idle[i + 1:i + 1 + PROBE_WINDOW]:
                if b not in used and frozenset((a, b)) not in seen:
                    extra.append([a, b] if j % 2 == 0 else [b, a])
                    used.update((a, b))
                    seen.add(frozenset((a, b)))
                    break
        out.append(list(rnd) + extra)
    return out


# How many tests one way settle a side (re-test phases stop once every suspect is settled):
RETEST_SAMPLES = 8      # an intermittent rail's other direction: a 50 % flaky side passes 8 in a row 0.4 % of the time
CLEAR_SAME_LEAF = 2     # same-leaf passes that clear a side whose failures all crossed uplinks
HARD_FAILS = 3          # failures, none passed, one same-leaf: a hard fault that way
RETEST_REPEATS_FLAKY = 4  # tests per direction and phase for a side that both fails and passes


def side_stats(tests, leaf_of=None, ignore=()):
    """{(direction, endpoint): {"fails", "total", "same_fails", "same_total"}} of evaluated tests.

    direction ``send`` is the client's side, ``receive`` the server's; ``same_*`` counts the
    tests whose ends hang off one leaf (no uplink on the path; every test without ``leaf_of``).
    ``ignore``: {(test index, side)} left out (a failure another element already explains)."""
    leaf_of = {tuple(k): v for k, v in (leaf_of or {}).items()}
    out = {}
    for i, t in enumerate(tests):
        c, sv = tuple(t["client"]), tuple(t["server"])
        lc, ls = leaf_of.get(c), leaf_of.get(sv)
        same = lc is None or ls is None or lc == ls
        for side in (("send", c), ("receive", sv)):
            if (i, side) in ignore:
                continue
            st = out.setdefault(side, {"fails": 0, "total": 0, "same_fails": 0, "same_total": 0})
            st["total"] += 1
            st["fails"] += not t["ok"]
            st["same_total"] += same
            st["same_fails"] += same and not t["ok"]
    return out


def side_state(st):
    """What one side's tests say (``side_stats`` entry or None): ``untested``, ``clean`` (never
    failed), ``bad`` (HARD_FAILS+ failures, none passed, one same-leaf), ``flaky`` (fails and passes,
    a same-leaf failure among them, RETEST_SAMPLES+ tests), ``cleared`` (its failures all crossed an
    uplink, CLEAR_SAME_LEAF+ same-leaf passes, no same-leaf failure), else ``open`` (more tests needed)."""
    if not st or not st["total"]:
        return "untested"
    if not st["fails"]:
        return "clean"
    passes, same_passes = st["total"] - st["fails"], st["same_total"] - st["same_fails"]
    if not passes:
        return "bad" if st["fails"] >= HARD_FAILS and st["same_fails"] else "open"
    if not st["same_fails"]:
        return "cleared" if same_passes >= CLEAR_SAME_LEAF else "open"
    return "flaky" if st["total"] >= RETEST_SAMPLES else "open"


def retest_needs(tests, leaf_of=None):
    """The endpoints the next re-test phase must test again, with how often each way.

    ``tests``: evaluated tests. A failing test one end of which is settled as bad (``bad`` or
    ``flaky``, ``side_state``, or ``convicted`` with two same-leaf failures that way) needs nothing
    from its other end. Every other end of a failing
    test is a suspect until both its directions are settled: a bad or flaky side, a cleared one
    (only uplinks failed it), and a clean other direction with 2 tests (RETEST_SAMPLES when the
    bad side is flaky: a rail flaky both ways must be seen failing both ways). Returns
    ``{endpoint: repeats}``: RETEST_REPEATS_FLAKY for an endpoint with a side that fails and
    passes, else 1."""
    stats = side_stats(tests, leaf_of)
    state = {side: side_state(st) for side, st in stats.items()}
    settled_bad = {side for side, s in state.items() if s in ("bad", "flaky")}
    # an end that failed against two peers that passed elsewhere, twice without an uplink on the
    # path, explains those failures: its peers need no re-test (``convicted``)
    settled_bad |= {(d, ep) for ep in convicted(tests) for d in ("send", "receive")
                    if (stats.get((d, ep)) or {}).get("same_fails", 0) >= 2}
    ignore = set()
    for i, t in enumerate(tests):
        if t["ok"]:
            continue
        snd, rcv = ("send", tuple(t["client"])), ("receive", tuple(t["server"]))
        if snd in settled_bad and rcv not in settled_bad:
            ignore.add((i, rcv))
        elif rcv in settled_bad and snd not in settled_bad:
            ignore.add((i, snd))
    if ignore:
        stats = side_stats(tests, leaf_of, ignore)
        state = {side: side_state(st) for side, st in stats.items()}
    out = {}
    for ep in sorted({side[1] for side, s in state.items() if s not in ("clean", "untested")}):
        sides = {d: stats.get((d, ep)) for d in ("send", "receive")}
        states = {d: state.get((d, ep), "untested") for d in sides}
        flaky = any(s == "flaky" or (st and 0 < st["fails"] < st["total"] and st["same_fails"])
                    for s, st in zip(states.values(), sides.values()))
        done = True
        for d, s in states.items():
            if s in ("bad", "flaky", "cleared"):
                continue
            if s == "clean" and sides[d]["total"] >= (RETEST_SAMPLES if flaky else 2):
                continue
            done = False
        if not done:
            out[ep] = RETEST_REPEATS_FLAKY if flaky else 1
    return out


def incast_plan(nodes, k=7, leaf_of=None):
    """Incast rounds in which every node is the receiver once (every rail of it at once).

    The nodes are interleaved across leaf groups (``node_groups``) and cut into groups of
    k + 1: in round j the j-th member of each group receives and the others send into it,
    so a receiver's senders sit under other leaves where there are several (the incast
    loads the receiver leaf's uplinks towards it, and the senders' leaves' uplinks) and the
    rounds are k + 1 (k + 2 where the last group was folded into the one before) whatever
    the fleet's size. Returns ``[[{"receiver", "senders"}]]``, one list per round.
    """
    k = max(1, int(k))
    groups = node_groups(list(nodes), leaf_of)
    order = []
    for i in range(max((len(g) for g in groups), default=0)):
        order += [g[i] for g in groups if i < len(g)]
    chunks = [order[i:i + k + 1] for i in range(0, len(order), k + 1)]
    if len(chunks) > 1 and len(chunks[-1]) < 2:
        last = chunks.pop()
        chunks[-1] += last
    if not chunks or len(chunks[0]) < 2:
        return []
    rounds = []
    for j in range(max(len(c) for c in chunks)):
        rnd = [{"receiver": c[j], "senders": [n for n in c if n != c[j]]} for c in chunks if j < len(c)]
        rounds.append(rnd)
    return rounds


def incast_coverage(rounds, leaf_of, uplinks=None):
    """What an incast plan proves: host ports that were a receiver, and leaves whose uplinks
    carried an incast towards one (a sender under another leaf), out of those in scope.

    ``leaf_of``: {(node, device): leaf}; ``uplinks``: {leaf: [uplink entries]} (the switches'
    ``switch_uplinks``). Leaves in scope for uplinks: those of a rail cabled to two or more leaves
    (same-rail traffic crosses their uplinks; one leaf per rail has none), listed in ``uplinks``
    when given.
    Returns ``{"ports": [proven, in_scope], "uplinks": [proven, in_scope]}``.
    """
    ports_of = {}
    for (node, device), leaf in leaf_of.items():
        ports_of.setdefault(node, []).append((device, leaf))
    leaves = _uplink_scope(leaf_of)
    if uplinks:
        leaves &= set(uplinks)
    proven_ports, proven_up = set(), set()
    for rnd in rounds:
        for g in rnd:
            r = g["receiver"]
            proven_ports.update((r, d) for d, _port in ports_of.get(r, []))
            for device, leaf in ports_of.get(r, []):
                for s in g["senders"]:
                    src = leaf_of.get((s, device))
                    if src is not None and src != leaf:
                        proven_up.update(x for x in (leaf, src) if x in leaves)
    return {"ports": [len(proven_ports), len(leaf_of)], "uplinks": [len(proven_up), len(leaves)]}


def plan_tests(rounds, leaf_of):
    """The (client, server) endpoints of every rail test of ``rounds`` (pairs [server, client] or
    [server, client, shift], ``cross_rail_round``): the client's i-th rail (cabling order, ``leaf_of``
    keys) writes into the server's rail i + shift."""
    devs = {}
    for k in leaf_of or {}:
        if isinstance(k, (tuple, list)):
            devs.setdefault(k[0], []).append(k[1])
    for rnd in rounds or []:
        for pair in rnd:
            server, client, k = pair[0], pair[1], pair_shift(pair)
            cd, sd = devs.get(client, []), devs.get(server, [])
            for i, d in enumerate(cd):
                if sd:
                    yield (client, d), (server, sd[(i + k) % len(sd)])


def uplink_test_coverage(rounds, leaf_of, uplinks=None):
    """What an ib_write_bw plan proves of the leaves' uplinks: leaves whose uplinks carried a test
    out (a client under it writing to another leaf) and in (a server under it written into from
    another leaf), out of those in scope: the leaves of ``uplinks`` ({leaf: switch_uplinks}) when
    given, else every leaf where there are two or more. Which uplink of a leaf a flow takes is the
    switches' ECMP hash: the plan proves a leaf's uplinks as a set.

    Returns ``{"uplinks": [proven, in_scope], "flows": {leaf: [out, in]}, "missing": [leaves]}``."""
    leaf_of = {tuple(k): v for k, v in (leaf_of or {}).items()}
    leaves = set(leaf_of.values())
    scope = set(uplinks) & leaves if uplinks else (leaves if len(leaves) > 1 else set())
    flows = {leaf: [0, 0] for leaf in sorted(scope)}
    for c, sv in plan_tests(rounds, leaf_of):
        lc, ls = leaf_of.get(c), leaf_of.get(sv)
        if lc != ls:
            if lc in flows:
                flows[lc][0] += 1
            if ls in flows:
                flows[ls][1] += 1
    proven = [leaf for leaf, (o, i) in flows.items() if o and i]
    return {"uplinks": [len(proven), len(scope)], "flows": flows,
            "missing": sorted(leaf for leaf in flows if leaf not in proven)}


def convicted(tests):
    """The endpoints a phase's tests already convict, which a re-test would only confirm: each
    failed against at least two peer nodes whose same rail passed a test with another node
    (a bad link at one end fails whoever meets it), or a failing test's own error names it
    (``blame``: its port is down, its device missing). ``tests``: evaluated tests."""
    passed = {tuple(t[side]) for t in tests if t["ok"] for side in ("server", "client")}
    peers, out = {}, set()
    for t in tests:
        if t["ok"]:
            continue
        if t.get("blame"):
            out.add(tuple(t[t["blame"]]))
        for me, other in (("server", "client"), ("client", "server")):
            if tuple(t[other]) in passed:
                peers.setdefault(tuple(t[me]), set()).add(t[other][0])
    return out | {e for e, nodes in peers.items() if len(nodes) >= 2}


def round_roles(rounds, node):
    """For one node: [{"round", "role": server|client|idle, "peer"}] per round; ``shift`` where the
    pair is cross-rail (``cross_rail_round``)."""
    out = []
    for i, rnd in enumerate(rounds):
        entry = {"round": i, "role": "idle", "peer": None}
        for pair in rnd:
            server, client = pair[0], pair[1]
            if node in (server, client):
                entry.update(role="server" if node == server else "client", peer=client if node == server else server)
                if pair_shift(pair):
                    entry["shift"] = pair_shift(pair)
        out.append(entry)
    return out


def schedule_parts(rounds, node, offset=0, addresses=None):
    """One node's whole ib_write_bw schedule: its part in every round, in order.

    ``[{"round": offset + i, "role": server|client|idle, "peer", "peer_address"}]`` (``round_roles``
    with the round ids the report uses, ``offset`` the rounds run before: the sampled plan's
    re-test rounds follow its first rounds). ``peer_address`` is ``addresses[peer]`` (the
    peer's ``ansible_host``), else the peer's name; null when idle.
    """
    addresses = addresses or {}
    out = []
    for part in round_roles(rounds, node):
        peer = part["peer"]
        out.append({"round": int(offset) + part["round"], "role": part["role"], "peer": peer,
                    "peer_address": (addresses.get(peer) or peer) if peer is not None else None})
        if part.get("shift"):
            out[-1]["shift"] = part["shift"]
    return out


def schedule_summary(rounds, duration, rails=1, label="rounds"):
    """The line printed before a schedule starts: ``3 rounds, 6 pairs x 2 rails; expected ~6 s``.

    The expectation is the measuring floor, rounds x one test's ``duration``: every node
    plays all its rounds in one task, so the floor is what the schedule should take.
    """
    n = len(rounds or [])
    pairs = sum(len(r) for r in rounds or [])
    rails = int(rails)
    floor = n * float(duration or 0)
    return (f"{n} {label if n != 1 else label.rstrip('s')}, {pairs} pair{'' if pairs == 1 else 's'} x "
            f"{rails} rail{'' if rails == 1 else 's'}, one task per node; expected ~{duration_text(floor)} "
            f"({n} x {duration_text(duration or 0)})")


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


# ---------------------------------------------------------------- thresholds

class NotPublished(ValueError):
    """A fabric without the derived values the validation publishes with it."""


def derived(fabric):
    """The intent's derived values (``intent.derive``) as the validation published them
    (``fabric_effective.derived``). Verification derives nothing of its own: a fabric without
    them (the raw ``fabric`` variable, a caller that skipped the validation) is refused with
    ``NotPublished``, naming what to pass instead."""
    d = fabric.get("derived") if isinstance(fabric, dict) else None
    if not isinstance(d, dict):
        raise NotPublished("fabric: has no 'derived' values: pass fabric_effective as playbooks/validate.yml "
                           "publishes it (module_utils/intent/fabric.py published()), not the raw fabric intent")
    return d


def rdma_threshold_gbps(fabric):
    """ib_write_bw bandwidth (Gb/s) one port should reach."""
    return derived(fabric)["ib_write_bw_min_gbps"]


def nccl_threshold_gbytes(fabric, nics):
    """nccl-tests bus bandwidth (GB/s) one node's NICs should reach."""
    return round(derived(fabric)["nccl_busbw_min_gbytes_per_nic"] * nics, 3)


# ---------------------------------------------------------------- findings

def finding(code, message, node=None, device=None, switch=None, switch_port=None, layer=None,
            check=None, evidence=None, **extra):
    severity, default_layer, _meaning = FAULT_CODES[code]
    out = {"code": code, "severity": severity, "layer": layer or default_layer, "check": check,
           "node": node, "device": device, "switch": switch,
           "switch_port": None if switch_port is None else str(switch_port),
           "message": message}
    if evidence:
        out["evidence"] = evidence
    out.update(extra)
    return out


def cabling_index(hosts):
    """{(node, device): rdma_ports entry} from {node: {"rdma_ports": [...]}} or {node: [...]}."""
    idx = {}
    for node, hv in (hosts or {}).items():
        ports = hv.get("rdma_ports", []) if isinstance(hv, dict) else hv
        for p in ports or []:
            idx[(node, p["device"])] = p
    return idx


def _where(cabling, node, device):
    p = cabling.get((node, device)) or {}
    return {"node": node, "device": device, "switch": p.get("switch"), "switch_port": p.get("switch_port")}


def port_findings(node, ports, expected, fabric):
    """Port check of one node. ``ports``: what rdma_port_check returned per device."""
    out = []
    speed = fabric.get("link_speed_gbps")
    width = fabric.get("link_width")
    mtu = (fabric.get("mtu") or {}).get("host")
    roce = fabric.get("transport", "roce") == "roce"
    seen = {p.get("device"): p for p in ports or []}
    for exp in expected or []:
        dev = exp["device"]
        where = {"node": node, "device": dev, "switch": exp.get("switch"), "switch_port": exp.get("switch_port"),
                 "check": "ports"}
        p = seen.get(dev)
        if p is None or not p.get("present", True):
            out.append(finding("PORT_MISSING", f"{node} {dev}: device not found ({(p or {}).get('error') or 'absent'})",
                               **where))
            continue
        state, phys = p.get("state"), p.get("phys_state")
        if state != "ACTIVE" or (phys and phys != "LinkUp"):
            out.append(finding("PORT_DOWN", f"{node} {dev} port {p.get('port', 1)}: state {state}, physical state "
                               f"{phys} (cabled to {exp.get('switch')} {exp.get('switch_port')})", **where))
            continue
        if speed and p.get("speed_gbps") is not None and float(p["speed_gbps"]) < float(speed):
            out.append(finding("PORT_SPEED", f"{node} {dev}: link at {p['speed_gbps']:g} Gb/s, expected {speed} Gb/s",
                               actual=p["speed_gbps"], expected=speed, **where))
        if width and p.get("width") is not None and int(p["width"]) != int(width):
            out.append(finding("PORT_WIDTH", f"{node} {dev}: link width {p['width']}X, expected {width}X",
                               actual=p["width"], expected=width, **where))
        if roce and mtu and p.get("mtu") is not None and int(p["mtu"]) != int(mtu):
            out.append(finding("MTU_MISMATCH", f"{node} {dev} ({p.get('netdev')}): MTU {p['mtu']}, intent "
                               f"fabric.mtu.host {mtu}", actual=p["mtu"], expected=mtu, **where))
        if roce:
            addr = (exp.get("address") or "").split("/")[0]
            ipv4 = p.get("ipv4") or []
            gid = p.get("gid")
            if p.get("gid_table") and (gid is None or gid.get("type") != "RoCE v2" or not gid.get("ipv4")):
                index = (gid or {}).get("index", p.get("gid_index"))
                what = ("no GID index to check: none holds a RoCE v2 IPv4 GID on this node (NCCL_IB_GID_INDEX "
                        "could not be discovered)" if index is None else
                        f"GID index {index} is {'empty' if gid is None else gid.get('type') + ' ' + str(gid.get('gid'))}, "
                        "not a RoCE v2 IPv4 GID")
                out.append(finding("GID_MISSING", f"{node} {dev} ({p.get('netdev')}): {what}"
                                   + (f"; rail address {addr} is not on the netdev" if addr and addr not in ipv4 else ""),
                                   **where))
            elif not ipv4 or (addr and addr not in ipv4):
                out.append(finding("GID_MISSING", f"{node} {dev} ({p.get('netdev')}): no RoCE v2 IPv4 GID"
                                   + (f"; rail address {addr} is not on the netdev" if addr else ""), **where))
    return out


def port_check(results, hosts):
    """The ``ports`` check of the report from what rdma_port_check returned on each node.

    ``results``: {node: the module's result}; the findings are the node's own
    (rdma_port_check computes them with ``port_findings``), never computed again.
    ``hosts``: {node: rdma_ports}, one case per cabled port. A skipped result
    gives no cases; a result without ``findings`` raises KeyError naming the node.
    Returns ``(findings, check or None)``.
    """
    findings, cases = [], []
    for node, result in results.items():
        if not result or result.get("skipped"):
            continue
        if "findings" not in result:
            raise KeyError(f"{node}: the rdma_port_check result has no findings ({result.get('msg') or 'not run'})")
        mine_all = list(result["findings"])
        findings += mine_all
        for p in hosts.get(node) or []:
            mine = [x for x in mine_all if x["device"] == p["device"]]
            cases.append({"name": f"{node} {p['device']}", "ok": not mine, "code": mine[0]["code"] if mine else None,
                          "message": "; ".join(x["message"] for x in mine) or None, "findings": mine})
    if not cases:
        return findings, None
    return findings, {"passed": all(c["ok"] for c in cases), "cases": cases,
                      "detail": f"{sum(c['ok'] for c in cases)}/{len(cases)} ports OK"}


# ---------------------------------------------------------------- ib_write_bw

_ERR_CLASSES = (
    ("PORT_DOWN", re.compile(r"Port number \d+ state is|Couldn't set the link layer")),
    ("PORT_MISSING", re.compile(r"IB device \S+ not found|No IB devices found|Did not detect devices")),
    ("RDMA_QP_FAILED", re.compile(r"to RTR|to RTS|Unable to Connect the HCA's through the link")),
    ("RDMA_TRANSPORT_RETRY", re.compile(r"Failed status 12|transport retry|Completion with error")),
    ("RDMA_CONNECT_FAILED", re.compile(r"Couldn't connect to|Unable to init the socket connection")),
)


def classify_rdma_error(text):
    for code, rx in _ERR_CLASSES:
        if rx.search(text or ""):
            return code
    return "RDMA_TEST_ERROR"


def _test_error_code(t):
    """The code explaining a failed test, preferring the side that failed first."""
    server_code = classify_rdma_error(t.get("server_error")) if t.get("server_error") else None
    client_code = classify_rdma_error(t.get("client_error")) if t.get("client_error") else None
    for code in ("PORT_DOWN", "PORT_MISSING", "RDMA_QP_FAILED"):
        if code in (server_code, client_code):
            side = "server" if server_code == code else "client"
            return code, side
    if "RDMA_TRANSPORT_RETRY" in (server_code, client_code):
        # frames dropped somewhere on the path (receiver MTU, a switch port): localised across tests
        return "RDMA_TRANSPORT_RETRY", None
    if client_code:
        return client_code, "server" if client_code == "RDMA_CONNECT_FAILED" else "client"
    if server_code:
        return server_code, "server"
    return "RDMA_BW_LOW", None


def round_tests(logs):
    """Tests from the per-host round logs ({node: [entries]}) -> [{server, client, gbps, errors}].

    A client entry {round, role: client, peer, results: [...]} is matched with its
    server's entry of the same round, rail by rail (device; a result's ``peer_device`` where
    the client's rail wrote into another rail of the server, a cross-rail round).
    """
    return [{"round": rnd, "client": [node, r["device"]], "server": [peer, r.get("peer_device") or r["device"]],
             "gbps": r.get("gbps"), "client_error": r.get("error"), "server_error": s.get("error")}
            for rnd, node, peer, r, s in paired_results(logs)]


def paired_results(logs, round_of=lambda v: v):
    """Each client rail result of the per-host schedule records ({node: [entries]}) with its server's
    result of the same round and rail (the client result's ``peer_device`` in a cross-rail round;
    ``{}`` when the server recorded none):
    ``[(round, client node, server node, client result, server result)]``, clients in node order."""
    servers = {}
    for node, entries in (logs or {}).items():
        for e in entries or []:
            if e.get("role") == "server":
                for r in e.get("results") or []:
                    servers[(round_of(e["round"]), node, r["device"])] = r
    out = []
    for node, entries in sorted((logs or {}).items()):
        for e in entries or []:
            if e.get("role") != "client":
                continue
            for r in e.get("results") or []:
                rnd = round_of(e["round"])
                out.append((rnd, node, e["peer"], r,
                            servers.get((rnd, e["peer"], r.get("peer_device") or r["device"]), {})))
    return out


def schedule_timing(logs):
    """How the rounds ran, from the per-host round logs ({node: [entries]}): per round, the
    longest part (``seconds``: the round's wall time on its slowest node) and the client
    starts (``client_starts``: perftest clients started, a retry while the peer's server did
    not listen yet included; one per rail when every server was ready). Returns
    ``{"rounds": [{"round", "seconds", "client_starts", "rails"}], "client_retries"}``.
    """
    rounds = {}
    for entries in (logs or {}).values():
        for e in entries or []:
            r = rounds.setdefault(int(e["round"]), {"round": int(e["round"]), "seconds": 0.0,
                                                    "client_starts": 0, "rails": 0})
            r["seconds"] = max(r["seconds"], float(e.get("seconds") or 0))
            if e.get("role") == "client":
                results = e.get("results") or []
                r["rails"] += len(results)
                r["client_starts"] += sum(int(x.get("attempts") or 0) for x in results)
    out = [rounds[k] for k in sorted(rounds)]
    return {"rounds": out, "client_retries": sum(max(0, r["client_starts"] - r["rails"]) for r in out)}


_PASSED = {"ok": True, "code": None, "blame": None}


def _evaluate(t, threshold):
    """``ok``, ``code`` and ``blame`` of one test."""
    if t.get("client_error") or t.get("server_error") or t.get("gbps") is None:
        code, blame = _test_error_code(t)
        return {"ok": False, "code": code, "blame": blame}
    if float(t["gbps"]) < threshold:
        return {"ok": False, "code": "RDMA_BW_LOW", "blame": None}
    return _PASSED


def evaluate_tests(tests, threshold):
    """Mark each test ok / failing; returns copies of the tests with ``ok``, ``code``, ``blame``."""
    return [{**t, **_evaluate(t, threshold)} for t in tests]


def _end_counts(tests):
    """How many of ``tests`` each (node, device) endpoint took part in, either side (C-level passes)."""
    counts = Counter(map(tuple, map(itemgetter("server"), tests)))
    counts.update(map(tuple, map(itemgetter("client"), tests)))
    return counts


DIRECTIONS = {"send": "client", "receive": "server"}


def _elements(t, leaf_of, sound=None):
    """What lies on the path of one test (the client writes into the server): the client's send
    side, the server's receive side and, when the two ends hang off different leaves, the
    uplinks of both leaves. ``sound``: the (direction, endpoint) sides that passed a test: a
    failing test blames an uplink only when both its ends passed that way elsewhere (a rail
    that never sends right explains its own cross-leaf failures)."""
    c, sv = tuple(t["client"]), tuple(t["server"])
    out = [("send", c), ("receive", sv)]
    lc, ls = leaf_of.get(c), leaf_of.get(sv)
    if lc is not None and ls is not None and lc != ls and (
            sound is None or (("send", c) in sound and ("receive", sv) in sound)):
        out += [("uplink", lc), ("uplink", ls)]
    return out


def localise(tests, hints=(), leaf_of=None):
    """Which elements explain the failing tests (greedy set cover, then redundant ones dropped).

    ``tests``: evaluated tests with ``server``/``client`` = [node, device]; the client writes
    into the server. The elements of a test are the client's *send* side, the server's
    *receive* side and, across leaves (``leaf_of``: {(node, device): leaf}), each leaf's
    uplinks. An endpoint that a test's error names (``blame``: port down, device missing)
    explains it alone, both directions. Otherwise the element covering the most failing
    tests wins; ties go to the larger failing share, then to endpoints named by ``hints``
    (port-check findings). An element whose tests the others chosen all explain is dropped
    (a leaf's uplinks chosen first for the cross-leaf failures of two bad rails under it).
    One failing test whose elements are equally likely is ``inconclusive``.

    Returns ``(suspects, inconclusive)``: suspects = [{"endpoint" (or None), "uplink" (a leaf, or
    None), "direction": send | receive | both | None, "tests", "fails", "total", "passed",
    "codes"}], ``fails``/``total`` the element's failing / all tests (its failure rate).
    """
    leaf_of = {tuple(k): v for k, v in (leaf_of or {}).items()}
    failing = [t for t in tests if not t["ok"]]
    total, fails = Counter(), Counter()
    for t in tests:
        for e in _elements(t, leaf_of):
            total[e] += 1
            if not t["ok"]:
                fails[e] += 1
    sound = {e for e in total if e[0] != "uplink" and fails[e] < total[e]}
    hints = {tuple(h) for h in hints}
    explained, chosen, blamed = set(), {}, {}
    for i, t in enumerate(failing):
        if t.get("blame"):
            blamed.setdefault(tuple(t[t["blame"]]), set()).add(i)
            explained.add(i)
    inconclusive = []
    while len(explained) < len(failing):
        cover = {}
        for i, t in enumerate(failing):
            if i not in explained:
                for e in _elements(t, leaf_of, sound):
                    cover.setdefault(e, set()).add(i)

        for e in [e for e in cover if e[0] == "uplink"]:
            # one endpoint in every failing test an uplink would explain: that endpoint explains them
            common = set.intersection(*({tuple(failing[i]["server"]), tuple(failing[i]["client"])} for i in cover[e]))
            if common:
                del cover[e]
        suspected = {e[1] for e in chosen if e[0] != "uplink"}

        def rank(e):
            # one bad port explains its failures both ways before a second one is assumed
            return (len(cover[e]), e[0] != "uplink" and e[1] in suspected, fails[e] / total[e],
                    e[0] != "uplink" and e[1] in hints)
        best = max(cover, key=rank)
        ties = [e for e in cover if rank(e) == rank(best)]
        if len(ties) > 1 and len(cover[best]) == 1:
            # one failing test, its elements equally likely: name the pair, not a guess
            i = next(iter(cover[best]))
            inconclusive.append(failing[i])
            explained.add(i)
            continue
        if best[0] == "uplink":
            # two leaves whose uplinks carry exactly the same failing tests (two leaf groups): the path
            # between them is the element, not one leaf's uplinks
            same = tuple(sorted(e[1] for e in ties if e[0] == "uplink" and cover[e] == cover[best]))
            if len(same) > 1:
                fails[("uplink", same)], total[("uplink", same)] = fails[best], total[best]
                best = ("uplink", same)
        chosen.setdefault(best, set()).update(cover[best] if best in cover else cover[("uplink", best[1][0])])
        explained |= chosen[best]
    # a test every other chosen element explains needs no element of its own

    def on_path(e, t):
        els = _elements(t, leaf_of, sound)
        return all(("uplink", leaf) in els for leaf in e[1]) if e[0] == "uplink" and isinstance(e[1], tuple) \
            else e in els
    full = {e: {i for i, t in enumerate(failing) if on_path(e, t)} for e in chosen}
    for e in list(chosen):
        others = set().union(*(full[o] for o in chosen if o != e)) if len(chosen) > 1 else set()
        if chosen[e] <= others:
            del chosen[e]
            for o in chosen:
                chosen[o] |= full[o] & full[e]
    # an uplink whose every failing test has a chosen rail at one end: those rails explain them, the
    # other way round where needed (a flaky rail's cross-leaf failures, not a leaf's uplinks)
    eps = {e[1] for e in chosen if e[0] != "uplink"}
    for e in [e for e in chosen if e[0] == "uplink"]:
        owners = {}
        for i in chosen[e]:
            c, sv = tuple(failing[i]["client"]), tuple(failing[i]["server"])
            if c not in eps and sv not in eps:
                break
            owners.setdefault(("send", c) if c in eps else ("receive", sv), set()).add(i)
        else:
            del chosen[e]
            for o, idx in owners.items():
                chosen.setdefault(o, set()).update(idx)
    out = []
    per_ep = {}
    for (kind, what), idx in chosen.items():
        if kind == "uplink":
            out.append({"endpoint": None, "uplink": what, "direction": None, "idx": idx,
                        "fails": fails[(kind, what)], "total": total[(kind, what)]})
        else:
            per_ep.setdefault(what, {})[kind] = idx
    for ep, dirs in per_ep.items():
        keys = [("send", ep), ("receive", ep)]
        direction = "both" if len(dirs) == 2 else next(iter(dirs))
        used = [k for k in keys if k[0] in dirs]
        out.append({"endpoint": list(ep), "uplink": None, "direction": direction,
                    "idx": set().union(*dirs.values()) | blamed.pop(ep, set()),
                    "fails": sum(fails[k] for k in used), "total": sum(total[k] for k in used)})
    for ep, idx in blamed.items():
        n = total[("send", ep)] + total[("receive", ep)]
        out.append({"endpoint": list(ep), "uplink": None, "direction": "both", "idx": idx,
                    "fails": fails[("send", ep)] + fails[("receive", ep)], "total": n})
    result = []
    for s in sorted(out, key=lambda x: (x["endpoint"] is None, x["endpoint"] or [], str(x["uplink"]))):
        idx = s.pop("idx")
        s["tests"] = [failing[i] for i in sorted(idx)]
        s["passed"] = s["total"] - s["fails"]
        s["codes"] = sorted({failing[i]["code"] for i in idx})
        result.append(s)
    return result, inconclusive


def _bw_layer(tests, speed):
    """Why bandwidth is low: a lower trained speed looks like k x line rate, drops like a fraction."""
    rates = [t["gbps"] for t in tests if t.get("gbps")]
    if not rates:
        return "link", None
    r = max(rates) / float(speed)
    for fraction in (0.5, 0.25, 0.125, 0.0625):
        if abs(r - fraction * 0.96) < 0.06:
            return "link", f"about {fraction:g} x line rate: the link likely trained at {speed * fraction:g} Gb/s"
    return "pfc", "a fraction of line rate with the link at full speed: drops and retransmissions (PFC/ECN)"


_CODE_ORDER = ("PORT_DOWN", "PORT_MISSING", "RDMA_QP_FAILED", "RDMA_TRANSPORT_RETRY", "RDMA_CONNECT_FAILED",
               "RDMA_BW_LOW", "RDMA_TEST_ERROR")


def leaves_of(cabling):
    """{(node, device): leaf switch} from ``cabling_index`` (endpoints without a switch left out)."""
    return {k: p["switch"] for k, p in (cabling or {}).items() if p.get("switch")}


def _evidence(tests):
    return [{"server": t["server"], "client": t["client"], "gbps": t.get("gbps"),
             "error": t.get("client_error") or t.get("server_error")} for t in tests]


def rdma_findings(tests, fabric, cabling, hints=(), uplinks=None):
    """Findings from ib_write_bw tests: the bad element and its direction, not only the pair.

    Every failing test ends in an error: a rail named with its ``direction`` (send: it fails
    as client, writing; receive: as server, written into; both) and ``failure_rate`` (its
    failing / all tests that way; below 1 it is ``RDMA_INTERMITTENT``), a leaf's uplinks
    (``UPLINK_DEGRADED``: cross-leaf tests through it fail, its rails' same-leaf tests pass;
    ``uplinks``: {leaf: switch_uplinks} names the ports), or ``RDMA_INCONCLUSIVE`` naming
    both ends where one test cannot be pinned on either.
    """
    threshold = rdma_threshold_gbps(fabric)
    evaluated = evaluate_tests(tests, threshold)
    suspects, inconclusive = localise(evaluated, hints, leaves_of(cabling))
    out = []
    for s in suspects:
        rate = round(s["fails"] / s["total"], 3) if s["total"] else 1.0
        share = f"{s['fails']} of {s['total']}"
        if s["uplink"] is not None:
            leaves = list(s["uplink"]) if isinstance(s["uplink"], (tuple, list)) else [s["uplink"]]
            ups = [dict(u, leaf=leaf) for leaf in leaves for u in (uplinks or {}).get(leaf) or []]
            ports = ", ".join(f"{u['leaf']} {u.get('port')} -> {u.get('peer')} {u.get('peer_port')}" for u in ups)
            peers = sorted({t[side][0] for t in s["tests"] for side in ("server", "client")})
            where = leaves[0] if len(leaves) == 1 else f"the path between {' and '.join(leaves)}"
            msg = (f"{where} uplinks{' (' + ports + ')' if ports else ''}: {share} cross-leaf tests through it "
                   f"failed while the same rails pass elsewhere; nodes {', '.join(peers[:6])}"
                   f"{' ...' if len(peers) > 6 else ''}"
                   + ("; two leaf groups only: which end's uplink is bad needs a third group or the switch counters"
                      if len(leaves) > 1 else "")
                   + ("; with ECMP over several uplinks the bad one is among them: read their switch counters"
                      if len(ups) > 1 else ""))
            out.append(finding("UPLINK_DEGRADED", msg, switch=leaves[0],
                               switch_port=ups[0].get("port") if len(ups) == 1 else None, leaves=leaves,
                               uplinks=ups, failure_rate=rate, fails=s["fails"],
                               total=s["total"], check="ib_write_bw", evidence=_evidence(s["tests"][:20])))
            continue
        node, device = s["endpoint"]
        where = _where(cabling, node, device)
        code = s["codes"][0] if len(s["codes"]) == 1 else next(c for c in _CODE_ORDER if c in s["codes"])
        intermittent = code in ("RDMA_BW_LOW", "RDMA_TEST_ERROR", "RDMA_TRANSPORT_RETRY") and s["fails"] < s["total"]
        peers = [f"{t['client' if list(t['server']) == [node, device] else 'server'][0]}" for t in s["tests"]]
        layer, hint = None, None
        if code == "RDMA_BW_LOW":
            layer, hint = _bw_layer(s["tests"], derived(fabric)["line_rate_gbps"])
        rates = ", ".join(f"{t['gbps']:.1f}" for t in s["tests"] if t.get("gbps") is not None)
        first_err = None
        for t in s["tests"]:
            for e in (t.get("server_error"), t.get("client_error")):
                if e and classify_rdma_error(e) == code:
                    first_err = first_err or e
        first_err = first_err or next((t.get("client_error") or t.get("server_error") for t in s["tests"]
                                       if t.get("client_error") or t.get("server_error")), None)
        way = {"send": "as client (sending)", "receive": "as server (receiving)",
               "both": "in both directions"}[s["direction"]]
        msg = (f"{node} {device} (switch {where['switch']} port {where['switch_port']}): {s['direction']} side bad - "
               f"failed {share} tests {way} against {', '.join(sorted(set(peers)))}")
        if intermittent:
            msg += f"; intermittent, failure rate {rate:.0%}"
        if code == "RDMA_BW_LOW":
            msg += f"; {rates} Gb/s < {threshold:g} Gb/s"
        elif first_err:
            msg += f"; {first_err.strip().splitlines()[0]}"
        if hint:
            msg += f" ({hint})"
        out.append(finding("RDMA_INTERMITTENT" if intermittent else code, msg, layer=layer, check="ib_write_bw",
                           direction=s["direction"], failure_rate=rate, fails=s["fails"], total=s["total"],
                           cause=code, evidence=_evidence(s["tests"]), **where))
    for t in inconclusive:
        a, b = t["server"], t["client"]
        out.append(finding("RDMA_INCONCLUSIVE", f"{a[0]} {a[1]} <-> {b[0]} {b[1]} failed ({t['code']}): {b[0]} "
                           f"{b[1]} sending or {a[0]} {a[1]} receiving; re-test each end against known-good peers "
                           "(the sampled plan does; a two-node fabric has no third node)", check="ib_write_bw",
                           node=a[0], device=a[1], peer={"node": b[0], "device": b[1]},
                           switch=_where(cabling, *a)["switch"], switch_port=_where(cabling, *a)["switch_port"],
                           evidence=_evidence([t])))
    return out, evaluated


# ---------------------------------------------------------------- nccl

_HOST_LINE_RE = re.compile(r"^\s*(?P<host>[\w.-]+):\d+:\d+ \[\d+\]")


def split_log_by_host(text):
    """NCCL log lines grouped by the host that printed them (``host:pid:tid [dev]``).

    mpirun ``--tag-output`` output is untangled first (lines split by another
    rank's chunk are whole again, see ``nccl_log.untangle_tagged``).
    """
    out = {}
    for line in untangle_tagged(text).splitlines():
        m = _HOST_LINE_RE.match(line)
        if m:
            out.setdefault(m.group("host"), []).append(line)
    return {h: "\n".join(lines) for h, lines in out.items()}


def nccl_findings(run, fabric, hosts, expect_gdr=True):
    """Findings from one nccl-tests run.

    ``run``: {"test", "busbw" (GB/s at the largest size, or None), "error",
    "logs": {host: parsed NCCL log}, "hca": {host: NCCL_IB_HCA or None}}.
    ``hosts``: {node: rdma_ports}. Host names in logs are inventory names
    (the lab's and most clusters' hostnames); ``aliases`` in ``run`` maps
    others.
    """
    out = []
    test = run.get("test", "all_reduce_perf")
    check = f"nccl:{test}"
    aliases = run.get("aliases") or {}
    cabled = {n: len(p) for n, p in hosts.items()}
    nics_min = min(cabled.values()) if cabled else 0
    suspects = []
    for host, log in sorted((run.get("logs") or {}).items()):
        node = aliases.get(host, host)
        ports = hosts.get(node) or []
        transport = log.get("transport")
        if transport and transport != "IB":
            hca = (run.get("hca") or {}).get(node) or log.get("env", {}).get("NCCL_IB_HCA")
            names = {p["device"] for p in ports}
            listed = {h.split(":")[0].lstrip("^=") for h in (hca or "").split(",") if h}
            if hca and not (listed & names):
                layer, why = "hca_selection", f"NCCL_IB_HCA={hca} names no cabled device ({', '.join(sorted(names))})"
            elif log.get("env", {}).get("NCCL_IB_DISABLE") == "1":
                layer, why = "hca_selection", "NCCL_IB_DISABLE=1"
            else:
                layer, why = "interface_selection", "no usable IB device (ports down, driver, or interface selection)"
            out.append(finding("NCCL_NET_SOCKET", f"{node}: NCCL used NET/{transport}, not NET/IB: {why}",
                               node=node, layer=layer, check=check))
            suspects.append("NCCL_NET_SOCKET")
            continue
        if transport == "IB" and expect_gdr and log.get("gdr") is False:
            out.append(finding("NCCL_NO_GDR", f"{node}: GPU Direct RDMA disabled (no GDRDMA channels): "
                               "nvidia_peermem not loaded or NCCL_NET_GDR_LEVEL too strict", node=node, check=check))
            suspects.append("NCCL_NO_GDR")
        used = {d["device"] for d in log.get("ib_devices") or []}
        if transport == "IB" and ports and len(used) < len(ports):
            missing = [p for p in ports if p["device"] not in used]
            for p in missing:
                out.append(finding("NCCL_FEW_NICS", f"{node}: NCCL uses {len(used)} of {len(ports)} cabled NICs; "
                                   f"{p['device']} carries no traffic", node=node, device=p["device"],
                                   switch=p.get("switch"), switch_port=p.get("switch_port"), check=check))
            suspects.append("NCCL_FEW_NICS")
        err = log.get("error")
        if err:
            code = ("NCCL_QP_FAILED" if re.search(r"ibv_modify_qp|GID", err) else
                    "NCCL_TRANSPORT_RETRY" if re.search(r"status=12|error 12|retry", err) else "NCCL_FAILED")
            out.append(finding(code, f"{node}: {err}", node=node, check=check))
            suspects.append(code)
    if any(f["code"] in ("NCCL_QP_FAILED", "NCCL_TRANSPORT_RETRY") for f in out):
        # the other ranks only saw their peer go away: the specific failure explains them
        out = [f for f in out if f["code"] != "NCCL_FAILED"]
    if run.get("error") and not any(f["code"] in ("NCCL_QP_FAILED", "NCCL_TRANSPORT_RETRY", "NCCL_FAILED") for f in out):
        out.append(finding("NCCL_FAILED", f"{test}: {run['error']}", check=check))
    busbw = run.get("busbw")
    threshold = nccl_threshold_gbytes(fabric, nics_min)
    if not run.get("error") and (busbw is None or busbw < threshold):
        layer = ("hca_selection" if "NCCL_NET_SOCKET" in suspects else "peermem" if "NCCL_NO_GDR" in suspects
                 else "hca_selection" if "NCCL_FEW_NICS" in suspects else "pfc")
        got = "no result" if busbw is None else f"{busbw:.2f} GB/s"
        out.append(finding("NCCL_BUSBW_LOW", f"{test}: bus bandwidth {got} < {threshold:g} GB/s "
                           f"({derived(fabric)['nccl_busbw_min_gbytes_per_nic']:g} GB/s x {nics_min} NICs)", layer=layer, check=check,
                           actual=busbw, expected=threshold))
    return out


def _ib_endpoint(name):
    """'node1 mlx5_0' (a CA's NodeDescription as Linux sets it) -> (node1, mlx5_0)."""
    name = str(name or "")
    return tuple(name.split(" ", 1)) if " " in name else (name or None, None)


def ib_findings(result, switches):
    """The ib_fabric_check result (module ib_fabric_check) -> report findings.

    A switch-side finding names the switch and port and, where the peer is a
    CA, the node and device cabled there; a CA-side finding (partitions)
    names the node and device.
    """
    if result.get("failed"):
        return [finding("IB_CHECK_FAILED", f"InfiniBand check failed: {result.get('msg') or 'no result'}",
                        node=result.get("host"), check="subnet_manager")]
    out = []
    for f in result.get("findings") or []:
        code = f["code"] if f["code"] in FAULT_CODES else "IB_CHECK_FAILED"
        node = device = switch = port = None
        if f.get("node") in switches:
            switch, port = f["node"], f.get("port")
            peer = f.get("peer") or (f.get("peers") or [None])[0]
            if peer and peer not in switches:
                node, device = _ib_endpoint(peer)
        else:
            node, device = _ib_endpoint(f.get("node"))
            if f.get("switch"):
                switch, port = f["switch"], f.get("port")
        evidence = {k: v for k, v in f.items() if k not in ("code", "node", "port", "message")}
        # an inter-switch link's far end (IB_LINK_ERRORS names both ends)
        extra = ({"peer_switch": f["peer"], "peer_port": None if f.get("peer_port") is None else str(f["peer_port"])}
                 if f.get("peer_type") == "switch" and f.get("peer") else {})
        out.append(finding(code, f["message"], node=node, device=device, switch=switch, switch_port=port,
                           check=IB_CHECK_OF.get(code, "ib_topology"), evidence=evidence or None, **extra))
    return out


def ib_checks(result, findings):
    """Report checks subnet_manager / ib_topology / ib_partitions from the IB check."""
    sm = result.get("sminfo") or {}
    summ = result.get("summary") or {}
    by = {}
    for f in findings:
        by.setdefault(f["check"], []).append(f)
    details = {
        "subnet_manager": ("not checked" if result.get("failed") else
                           f"MASTER {sm.get('guid')} (lid {sm.get('lid')}) priority {sm.get('priority')}"
                           if sm.get("master") else "no MASTER SM"),
        "ib_topology": (f"{summ.get('switches', 0)} switches, {summ.get('cas', 0)} CAs, "
                        f"{summ.get('links', 0)} links" + (" as cabled" if not by.get("ib_topology") else "")
                        if summ else "not discovered"),
        "ib_partitions": f"{len(result.get('pkey_tables') or {})} ports' pkey tables read",
    }
    pe = result.get("port_errors_summary")
    if pe or result.get("port_errors_error"):
        details["ib_port_errors"] = (f"{pe.get('ports_checked')} ports of {pe.get('nodes_checked')} nodes read by "
                                     f"ibqueryerrors ({pe.get('window')})" if pe else "not read")
    checks = {}
    for name, detail in details.items():
        mine = by.get(name, [])
        errors = [x for x in mine if x["severity"] == "error"]
        if result.get("failed") and name != "subnet_manager":
            checks[name] = {"passed": False, "skipped": True, "detail": "not checked",
                            "cases": [{"name": name, "skipped": True, "message": "the subnet could not be checked"}]}
            continue
        checks[name] = {"passed": not errors, "detail": detail + ("; " + "; ".join(x["message"] for x in mine[:3])
                                                                  if mine else ""),
                        "cases": [{"name": name, "ok": not errors, "code": errors[0]["code"] if errors else None,
                                   "message": "; ".join(x["message"] for x in mine) or None, "findings": mine}]}
    return checks


def correlate(findings):
    """Refine suspect layers across checks (the port check knows what the benchmarks only see).

    A low-bandwidth or failing link on an endpoint that the port check flagged
    takes the port check's layer; NCCL findings name the endpoint when the
    port check found exactly one bad port on that node.
    """
    by_ep = {}
    for f in findings:
        if f.get("check") == "ports" and f.get("device"):
            by_ep.setdefault((f["node"], f["device"]), []).append(f)
    for f in findings:
        if f.get("check") != "ports" and f.get("device"):
            port = by_ep.get((f["node"], f["device"]))
            if port:
                f["layer"] = port[0]["layer"]
                f["related"] = [p["code"] for p in port]
        elif str(f.get("check", "")).startswith("nccl") and f.get("node") and not f.get("device"):
            # the NCCL log names the node; the port check may know the one port to blame
            same = [p[0] for (n, _device), p in by_ep.items() if n == f["node"] and p[0]["layer"] == f["layer"]]
            if len(same) == 1:
                f.update(device=same[0]["device"], switch=same[0]["switch"], switch_port=same[0]["switch_port"],
                         related=[same[0]["code"]])
        elif str(f.get("check", "")).startswith("nccl") and f["code"] == "NCCL_BUSBW_LOW":
            port_layers = sorted({p[0]["layer"] for p in by_ep.values()})
            if len(port_layers) == 1 and f["layer"] == "pfc":
                f["layer"] = port_layers[0]
    return findings


def summarize(findings):
    counts = {}
    for f in findings:
        counts[f["code"]] = counts.get(f["code"], 0) + 1
    errors = [f for f in findings if f["severity"] == "error"]
    return {"passed": not errors, "errors": len(errors), "warnings": len(findings) - len(errors), "codes": counts}


# ---------------------------------------------------------------- NCCL's configuration, read back

def _hca_list(value):
    """``=mlx5_0:1,mlx5_1`` -> ['mlx5_0:1', 'mlx5_1:1'] (NCCL's '=' exact-match prefix dropped, port 1 implied)."""
    v = str(value or "").strip()
    return [x if ":" in x else f"{x}:1" for x in (y.strip() for y in v.lstrip("^=").split(",")) if x]


def nccl_conf_findings(node, conf, expected, gid_by_device, fabric, sl=None):
    """Compare a node's NCCL configuration with what the intent and the facts say it must be.

    ``conf``: ``{"path", "settings"}`` (settings from parse_nccl_conf) or ``{"path", "error"}``;
    ``expected``: nccl_env_settings' ``settings`` for this node (the one derivation both
    role nccl_env and the benchmarks use); ``gid_by_device``: ``{device: discovered RoCE v2
    IPv4 GID index}``. The traffic class is checked against the intent's derived
    ToS (``derived()``, data_dscp << 2), not against nccl_env_settings' output, so a
    wrong NCCL derivation cannot hide;
    ``conf["invalid"]``: the parse error of a file NCCL would mis-read; ``sl``: the
    InfiniBand service level the benchmarks ran on (None: not checked).
    """
    path = (conf or {}).get("path") or "/etc/nccl.conf"
    if (conf or {}).get("invalid"):
        return [finding("NCCL_CONF_INVALID", f"{node}: {path}: {conf['invalid']}", node=node, check="nccl_conf")]
    if not conf or conf.get("error") or conf.get("settings") is None:
        return [finding("NCCL_CONF_MISSING", f"{node}: {path}: {(conf or {}).get('error') or 'not read'}",
                        node=node, check="nccl_conf")]
    got = conf["settings"]
    out = []
    transport = (fabric or {}).get("transport", "roce")
    if transport == "roce":
        dscp = ((fabric or {}).get("roce") or {}).get("data_dscp", intent.DEFAULTS["roce"]["data_dscp"])
        want_tc = derived(fabric)["tos"]
        tc = got.get("NCCL_IB_TC")
        if tc is None or not str(tc).isdigit() or int(tc) != want_tc:
            out.append(finding(
                "NCCL_TC_MISMATCH",
                f"{node}: {path} has " + ("no NCCL_IB_TC (NCCL's default class 0)" if tc is None else f"NCCL_IB_TC={tc}")
                + f"; the intent's data DSCP "
                f"{dscp} needs {want_tc} (DSCP << 2) - NCCL's traffic would ride another class than the "
                "no-drop one the benchmarks prove", node=node, check="nccl_conf",
                evidence={"path": path, "NCCL_IB_TC": tc, "expected": want_tc}))
        gid = got.get("NCCL_IB_GID_INDEX")
        for device, index in sorted((gid_by_device or {}).items()):
            if index is None:
                continue  # no RoCE v2 GID at all: GID_MISSING from the port check says so
            if gid is None or not str(gid).isdigit() or int(gid) != int(index):
                out.append(finding(
                    "NCCL_GID_INDEX_MISMATCH",
                    f"{node} {device}: {path} has NCCL_IB_GID_INDEX={'(unset)' if gid is None else gid}; the "
                    f"port's RoCE v2 IPv4 GID is at index {index}", node=node, device=device, check="nccl_conf",
                    evidence={"path": path, "NCCL_IB_GID_INDEX": gid, "discovered": index}))
    if transport == "infiniband" and sl is not None:
        used = got.get("NCCL_IB_SL", "0")  # NCCL's default service level is 0
        if str(used) != str(sl):
            out.append(finding("NCCL_SL_MISMATCH", f"{node}: {path} has NCCL_IB_SL={used}; the benchmarks ran on SL {sl}",
                               node=node, check="nccl_conf", evidence={"path": path, "NCCL_IB_SL": used, "expected": sl}))
    want_hca = _hca_list((expected or {}).get("NCCL_IB_HCA"))
    have_hca = _hca_list(got.get("NCCL_IB_HCA"))
    if want_hca and sorted(want_hca) != sorted(have_hca):
        missing = [h for h in want_hca if h not in have_hca]
        extra = [h for h in have_hca if h not in want_hca]
        out.append(finding(
            "NCCL_HCA_MISMATCH",
            f"{node}: {path} has NCCL_IB_HCA={got.get('NCCL_IB_HCA', '(unset)')}; the cabled active ports are "
            f"{','.join(want_hca)}" + (f" (missing {','.join(missing)})" if missing else "")
            + (f" (not cabled/active {','.join(extra)})" if extra else ""),
            node=node, device=(missing or extra or [""])[0].split(":")[0] or None, check="nccl_conf",
            evidence={"path": path, "NCCL_IB_HCA": got.get("NCCL_IB_HCA"), "expected": (expected or {}).get("NCCL_IB_HCA")}))
    return out


# ---------------------------------------------------------------- incast: lossless proof by counters

def _stats(text):
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers.counters import parse_ethtool_stats
    try:
        return parse_ethtool_stats(text)["stats"], None
    except ParseError as e:
        return None, str(e)


def counter_deltas(before, after):
    """{counter: after - before} of two ``ethtool -S`` listings, or (None, why)."""
    b, why = _stats(before)
    a, why_a = _stats(after)
    if b is None or a is None:
        return None, why or why_a
    return {k: a[k] - b.get(k, 0) for k in a}, None


def incast_threshold_gbps(fabric, k):
    """What each of k flows into one port must keep: its fair share x the ib_write_bw fraction."""
    return rdma_threshold_gbps(fabric) / max(1, int(k))


def incast_findings(phase, fabric, cabling):
    """Findings of the incast phase.

    ``phase``: {node: {"receiver", "senders", "results": [ib_write_bw results],
    "counters": {device: [ethtool -S before, after]}}}. Per rail (device), each
    sender's flow must keep its fair share, and on a lossless (RoCE) intent the
    senders must see PFC pauses on the no-drop priority only, the receiver no
    discards on it. Returns (findings, rails) - rails is the per-rail evidence
    (k, goodput, pause / discard deltas) for the report.
    """
    out, rails = [], []
    if not phase:
        return out, rails
    any_node = next(iter(phase.values()))
    receiver, senders = any_node.get("receiver"), list(any_node.get("senders") or [])
    k = len(senders)
    roce = (fabric or {}).get("transport", "roce") == "roce"
    prio = int(((fabric or {}).get("roce") or {}).get("no_drop_priority", 3))
    threshold = incast_threshold_gbps(fabric, k)
    devices = list(any_node.get("devices") or ((phase.get(receiver) or {}).get("counters") or {}))
    for device in devices:
        rail = {"device": device, "receiver": receiver, "senders": senders, "k": k, "threshold_gbps": threshold,
                "flows": {}, "pause": {}, "discards": {}, "missing": []}
        deltas = {}
        for node in [receiver] + senders:
            pair = ((phase.get(node) or {}).get("counters") or {}).get(device)
            if pair is None and not roce:
                continue  # InfiniBand: credit-based, no PFC; its counters (perfquery) are not read here yet
            pair = pair or ["", ""]
            d, why = counter_deltas(pair[0], pair[1])
            if d is None:
                out.append(finding("COUNTER_MISSING", f"{node} {device}: ethtool -S unreadable ({why}); "
                                   "PFC under incast cannot be proven on this port", check="incast",
                                   **_where(cabling, node, device)))
                continue
            deltas[node] = d
        for node, d in deltas.items():
            for name in (f"rx_prio{prio}_pause", f"tx_prio{prio}_pause", f"rx_prio{prio}_discards"):
                if name not in d:
                    rail["missing"].append(f"{node}:{name}")
                    out.append(finding("COUNTER_MISSING", f"{node} {device}: the driver does not expose {name}; "
                                       + ("PFC pauses" if "pause" in name else "drops")
                                       + f" on priority {prio} cannot be proven", check="incast",
                                       counter=name, **_where(cabling, node, device)))
            rail["pause"][node] = d.get(f"rx_prio{prio}_pause", 0) + d.get(f"tx_prio{prio}_pause", 0)
            rail["discards"][node] = d.get(f"rx_prio{prio}_discards", 0)
            wrong = {n: v for n, v in d.items() if v > 0 and re.fullmatch(r"(rx|tx)_prio[0-7]_pause", n)
                     and n[7] != str(prio)}
            if roce and wrong:
                out.append(finding("INCAST_PAUSE_WRONG_PRIORITY",
                                   f"{node} {device}: pause frames on "
                                   + ", ".join(f"{n} +{v}" for n, v in sorted(wrong.items()))
                                   + f"; only the no-drop priority {prio} may pause", check="incast",
                                   evidence={"deltas": wrong}, **_where(cabling, node, device)))
            if roce and rail["discards"][node] > 0:
                out.append(finding("INCAST_DROPS", f"{node} {device}: rx_prio{prio}_discards +{rail['discards'][node]} "
                                   f"on the no-drop priority under incast", check="incast",
                                   **_where(cabling, node, device)))
        bad = []
        for node in senders:
            res = next((r for r in (phase.get(node) or {}).get("results") or [] if r.get("device") == device), None)
            gbps = (res or {}).get("gbps")
            rail["flows"][node] = gbps
            if res is None or res.get("error") or gbps is None:
                out.append(finding("INCAST_FAILED", f"{node} {device} -> {receiver}: "
                                   + ((res or {}).get("error") or "no result"), check="incast",
                                   **_where(cabling, node, device)))
                continue
            if k >= 2 and gbps > 1.5 * derived(fabric)["line_rate_gbps"] / k:
                # far above its fair share: it never shared the receiver's port, so it proves nothing
                out.append(finding("INCAST_INCONCLUSIVE", f"{node} {device} -> {receiver}: {gbps:.1f} Gb/s, above "
                                   f"the fair share of {k} flows - it ran alone (the others had not started or had "
                                   "finished); its port's lossless class is not proven", check="incast",
                                   evidence={"k": k, "gbps": gbps}, **_where(cabling, node, device)))
                rail.setdefault("inconclusive", []).append(node)
                continue
            no_pause = roce and node in deltas and rail["pause"].get(node, 0) == 0
            if gbps < threshold or no_pause:
                bad.append((node, gbps, no_pause))
        # every flow into the receiver suffers: the receiver's port (or its switch port) is the suspect
        counted = [n for n in senders if n not in rail.get("inconclusive", [])]
        blame_receiver = len(bad) == len(counted) and len(counted) >= 2
        for node, gbps, no_pause in ([(receiver, None, None)] if blame_receiver else bad):
            where = _where(cabling, node, device)
            if blame_receiver:
                flows = ", ".join(f"{flow[0]} {flow[1]:.1f}" if flow[1] is not None else f"{flow[0]} -" for flow in bad)
                msg = (f"every incast flow into {receiver} {device} failed the lossless proof ({flows} Gb/s, "
                       f"fair share threshold {threshold:.1f}; pauses on priority {prio}: "
                       + ", ".join(f"{n} {rail['pause'].get(n, '-')}" for n in senders) + ")")
                code = "INCAST_NO_PAUSE" if all(x[2] for x in bad) else "INCAST_GOODPUT_LOW"
            elif gbps < threshold:
                code = "INCAST_GOODPUT_LOW"
                msg = (f"{node} {device} -> {receiver}: {gbps:.1f} Gb/s under incast of {k} (threshold "
                       f"{threshold:.1f} Gb/s); pauses on priority {prio}: {rail['pause'].get(node, '-')}")
            else:
                code = "INCAST_NO_PAUSE"
                msg = (f"{node} {device} -> {receiver}: no PFC pause on priority {prio} under incast of {k} "
                       "although the intent declares it lossless")
            out.append(finding(code, msg, check="incast", evidence={"k": k, "flows": rail["flows"],
                                                                    "pause": rail["pause"]}, **where))
        rails.append(rail)
    return out, rails


# ---------------------------------------------------------------- incast rotation: every port a receiver

def incast_groups(log):
    """The incast groups that ran, from the per-node incast records.

    ``log``: {node: [{"round", "role": receiver | sender, "receiver", "senders", "devices",
    "results", "counters", "hw"}]} (role task incast.yml, one record per round the node took part
    in). Returns [(round, receiver, {node: record})]: per round and receiver, the records of the
    receiver and its senders - the ``phase`` ``incast_findings`` judges."""
    groups = {}
    for node, records in (log or {}).items():
        for rec in records or []:
            if not isinstance(rec, dict) or rec.get("receiver") is None:
                continue
            groups.setdefault((int(rec.get("round") or 0), rec["receiver"]), {})[node] = rec
    return [(r, receiver, phase) for (r, receiver), phase in sorted(groups.items(), key=lambda x: (x[0][0], str(x[0][1])))]


def _uplink_scope(leaf_of):
    """Leaves whose uplinks carry same-rail traffic: the leaves of a rail (device) cabled to two or more
    leaves. A rail-optimised fabric with one leaf per rail has none (HCA i meets HCA i under its leaf)."""
    by_rail = {}
    for (_node, device), leaf in leaf_of.items():
        by_rail.setdefault(device, set()).add(leaf)
    return {leaf for leaves in by_rail.values() if len(leaves) > 1 for leaf in leaves}


def incast_rotation(log, fabric, cabling, nodes=None, uplinks=None):
    """Findings, per-rail evidence and coverage of the rotated incast phase.

    Each group (``incast_groups``) is judged like a single incast (``incast_findings``: pauses,
    drops, goodput; ``incastcheck.hw_findings``: ECN, CNPs, loss). Coverage
    (``{"ports": [proven, in_scope], "uplinks": [proven, in_scope], "receivers": [...],
    "rounds": n}``): a host port is proven when its node received an incast on that rail and the
    group has no error on that rail; a leaf's uplinks when a proven group on its rail had a
    sender under another leaf (the flow crossed both leaves' uplinks). In scope: every cabled
    port of ``nodes`` (default the nodes of the log), and the leaves of rails that span several
    leaves (``uplinks`` {leaf: switch_uplinks}: only leaves listed there)."""
    from ansible_collections.linerate.fabric.plugins.module_utils.checks import incast as incastcheck
    nodes = list(nodes) if nodes is not None else sorted(log or {})
    leaf_of = {k: v for k, v in leaves_of(cabling).items() if k[0] in set(nodes)}
    scope_ports = {k for k in cabling if k[0] in set(nodes)}
    scope_up = _uplink_scope(leaf_of)
    if uplinks:
        scope_up &= set(uplinks)
    out, rails, proven_ports, proven_up, rounds = [], [], set(), set(), set()
    for rnd, receiver, phase in incast_groups(log):
        f, group_rails = incast_findings(phase, fabric, cabling)
        f += incastcheck.hw_findings(phase, fabric, cabling, group_rails, finding, _where, f)
        for x in f:
            x.update(incast_round=rnd, receiver=receiver)   # which group saw it (the report's case)
        rounds.add(rnd)
        for rail in group_rails:
            rail["round"] = rnd
            device = rail["device"]
            bad = [x for x in f if x["severity"] == "error" and x.get("device") == device]
            rail["ok"] = not bad
            ran = [s for s, g in (rail.get("flows") or {}).items() if g is not None
                   and s not in (rail.get("inconclusive") or [])]
            if bad or len(ran) < 2:
                continue
            proven_ports.add((receiver, device))
            here = leaf_of.get((receiver, device))
            for s in ran:
                there = leaf_of.get((s, device))
                if here is not None and there is not None and here != there:
                    proven_up.update(x for x in (here, there) if x in scope_up)
        out += f
        rails += group_rails
    coverage = {"ports": [len(proven_ports & scope_ports), len(scope_ports)],
                "uplinks": [len(proven_up), len(scope_up)], "rounds": len(rounds),
                "receivers": sorted({r for _rnd, r, _p in incast_groups(log)}, key=str),
                "unproven_ports": sorted(f"{n} {d}" for n, d in scope_ports - proven_ports)[:50]}
    return out, rails, coverage
