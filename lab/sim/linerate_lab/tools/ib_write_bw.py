"""Simulated perftest ib_write_bw / ib_read_bw (perftest 24.x output format).

Like the real tool: run without a server address it is the server and
listens on TCP (default 18515, ``-p``) for one client; with an address it is
the client and connects to the server (out-of-band exchange of QP
attributes and GIDs), runs for ``-D`` seconds or ``-n`` iterations and both
sides print the header, the address lines and the result table in the real
format. Bandwidth, MTU and failures come from the simulated data path
(``linerate_lab.rdma``): the slower end's trained speed, the RDMA MTU, PFC on
the priority the traffic maps to, frames that exceed an MTU on the path
(transport retry exceeded), a GID index that is not a RoCE v2 IPv4 GID
(QP will not reach RTR), a port that is not active.
"""

import argparse
import json
import random
import socket
import sys
import time

from linerate_lab import congestion, grammar, rdma

DASHES = "-" * 87
# the perftest release whose grammar applies when the launcher names none (lab/packages.py passes the package's)
PERFTEST_VERSION = "24.10.0-0.65"
DEFAULT_PORT = 18515
SWEEP_SIZES = [2**i for i in range(1, 24)]
PORT_STATES = {"port_down": "Down"}
# ctx_print_test_info's title per test (perftest_parameters.c: "<verb> BW Test"); ib_send_bw runs this
# engine too (tools/ib_send_bw.py): its data flows client -> server like a write
TITLES = {"ib_write_bw": "RDMA_Write BW Test", "ib_read_bw": "RDMA_Read BW Test", "ib_send_bw": "Send BW Test"}


class Fail(Exception):
    """A perftest failure: the lines it prints to stderr."""

    def __init__(self, *lines):
        super().__init__(lines[0] if lines else "")
        self.lines = lines


def build_parser(prog):
    ap = argparse.ArgumentParser(prog=prog, add_help=False, allow_abbrev=False)
    ap.add_argument("-d", "--ib-dev", dest="ib_dev")
    ap.add_argument("-i", "--ib-port", dest="ib_port", type=int, default=1)
    ap.add_argument("-p", "--port", dest="port", type=int, default=DEFAULT_PORT)
    ap.add_argument("-q", "--qp", dest="qps", type=int, default=1)
    ap.add_argument("-x", "--gid-index", dest="gid_index", type=int)
    ap.add_argument("-s", "--size", dest="size", type=int, default=65536)
    ap.add_argument("-a", "--all", dest="all", action="store_true")
    ap.add_argument("-D", "--duration", dest="duration", type=float)
    ap.add_argument("-n", "--iters", dest="iters", type=int, default=5000)
    ap.add_argument("-m", "--mtu", dest="mtu", type=int)
    ap.add_argument("-F", "--CPU-freq", dest="cpu_freq", action="store_true")
    ap.add_argument("-R", "--rdma_cm", dest="rdma_cm", action="store_true")
    ap.add_argument("-T", "--tos", dest="tos", type=int)
    ap.add_argument("--tclass", dest="tclass", type=int)
    ap.add_argument("-S", "--sl", dest="sl", type=int, default=0)
    ap.add_argument("-b", "--bidirectional", dest="bidir", action="store_true")
    ap.add_argument("--report_gbits", action="store_true")
    ap.add_argument("--use_cuda", nargs="?", const="0", default=None)
    ap.add_argument("--use_cuda_dmabuf", action="store_true")
    ap.add_argument("--out_json", action="store_true")
    ap.add_argument("--out_json_file")
    ap.add_argument("--source_ip")
    ap.add_argument("-h", "--help", action="store_true")
    ap.add_argument("server", nargs="?")
    return ap


def err(*lines):
    for line in lines:
        print(line, file=sys.stderr, flush=True)


def send(sock, obj):
    sock.sendall((json.dumps(obj) + "\n").encode())


def recv(sock, f):
    line = f.readline()
    if not line:
        raise EOFError
    return json.loads(line)


