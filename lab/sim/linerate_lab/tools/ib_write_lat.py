"""Simulated perftest ib_write_lat / ib_send_lat (perftest 24.x output format).

Like the real tools (perftest src/write_lat.c, send_lat.c): run without a server
address it is the server and listens on TCP (default 18515, ``-p``) for one
client; with an address it is the client. Both sides exchange their QP
attributes over that connection, ping-pong, and **both** print the header
(``ctx_print_test_info``: no CQ moderation lines in a latency test, ``TX
depth`` on the client, ``RX depth`` on a send server, ``Max inline data``
220 for write / 236 for send, perftest_parameters.c ``force_dependecies`` and
``DEF_INLINE_WRITE`` / ``DEF_INLINE_SEND_RC_UC_XRC``), the address lines and
the table: ``RESULT_FMT_LAT`` / ``REPORT_FMT_LAT`` with ``-n`` iterations
(the default, 1000), ``RESULT_FMT_LAT_DUR`` / ``REPORT_FMT_LAT_DUR`` with
``-D`` (perftest src/perftest_parameters.h, commit 00b55b6660d0, lines 209,
211, 243, 248). Latency tests take 2-byte messages by default (DEF_SIZE_LAT)
and one QP: perftest's parser refuses ``-q``, ``-b`` and ``-N`` in a latency
test (the grammar gate, ``kind="lat"``).

The fabric model decides as for ib_write_bw (``linerate_lab.rdma``): a port
that is down, no RoCE v2 IPv4 GID at ``-x`` (QP does not reach RTR), the
traffic class from ``--tclass`` (or ``-T`` with ``-R``), ``-S``. The latency
itself comes from ``latency_usec`` (the model is in docs/lab-node-tools.md).
"""

import glob
import math
import os
import random
import sys
import time

from linerate_lab import congestion, rdma
from linerate_lab.tools import ib_write_bw as bw

TITLES = {"ib_write_lat": "RDMA_Write Latency Test", "ib_send_lat": "Send Latency Test"}
INLINE = {"ib_write_lat": 220, "ib_send_lat": 236}  # DEF_INLINE_WRITE, DEF_INLINE_SEND_RC_UC_XRC
DEF_SIZE_LAT = 2
DEF_ITERS = 1000
DEF_RX_SEND = 512
SWEEP_SIZES = [2**i for i in range(1, 24)]  # write_lat.c RUN_ALL: sizes 2^1 .. 2^23

# ---------------------------------------------------------------- the latency model
# One-way latency (perftest reports RTT/2 of a ping-pong) of a healthy path =
#   HOST_USEC (both NICs, PCIe and the verbs post/poll of one side, per transport)
#   + SWITCH_USEC per switch on the path (1 on one leaf, 3 leaf-spine-leaf between leaves)
#   + the message's wire time once per store-and-forward stage (the sending NIC and each switch)
# and what a degraded or congested path adds:
#   + RETRANSMIT_USEC x (1 - rate / healthy rate) when the data path loses packets (rx-degrade,
#     flaky, a degraded uplink, an unguarded pause storm: rdma.path's notes): that share of the
#     pings waits for a NAK and a retransmission;
#   + QUEUE_USEC for every other flow writing into the receiver's port meanwhile (its egress
#     queue holds their packets ahead of the ping).
HOST_USEC = {"Ethernet": 1.05, "InfiniBand": 0.90}
SWITCH_USEC = {"Ethernet": 0.45, "InfiniBand": 0.13}
RETRANSMIT_USEC = 6.0
QUEUE_USEC = 1.5
WIRE_OVERHEAD = {"Ethernet": rdma.ROCE_WIRE_OVERHEAD, "InfiniBand": 30}  # IB: LRH 8, BTH 12, ICRC 4, VCRC 2, start/end


def switch_hops(a, b):
    """Switches between two ports: one under a common leaf, leaf-spine-leaf across leaves."""
    if a.get("switch") and b.get("switch") and a["switch"] != b["switch"]:
        return 3
    return 1


