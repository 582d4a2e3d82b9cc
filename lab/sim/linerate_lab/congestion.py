"""Incast physics: what k senders into one receiver port do to a RoCE fabric
(and to an InfiniBand one: credit-based, lossless, the flows share the line rate).

A single uncongested pair never fills a queue (rdma.path: line rate whatever
PFC is). When k >= 2 senders write to one receiver port at once, the egress
queue of the receiver's switch port fills at k x line rate and drains at 1 x:

- the class is lossless end to end (host PFC and switch PFC on the data
  priority): the switch pauses the senders on that priority (rx_prioN_pause
  rises on the senders, the switch's PFC TX counters rise), nothing is dropped,
  the flows share the receiver's line rate;
- it is not (PFC off at either end, or a switch port without lossless headroom on the
  priority: the switch simulators' buffer model): the queue tail-drops, the receiver sees out-of-sequence packets
  (out_of_sequence, packet_seq_err), the senders go back N and time out
  (local_ack_timeout_err), goodput falls well below the fair share;
- ECN on the switch (and DCQCN on the hosts): packets beyond the threshold are
  CE-marked (np_ecn_marked_roce_packets on the receiver), the receiver answers
  with CNPs (np_cnp_sent) that the senders handle (rp_cnp_handled).

Flows register under the shared lab state (``incast/<node>_<device>/``) for
their duration, so concurrent perftest clients see each other the way queues
on hardware do. Counters accumulate in the model (``nic["counters"]``) and are
served by ``ethtool -S`` and the RDMA hw_counters, in the mlx5 names.
"""

import glob
import os
import time

from linerate_lab import model

# go-back-N after tail drops: what a lossy class keeps of its fair share under incast
LOSSY_INCAST_FRACTION = 0.35
# frames of ~4 KiB per Gb/s-second, to turn a rate into packet counters
PKTS_PER_GBIT = 1e9 / 8 / 4096


def _dir(receiver_node, device):
    d = os.path.join(model.state_dir(), "incast", f"{receiver_node}_{device}")
    os.makedirs(d, exist_ok=True)
    return d


def register(receiver_node, device, sender, seconds):
    """Announce a flow into that port until ``seconds`` from now (a killed client's entry expires)."""
    path = os.path.join(_dir(receiver_node, device), f"{sender}.{os.getpid()}")
    with open(path, "w", encoding="utf-8") as f:
        f.write(str(time.time() + seconds + 5))
    return path


def overlap(receiver_node, device, seconds, step=0.25):
    """Run a flow of ``seconds`` and return the most flows that wrote into that receiver port at
    once meanwhile (this one included), sampled while it runs: the flows of one incast start
    within a fraction of a second of each other and each sees the others while they overlap.
    The flow takes its ``seconds`` (perftest's ``-D``), no start-up window on top."""
    k, end = senders(receiver_node, device), time.time() + seconds
    while time.time() < end:
        time.sleep(max(0.0, min(step, end - time.time())))
        k = max(k, senders(receiver_node, device))
    return k


def senders(receiver_node, device):
    """How many flows write into that receiver port now (this one included)."""
    now, live = time.time(), 0
    for path in glob.glob(os.path.join(_dir(receiver_node, device), "*")):
        try:
            with open(path, encoding="utf-8") as f:
                live += float(f.read().strip() or 0) > now
        except (OSError, ValueError):
            continue
    return max(1, live)


def unregister(path):
    try:
        os.unlink(path)
    except OSError:
        pass


# A PFC storm the switch's watchdog does not stop (lab fault pfc-storm on a port without the
# watchdog on the priority): the egress queue towards the storming NIC never drains, the switch's
# shared buffer for the priority fills, and the switch pauses its other ingress ports on it in turn
# (the storm spreads). The lab's model, kept simple: every flow on that priority with an end on that
# switch keeps this fraction of its rate while the storm lasts; with the watchdog on, the watchdog
# drops the stuck queue and the other flows are unaffected.
STORM_BACKPRESSURE_FRACTION = 0.2


def unguarded_storm(m, switch, prio):
    """ "<node> <device>" of a NIC cabled to ``switch`` that storms on ``prio`` while the switch
    port's PFC watchdog does not guard that priority (None: no such storm)."""
    ports = ((m.get("switches") or {}).get(switch) or {}).get("ports") or {}
    for name, node in sorted((m.get("nodes") or {}).items()):
        for nic in node.get("nics") or []:
            st = (nic.get("phy_faults") or {}).get("pfc_storm")
            if not st or nic.get("switch") != switch or int(st.get("prio", 3)) != int(prio):
                continue
            if int(prio) not in ((ports.get(str(nic.get("switch_port"))) or {}).get("pfcwd") or []):
                return f"{name} {nic.get('device')}"
    return None