def test_info(title, args, qps):
    """The header's first lines, every perftest test's (ctx_print_test_info): the test, device, QPs, connection."""
    return [
        DASHES,
        f"                    {title}",
        f" Dual-port       : OFF\t\tDevice         : {args.ib_dev}",
        f" Number of qps   : {qps}\t\tTransport type : IB",
        " Connection type : RC\t\tUsing SRQ      : OFF",
        " PCIe relax order: ON\t\tLock-free      : OFF",
        " ibv_wr* API     : ON\t\tUsing DDP      : OFF",
    ]


def link_info(args, me, mtu):
    """The header's MTU and link type lines, and the GID index on RoCE (ctx_print_test_info)."""
    out = [f" Mtu             : {mtu}[B]", f" Link type       : {'Ethernet' if me['link_layer'] == 'Ethernet' else 'IB'}"]
    if me["link_layer"] == "Ethernet":
        out.append(f" GID index       : {args.gid_index if args.gid_index is not None else 0}")
    return out


def header(prog, args, me, mtu, server_side):
    out = test_info(TITLES[prog], args, args.qps)
    if not server_side:
        out.append(" TX depth        : 128")
    if prog == "ib_send_bw" and server_side:
        # ctx_print_test_info: has_recv_comp(SEND) on the server; DEF_RX_SEND (perftest_parameters.h)
        out.append(" RX depth        : 512")
    out += [" CQ Moderation   : 100", " CQE Poll Batch  : 16", *link_info(args, me, mtu)]
    if prog == "ib_read_bw":
        out.append(" Outstand reads  : 16")
    else:
        out.append(" Max inline data : 0[B]")
    return out + data_exchange_lines(args, me)


def data_exchange_lines(args, me):
    """The header's last lines, every perftest test's: how the QPs were connected, then the rule."""
    if args.rdma_cm:
        return [" rdma_cm QPs\t : ON", f" Data ex. method : rdma_cm \tTOS    : {me['tos']}", DASHES]
    return [" rdma_cm QPs\t : OFF", " Data ex. method : Ethernet", DASHES]


def address_lines(qps, side, gid, rng, base_qpn, rkey=True):
    """ctx_print_pingpong_data (perftest_communication.c): RKey and VAddr for RDMA verbs only (not send)."""
    lines = []
    shown = rdma.perftest_gid(gid) if gid else "00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00"
    for q in range(qps):
        lines.append(
            f" {side} address: LID 0000 QPN {base_qpn + q:#06x} PSN {rng.randrange(1 << 24):#08x}"
            + (f" RKey {rng.randrange(1 << 24):#08x} VAddr 0x{rng.randrange(1 << 47):016x}" if rkey else "")
        )
        lines.append(f" GID: {shown}")
    return lines


def bw_at(size, peak_gbps, qps):
    """Large messages reach the link's rate; small ones are message-rate bound."""
    msg_rate_cap = 3.55e6 * max(1, min(qps, 8))  # msgs/s the HCA posts
    return min(peak_gbps, size * 8 * msg_rate_cap / 1e9) * size / (size + 512)


def result_rows(args, gbps, duration_mode, rng):
    unit = "Gb/sec" if args.report_gbits else "MiB/sec"
    cols = f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]"
    sizes = SWEEP_SIZES if args.all else [args.size]
    rows = []
    for size in sizes:
        avg = bw_at(size, gbps, args.qps) * (1 - rng.uniform(0.0, 0.004))
        peak = 0.0 if duration_mode else avg * (1 + rng.uniform(0.0, 0.003))
        rate = avg * 1e9 / 8 / size / 1e6
        iters = int(rate * 1e6 * args.duration) if duration_mode else args.iters

        def fmt(v):
            return v if args.report_gbits else v * 1e9 / 8 / 1048576

        rows.append(f" {size:<10d} {iters:<10d}       {fmt(peak):.2f}               {fmt(avg):.2f}   \t\t     {rate:.6f}")
    return [cols] + rows + [DASHES]


def out_json(args, gbps, duration_mode):
    if not (args.out_json or args.out_json_file):
        return
    size = args.size
    doc = {
        "results": {
            "MsgSize": size,
            "n_iterations": args.iters if not duration_mode else None,
            "BW_peak": 0.0 if duration_mode else round(gbps, 2),
            "BW_average": round(gbps, 2),
            "MsgRate": round(gbps * 1e9 / 8 / size / 1e6, 6),
            "bw_unit": "Gbit/sec" if args.report_gbits else "MiB/sec",
        }
    }
    path = args.out_json_file or "perftest_out.json"
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)