def latency_usec(a, b, size, link, k_other=0):
    """The model's one-way latency (usec) of ``size``-byte messages a -> b over ``link`` (rdma.path's result)."""
    layer = "Ethernet" if a.get("link_layer") == "Ethernet" else "InfiniBand"
    hops = switch_hops(a, b)
    mtu = link.get("mtu") or 4096
    packets = max(1, math.ceil(size / mtu))
    wire_bytes = size + packets * WIRE_OVERHEAD[layer]
    speed = min(a["speed_gbps"], b["speed_gbps"]) or 1
    wire_usec = wire_bytes * 8 / (speed * 1e3)
    healthy = speed * rdma.HCA_EFFICIENCY * ((mtu / (mtu + rdma.ROCE_WIRE_OVERHEAD)) if layer == "Ethernet" else 1)
    rate = link["gbps"] / healthy if healthy else 1.0
    t = HOST_USEC[layer] + hops * SWITCH_USEC[layer] + (hops + 1) * wire_usec
    degraded = [n for n in link.get("notes") or [] if n != "lossy"]
    if degraded and rate < 0.99:
        t += RETRANSMIT_USEC * (1 - rate)
    return t + QUEUE_USEC * max(0, k_other), degraded


def figures(t, rng):
    """t_min .. 99.9% of a run around the model's ``t`` (a tight distribution, a longer tail)."""
    typical = t * (1 + rng.uniform(-0.01, 0.01))
    p999 = rng.uniform(1.8, 2.6)
    # the slowest sample is at least the 99.9th percentile (the ranges overlapped: t_max < 99.9 % once)
    return {
        "t_min": typical * 0.95,
        "t_max": typical * rng.uniform(max(2.5, p999 * 1.02), 4.0),
        "t_typical": typical,
        "t_avg": typical * (1 + rng.uniform(0.005, 0.02)),
        "t_stdev": typical * rng.uniform(0.02, 0.05),
        "p99": typical * rng.uniform(1.10, 1.20),
        "p999": typical * p999,
    }


def table(args, outcome):
    """The result table both sides print: the column line and one row per size."""
    if args.duration:
        lines = [" #bytes        #iterations       t_avg[usec]    tps average"]
        for row in outcome["rows"]:
            lines.append(f" {row['size']:<7d}       {row['iters']}            {row['t_avg']:<7.2f}        {row['tps']:<7.2f}")
        return lines
    lines = [
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
    ]
    for r in outcome["rows"]:
        lines.append(
            f" {r['size']:<7d} {r['iters']}          {r['t_min']:<7.2f}        {r['t_max']:<7.2f}      "
            f"{r['t_typical']:<7.2f}  \t       {r['t_avg']:<7.2f}     \t{r['t_stdev']:<7.2f}\t\t"
            f"{r['p99']:<7.2f} \t\t{r['p999']:<7.2f}"
        )
    return lines


def header(prog, args, me, mtu, server_side):
    out = bw.test_info(TITLES[prog], args, 1)
    if not server_side:
        out.append(" TX depth        : 1")
    if prog == "ib_send_lat" and server_side:
        out.append(f" RX depth        : {min(DEF_RX_SEND, args.iters) if not args.duration else DEF_RX_SEND}")
    out += bw.link_info(args, me, mtu)
    out.append(f" Max inline data : {INLINE[prog]}[B]")
    return out + bw.data_exchange_lines(args, me)


def flows_into(node, device):
    """Bandwidth flows writing into that port now (congestion.register's entries; a latency test
    registers none of its own: its 2-byte pings do not load the port)."""
    now, live = time.time(), 0
    for path in glob.glob(os.path.join(congestion._dir(node, device), "*")):
        try:
            with open(path, encoding="utf-8") as f:
                live += float(f.read().strip() or 0) > now
        except (OSError, ValueError):
            continue
    return live


def message_mtu(size, active):
    """The path MTU a message of ``size`` bytes needs: its packets are no larger than the message."""
    return next((m for m in rdma.IB_MTUS if m >= size), rdma.IB_MTUS[-1]) if size < active else active


def run_server(prog, args):
    me = bw.check_local(args)
    conn, f = bw.accept(bw.listen(args))
    rng = random.Random()
    try:
        peer = bw.recv(conn, f)
        bw.send(conn, me)
        printed = []
        mtu = bw.requested_mtu(args, me, printed)
        for line in printed + header(prog, args, me, mtu, True):
            print(line)
        if me.get("link_layer") == "Ethernet" and (me.get("gid") is None or me["gid"]["type"] != "v2" or not me["gid"]["ipv4"]):
            conn.close()
            raise bw.Fail(f"Failed to modify QP {0x128:#06x} to RTR", " Unable to Connect the HCA's through the link")
        for line in address_lines(prog, "local", me, rng) + address_lines(prog, "remote", peer, rng):
            print(line)
        outcome = bw.recv(conn, f)
    except (EOFError, ValueError, OSError):
        raise bw.Fail("Failed to exchange data between server and clients") from None
    if not outcome.get("ok"):
        raise bw.Fail("Failed to exchange data between server and clients")
    for line in [bw.DASHES] + table(args, outcome) + [bw.DASHES]:
        print(line)
    return 0