def has_headroom(end):
    """Whether the switch port of ``end`` has lossless headroom on its priority (the switch
    simulators' buffer model publishes ``headroom`` per port; absent: not modelled, PFC decides).
    PFC without headroom is lossy: what is in flight when the pause goes out has nowhere to go,
    so the queue drops, and no pause protects the flow."""
    head = end.get("switch_headroom")
    return head is None or end["priority"] in head


def outcome(writer, reader, k, line_gbps, seconds):
    """Per-flow goodput and counter deltas of one of k flows into ``reader``'s port."""
    prio = writer["priority"]
    lossless = all(s["host_pfc"] and s["priority"] in s["switch_pfc"] and has_headroom(s) for s in (writer, reader))
    ecn = bool(reader.get("switch_ecn", True)) and reader.get("switch_up", True)
    share = line_gbps / k  # line_gbps: rdma.path's rate (an unguarded pause storm already counted there)
    d_w, d_r = {}, {}
    if k < 2:
        return line_gbps, d_w, d_r, {}
    if "InfiniBand" in (writer.get("link_layer"), reader.get("link_layer")):
        # InfiniBand is lossless by its link-level credit flow control, in
        # hardware and on every VL: a full queue withholds credits, nothing is
        # dropped and no PFC counter exists; the k flows share the line rate.
        return share, d_w, d_r, {}
    excess_pkts = int((k - 1) * share * seconds * PKTS_PER_GBIT)
    if lossless:
        gbps = share
        pauses = max(1, int(excess_pkts / 64))
        d_w[f"rx_prio{prio}_pause"] = pauses  # the switch pauses the sender
        d_w[f"rx_prio{prio}_pause_duration"] = int(seconds * 1e6 * (k - 1) / k)
        # a switch pauses out of the ports whose ingress backs up: towards the senders
        sw = {"sender": {"pfc_tx": {prio: pauses}}, "receiver": {}}
    else:
        gbps = share * LOSSY_INCAST_FRACTION
        drops = max(1, excess_pkts)
        d_r["out_of_sequence"] = drops
        d_r["packet_seq_err"] = max(1, drops // 8)
        d_w["local_ack_timeout_err"] = max(1, drops // 512)
        sw = {"sender": {}, "receiver": {"queue_drop": {prio: drops}}}  # the receiver's egress queue
    if ecn:
        marked = max(1, int(excess_pkts / 16))
        d_r["np_ecn_marked_roce_packets"] = marked
        d_r["np_cnp_sent"] = marked
        d_w["rp_cnp_handled"] = marked
        sw["receiver"]["ecn_marked"] = {prio: marked}
    pkts = int(gbps * seconds * PKTS_PER_GBIT)
    d_w[f"tx_prio{prio}_packets"] = pkts
    d_w[f"tx_prio{prio}_bytes"] = pkts * 4096
    d_r[f"rx_prio{prio}_packets"] = pkts
    d_r[f"rx_prio{prio}_bytes"] = pkts * 4096
    return gbps, d_w, d_r, sw


def account(writer, reader, d_w, d_r, sw):
    """Add the deltas to both NICs' counters and to both switch ports (one locked update);
    ``sw``: {"sender": {kind: {prio: n}}, "receiver": {...}}."""
    if not (d_w or d_r or any((sw or {}).values())):
        return
    with model.locked() as m:
        for end, delta in ((writer, d_w), (reader, d_r)):
            nic = model.nic(m, end["device"], end["node"])
            if nic is None:
                continue
            c = nic.setdefault("counters", {})
            for k, v in delta.items():
                c[k] = int(c.get(k, 0)) + int(v)
        for end, kinds in ((writer, (sw or {}).get("sender") or {}), (reader, (sw or {}).get("receiver") or {})):
            port = ((m.get("switches") or {}).get(end.get("switch") or "") or {}).get("ports", {}).get(str(end.get("switch_port")))
            if port is None:
                continue
            c = port.setdefault("counters", {})
            for kind, per_prio in kinds.items():
                bucket = c.setdefault(kind, {})
                for prio, v in per_prio.items():
                    bucket[str(prio)] = int(bucket.get(str(prio), 0)) + int(v)