def preamble(args):
    lines = []
    if args.duration:
        lines.append(" WARNING: BW peak won't be measured in this run.")
    if args.use_cuda is not None:
        lines.append("Perftest doesn't supports CUDA tests with inline messages: inline size set to 0")
    return lines


def cuda_lines(args):
    if args.use_cuda is None:
        return []
    dev = int(args.use_cuda or 0)
    lines = ["initializing CUDA", "Listing all CUDA devices in system:"]
    lines += [f"CUDA device {i}: PCIe address is {bus}:00" for i, bus in enumerate(("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"))]
    lines += [
        "",
        f"Picking device No. {dev}",
        f"[pid = {__import__('os').getpid()}, dev = {dev}] device name = [NVIDIA H100 80GB HBM3]",
        "creating CUDA Ctx",
        "making it the current CUDA Ctx",
        "CUDA device integrated: 0",
        f"cuMemAlloc() of a {2 * args.size * args.qps} bytes GPU buffer",
        "allocated GPU buffer address at 00007f3dfa600000 pointer=0x7f3dfa600000",
    ]
    if args.use_cuda_dmabuf:
        lines.append(f"using DMA-BUF for GPU buffer address at 0x7f3dfa600000 aligned at 0x7f3dfa600000 with aligned size {2 * args.size * args.qps}")
    return lines


def check_local(args):
    # Like real perftest: the traffic class is what its own argv says (--tclass on a
    # verbs QP; -T, or the node's RDMA-CM default ToS, only with -R); nothing -> class 0.
    tos = args.tos if args.rdma_cm else args.tclass
    me = rdma.local_port(args.ib_dev, args.ib_port, args.gid_index if args.gid_index is not None else 0, tos, rdma_cm=args.rdma_cm, sl=args.sl)
    if me.get("error") == "no_device":
        raise Fail(f"IB device {args.ib_dev} not found", " Unable to find the Infiniband/RoCE device")
    if me.get("error") == "port_down":
        raise Fail(f" Port number {args.ib_port} state is Down", " Couldn't set the link layer", " Couldn't get context for the device")
    if args.use_cuda is not None and "nvidia_peermem" not in rdma.node_modules() and not args.use_cuda_dmabuf:
        raise Fail("Couldn't allocate MR", " Unable to create the needed resources")
    return me


def requested_mtu(args, me, printed):
    want = args.mtu or me["active_mtu"]
    if want > me["active_mtu"]:
        printed += ["Requested mtu is higher than active mtu ", f"Changing to active mtu - {rdma.IB_MTUS.index(me['active_mtu']) + 1}"]
        want = me["active_mtu"]
    return want


def listen(args):
    """The server's TCP socket on ``-p`` (perftest's exchange of QP attributes), listening."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        srv.bind(("0.0.0.0", args.port))
        srv.listen(1)
    except OSError:
        raise Fail(f"Couldn't listen to port {args.port}", " Unable to open file descriptor for socket connection") from None
    return srv


def accept(srv):
    """The server's banner, then its one client: (connection, its reader)."""
    print("\n************************************\n* Waiting for client to connect... *\n************************************", flush=True)
    conn, _ = srv.accept()
    srv.close()
    return conn, conn.makefile("r")


def connect(args):
    """The client's TCP connection to the server's ``-p``: (connection, its reader)."""
    try:
        conn = socket.create_connection((args.server, args.port), timeout=5)
    except OSError:
        raise Fail(f"Couldn't connect to {args.server}:{args.port}", " Unable to init the socket connection") from None
    conn.settimeout(None)
    return conn, conn.makefile("r")