def address_lines(prog, side, port, rng):
    """ctx_print_pingpong_data: RKey/VAddr for RDMA verbs only (write: with them; send: without)."""
    return bw.address_lines(1, side, (port.get("gid") or {}).get("gid"), rng, 0x128, rkey=prog != "ib_send_lat")


def run_client(prog, args):
    me = bw.check_local(args)
    conn, f = bw.connect(args)
    rng = random.Random()
    printed = []
    mtu = bw.requested_mtu(args, me, printed)
    try:
        bw.send(conn, me)
        peer = bw.recv(conn, f)
    except (EOFError, ValueError, OSError):
        raise bw.Fail("Failed to exchange data between server and clients") from None
    for line in printed + header(prog, args, me, mtu, False):
        print(line)
    sizes = SWEEP_SIZES if args.all else [args.size]
    # a ping-pong: both directions carry the messages; the model's path is the client -> server one
    # and the server -> client one, the slower counts (each ping waits for its pong)
    links = [
        rdma.path(me, peer, message_mtu(max(sizes), mtu), salt=f"{me['node']}|{peer['node']}|{args.port}"),
        rdma.path(peer, me, message_mtu(max(sizes), mtu), salt=f"{peer['node']}|{me['node']}|{args.port}"),
    ]
    gid_fail = next((lk for lk in links if lk["error"] == "gid"), None)
    if gid_fail is not None and gid_fail["side"] is me or (me.get("gid") is None and me["link_layer"] == "Ethernet"):
        bw.send(conn, {"ok": False})
        raise bw.Fail(f"Failed to modify QP {0x128:#06x} to RTR", " Unable to Connect the HCA's through the link")
    if gid_fail is not None:
        raise bw.Fail(" Failed to exchange data between server and clients")
    for line in address_lines(prog, "local", me, rng) + address_lines(prog, "remote", peer, rng):
        print(line)
    bad = next((lk for lk in links if lk["error"]), None)
    if bad is not None and bad["error"] == "mtu_drop":
        print(bw.DASHES)
        print(table(args, {"rows": []})[0], flush=True)
        time.sleep(1.0)  # the transport retries, then gives up
        bw.send(conn, {"ok": False})
        raise bw.Fail(
            "Completion with error at client", "Failed status 12: wr_id 0 syndrom 0x81", " Failed to complete run_iter_lat_write function successfully"
        )
    if bad is not None:
        bw.send(conn, {"ok": False})
        raise bw.Fail(" Failed to exchange data between server and clients")
    # flows writing into either end's port meanwhile queue ahead of the pings (congestion.py)
    k_other = max(flows_into(peer["node"], peer["device"]), flows_into(me["node"], me["device"]))
    rows = []
    for size in sizes:
        t = max(latency_usec(me, peer, size, links[0], k_other)[0], latency_usec(peer, me, size, links[1], k_other)[0])
        fig = figures(t, rng)
        if args.duration:
            iters = int(args.duration * 1e6 / (2 * fig["t_avg"]))
            rows.append({"size": size, "iters": iters, "t_avg": fig["t_avg"], "tps": iters / args.duration})
        else:
            rows.append(dict(fig, size=size, iters=args.iters))
    seconds = args.duration if args.duration else min(3.0, sum(2 * r["t_avg"] * r["iters"] for r in rows) / 1e6)
    time.sleep(seconds)
    outcome = {"ok": True, "rows": rows}
    bw.send(conn, outcome)
    for line in [bw.DASHES] + table(args, outcome) + [bw.DASHES]:
        print(line)
    conn.close()
    return 0


def main(argv=None, prog="ib_write_lat", perftest=bw.PERFTEST_VERSION):
    # perftest_parameters.c: DEF_SIZE_LAT, DEF_ITERS
    args, status = bw.parse_args(prog, argv, perftest, "lat", size=DEF_SIZE_LAT, iters=DEF_ITERS)
    if args is None:
        return status
    return bw.run_test(prog, args, run_client, run_server)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