def run_server(prog, args):
    me = check_local(args)
    srv = listen(args)
    for line in preamble(args):
        print(line)
    conn, f = accept(srv)
    rng = random.Random()
    try:
        peer = recv(conn, f)
        send(conn, me)
        printed = []
        mtu = requested_mtu(args, me, printed)
        for line in printed + cuda_lines(args) + header(prog, args, me, mtu, True):
            print(line)
        if args.rdma_cm:
            print(" Waiting for client rdma_cm QP to connect\n Please run the same command with the IB/RoCE interface IP")
            print(DASHES)
        if me.get("link_layer") == "Ethernet" and (me.get("gid") is None or me["gid"]["type"] != "v2" or not me["gid"]["ipv4"]):
            # no RoCE v2 IPv4 GID at -x (rdma.path's rule): no route to the peer's IPv4-mapped GID
            conn.close()
            raise Fail(f"Failed to modify QP {0x128:#06x} to RTR", " Unable to Connect the HCA's through the link")
        for line in address_lines(args.qps, "local", (me.get("gid") or {}).get("gid"), rng, 0x128, rkey=prog != "ib_send_bw") + address_lines(
            args.qps, "remote", (peer.get("gid") or {}).get("gid"), rng, 0x128, rkey=prog != "ib_send_bw"
        ):
            print(line)
        print(DASHES, flush=True)
        outcome = recv(conn, f)
    except (EOFError, ValueError, OSError):
        raise Fail(" Failed to exchange data between server and clients") from None
    if not outcome.get("ok"):
        raise Fail(" Failed to exchange data between server and clients")
    args.size, args.all = outcome["size"], False  # the server prints only the last size
    for line in result_rows(args, outcome["gbps"], bool(args.duration), rng):
        print(line)
    out_json(args, outcome["gbps"], bool(args.duration))
    if args.use_cuda is not None:
        print("deallocating GPU buffer 00007f3dfa600000\ndestroying current CUDA Ctx")
    return 0


def run_client(prog, args):
    me = check_local(args)
    for line in preamble(args):
        print(line)
    conn, f = connect(args)
    rng = random.Random()
    printed = []
    mtu = requested_mtu(args, me, printed)
    try:
        send(conn, me)
        peer = recv(conn, f)
    except (EOFError, ValueError, OSError):
        raise Fail(" Failed to exchange data between server and clients") from None
    for line in printed + cuda_lines(args) + header(prog, args, me, mtu, False):
        print(line)
    # ib_read_bw: the server's HCA answers the reads, data flows server -> client (write, send: client -> server).
    writer, reader = (peer, me) if prog == "ib_read_bw" else (me, peer)
    link = rdma.path(writer, reader, mtu, salt=f"{writer['node']}|{reader['node']}|{args.port}", qps=args.qps)
    if link["error"] == "gid" and link["side"] is me or (me.get("gid") is None and me["link_layer"] == "Ethernet"):
        send(conn, {"ok": False})
        raise Fail(f"Failed to modify QP {0x128:#06x} to RTR", " Unable to Connect the HCA's through the link")
    if link["error"] == "gid":
        # the server could not bring its QP to RTR and closed the connection
        raise Fail(" Failed to exchange data between server and clients")
    for line in address_lines(args.qps, "local", me["gid"]["gid"] if me.get("gid") else None, rng, 0x128, rkey=prog != "ib_send_bw") + address_lines(
        args.qps, "remote", peer["gid"]["gid"] if peer.get("gid") else None, rng, 0x128, rkey=prog != "ib_send_bw"
    ):
        print(line)
    print(DASHES)
    unit = "Gb/sec" if args.report_gbits else "MiB/sec"
    if link["error"] == "mtu_drop":
        print(f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]", flush=True)
        time.sleep(min(2.0, args.duration or 2.0))  # retries until the transport gives up
        send(conn, {"ok": False})
        raise Fail(
            "Completion with error at client",
            "Failed status 12: wr_id 0 syndrom 0x81",
            "scnt=128, ccnt=0",
            " Failed to complete run_iter_bw function successfully",
        )
    if link["error"]:
        send(conn, {"ok": False})
        raise Fail(" Failed to exchange data between server and clients")
    seconds = args.duration if args.duration else min(3.0, args.iters * args.size * 8 / (link["gbps"] * 1e9))
    # other writers into the same receiver port at the same time make an incast (congestion.py)
    flow = congestion.register(reader["node"], reader["device"], writer["node"], seconds + 0.5)
    try:
        k = congestion.overlap(reader["node"], reader["device"], seconds)
        gbps, d_w, d_r, sw = congestion.outcome(writer, reader, k, link["gbps"], seconds)
        congestion.account(writer, reader, d_w, d_r, sw)
    finally:
        congestion.unregister(flow)
    link = dict(link, gbps=gbps)
    size = SWEEP_SIZES[-1] if args.all else args.size
    send(conn, {"ok": True, "gbps": link["gbps"], "size": size})
    for line in result_rows(args, link["gbps"], bool(args.duration), rng):
        print(line)
    out_json(args, bw_at(size, link["gbps"], args.qps), bool(args.duration))
    if args.use_cuda is not None:
        print("deallocating GPU buffer 00007f3dfa600000\ndestroying current CUDA Ctx")
    conn.close()
    return 0


def perftest_cuda():
    """Whether this node's perftest was built with CUDA (the fabric model's ``perftest_cuda``; default:
    the node has GPUs - the lab's OFED perftest is modelled as built where cuda.h was present)."""
    from linerate_lab import model

    node = model.node(model.load())
    return bool(node.get("perftest_cuda", node.get("gpus", 0) > 0))


def modelled_argv(opts, operands, longopts):
    """The options the gate accepted, spelled ``--<long name>[=value]`` for build_parser (which reads the
    ones this simulator models; the others are accepted and have no effect here)."""
    argv = []
    for key, value in grammar.canonical(opts, longopts):
        argv.append(key if value is None else (f"{key}={value}" if key.startswith("--") else f"{key}{value}"))
    return argv + operands


def parse_args(prog, argv, perftest, kind, **defaults):
    """A perftest command line (``kind`` bw or lat) as the tool reads it: (args, None), or (None, the exit
    status) where the grammar gate refused it (perftest's own lines) or ``-h`` printed the usage;
    ``defaults``: the test's own option defaults."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        opts, operands = grammar.perftest_parse(prog, argv, perftest, kind=kind)
    except grammar.PerftestRefused as e:
        err(*e.lines)
        return None, 1
    if any(k == "h" for k, _ in opts):
        print(f" Usage:\n  {prog}            start a server and wait for connection\n  {prog} <host>     connect to server at <host>")
        return None, 0
    ap = build_parser(prog)
    ap.set_defaults(**defaults)
    args, _unmodelled = ap.parse_known_args(modelled_argv(opts, operands, grammar.perftest_grammar(perftest)["long"]))
    return args, None


def run_test(prog, args, run_client, run_server):
    """-T refused without rdma_cm, the node's first device without -d, then the client (a server address
    given) or the server; a Fail is the tool's error lines and exit status 1."""
    if args.tos is not None and not args.rdma_cm:
        # perftest_parameters.c: -T is refused on a verbs (non rdma_cm) QP; --tclass is the way there
        print(" TOS only valid for rdma_cm based QP and RawEth QP ", flush=True)
        return 1
    if not args.ib_dev:
        from linerate_lab import model

        nics = model.node(model.load())["nics"]
        args.ib_dev = nics[0]["device"] if nics else None
        if not args.ib_dev:
            err(" Did not detect devices ", " If device exists, check if driver is up")
            return 1
    try:
        if args.server:
            return run_client(prog, args)
        return run_server(prog, args)
    except Fail as e:
        sys.stdout.flush()
        err(*e.lines)
        return 1


def main(argv=None, prog="ib_write_bw", perftest=PERFTEST_VERSION):
    args, status = parse_args(prog, argv, perftest, "bw")
    if args is None:
        return status
    if args.use_cuda is not None and not perftest_cuda():
        # perftest_parameters.c parser(): --use_cuda is in every build's option table, but a build
        # without cuda.h (HAVE_CUDA unset: cuda_memory_supported() false) refuses it - stdout, then
        # write_bw.c main()'s line on stderr, exit 1 (perftest 23.10: line 2764, 24.10: 2913, 26.04: 3615)
        print(" Unsupported memory type", flush=True)
        err(grammar.PERFTEST_PARSER_FAILED)
        return 1
    if args.use_cuda is not None:
        # the buffers live on that GPU: it is busy (its PCIe link trained up) while the test runs
        from linerate_lab import pcie

        with pcie.hold_gpus([int(args.use_cuda or 0)], prog):
            return run_test(prog, args, run_client, run_server)
    return run_test(prog, args, run_client, run_server)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
