"""Simulated nccl-tests (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf) with NCCL's
transport choice.

Run under Open MPI's mpirun like the real binaries: the rank and world size
come from ``OMPI_COMM_WORLD_*``. Like NCCL, the ranks bootstrap over TCP on
the interface ``NCCL_SOCKET_IFNAME`` selects (rank 0 listens, the others
connect; the root's address reaches them through the job's shared
directory, standing in for the ``ncclUniqueId`` nccl-tests broadcasts with
MPI_Bcast). NCCL settings come from ``/etc/nccl.conf`` overridden by the
environment, as in NCCL. Each rank decides its network as NCCL does:

- NET/IB when ``NCCL_IB_DISABLE`` is not 1 and at least one device that
  ``NCCL_IB_HCA`` selects exists with an ACTIVE port; else NET/Socket;
- GPU Direct RDMA when ``nvidia_peermem`` is loaded and the path between a
  GPU and the NIC it uses is no farther than the GDR level: ``NCCL_NET_GDR_LEVEL``
  when the job sets it, else NCCL's default PXB (src/graph/paths.cc
  ``ncclTopoCheckGdr``). The lab's NICs sit behind their rail GPU's PCIe
  switch (PIX, linerate_lab.pcie), so GDR is used unless the level is LOC;
- ``NCCL_IB_GID_INDEX`` must point at a RoCE v2 GID or the QPs do not
  connect (ibv_modify_qp fails);
- frames larger than an MTU on the path end in completion error 12.

Bus bandwidth comes from the simulated links of the ring between the nodes
(``linerate_lab.rdma.path``): the slowest rail bounds every channel. Rank 0
prints the nccl-tests table; every rank prints its ``NCCL_DEBUG=INFO`` lines.

One process per node driving every GPU (``-g 8``) or one process per GPU (``-g 1``,
the GPU from ``CUDA_VISIBLE_DEVICES``) as the real binary runs: every process is a
rank, ranks are grouped into nodes by host name, rank 0 lists every rank's host, pid
and GPU bus. On one node with ``NCCL_P2P_DISABLE=1`` and ``NCCL_SHM_DISABLE=1`` (the
NET loopback test) every hop of the ring leaves through a NIC: each rank's traffic
rides its GPU's nearest rail, so the bus bandwidth is the slowest rail's rate over
the ranks that share it.
"""

import argparse
import itertools
import json
import os
import random
import socket
import sys
import time

from linerate_lab import grammar, model, nccl_tuning, pcie
from linerate_lab.tools.nccl_net import decide, local_info, nccl_settings, rank_rails, read_text

NCCL_VERSION = "2.21.5+cuda12.4"
NCCL_VERSION_CODE = 22105
# the nccl-tests release when the launcher names none (lab/packages.py passes the package's version):
# it picks the option table (linerate_lab/grammar/nccl_tests.json) and whether the header names the version
NCCL_TESTS_VERSION = "2.13.11"
GPU_NAME = "NVIDIA H100 80GB HBM3"
GPU_BUSES = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")
SIZE_RAMP = 48 * 2**20  # bytes where a multi-node ring reaches half its peak
BOOT_TIMEOUT = 30.0


def parse_size(text):
    text = str(text).strip()
    mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:].upper())
    return int(float(text[:-1]) * mult) if mult else int(text)


def build_parser(prog):
    ap = argparse.ArgumentParser(prog=prog, add_help=False, allow_abbrev=False)
    ap.add_argument("-t", "--nthreads", type=int, default=1)
    ap.add_argument("-g", "--ngpus", type=int, default=1)
    ap.add_argument("-b", "--minbytes", default="32M")
    ap.add_argument("-e", "--maxbytes", default="32M")
    ap.add_argument("-i", "--stepbytes", default=None)
    ap.add_argument("-f", "--stepfactor", type=int, default=None)
    ap.add_argument("-n", "--iters", type=int, default=20)
    ap.add_argument("-m", "--agg_iters", type=int, default=1)
    ap.add_argument("-w", "--warmup_iters", type=int, default=5)
    ap.add_argument("-c", "--check", type=int, default=1)
    ap.add_argument("-o", "--op", default="sum")
    ap.add_argument("-d", "--datatype", default="float")
    ap.add_argument("-z", "--blocking", type=int, default=0)
    ap.add_argument("-G", "--cudagraph", type=int, default=0)
    ap.add_argument("-N", "--run_cycles", type=int, default=1)
    ap.add_argument("-J", "--output_file", default=None)
    ap.add_argument("-h", "--help", action="store_true")
    return ap


# ------------------------------------------------------------ bootstrap


def job_dir():
    jobid = os.environ.get("OMPI_MCA_ess_base_jobid") or os.environ.get("PMIX_NAMESPACE") or os.environ.get("OMPI_MCA_orte_ess_jobid") or "single"
    d = os.path.join(model.state_dir(), "nccl", jobid.replace("/", "_"))
    os.makedirs(d, exist_ok=True)
    return d


def recv_line(f):
    line = f.readline()
    if not line:
        raise EOFError
    return json.loads(line)


def bootstrap(info, rank, size):
    """Gather every rank's info at rank 0 over TCP and hand back rank 0's verdict."""
    if size == 1:
        return decide([info])
    d = job_dir()
    root_file = os.path.join(d, "root")
    deadline = time.monotonic() + BOOT_TIMEOUT
    if rank == 0:
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.bind((info["ip"], 0))
        srv.listen(size)
        srv.settimeout(BOOT_TIMEOUT)
        with open(root_file + ".tmp", "w") as f:
            f.write(f"{info['ip']}:{srv.getsockname()[1]}")
        os.replace(root_file + ".tmp", root_file)
        conns, infos = [], [info]
        try:
            while len(conns) < size - 1:
                conn, _ = srv.accept()
                f = conn.makefile("r")
                infos.append(recv_line(f))
                conns.append(conn)
        finally:
            srv.close()
        verdict = decide(sorted(infos, key=lambda i: i["rank"]))
        for conn in conns:
            conn.sendall((json.dumps(verdict) + "\n").encode())
            conn.close()
        try:
            os.remove(root_file)
            os.rmdir(d)
        except OSError:
            pass
        return verdict
    while not os.path.exists(root_file):
        if time.monotonic() > deadline:
            raise TimeoutError("bootstrap root did not publish its address")
        time.sleep(0.05)
    host, port = open(root_file).read().rsplit(":", 1)
    conn = socket.create_connection((host, int(port)), timeout=BOOT_TIMEOUT)
    conn.sendall((json.dumps(info) + "\n").encode())
    verdict = recv_line(conn.makefile("r"))
    conn.close()
    return verdict


# ------------------------------------------------------------ output


class Log:
    def __init__(self, info, enabled):
        self.prefix = f"{info['host']}:{info['pid']}"
        self.main_tid = info["pid"]
        self.tid = info["pid"] + 41
        self.enabled = enabled

    def info(self, msg, dev=0, main=False):
        if self.enabled:
            print(f"{self.prefix}:{self.main_tid if main else self.tid} [{dev}] NCCL INFO {msg}", flush=False)

    def warn(self, where, msg, dev=0):
        print(f"{self.prefix}:{self.tid} [{dev}] {where} NCCL WARN {msg}", flush=False)


def print_init(log, info, conf, rank, nranks):
    log.info(f"Bootstrap : Using {info['if']}:{info['ip']}<0>", main=True)
    if "NCCL_SOCKET_IFNAME" in conf:
        log.info(f"NCCL_SOCKET_IFNAME set to {conf['NCCL_SOCKET_IFNAME']}", main=True)
    log.info("cudaDriverVersion 12040", main=True)
    log.info(f"NCCL version {NCCL_VERSION}", main=True)
    log.info("NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.")
    if conf.get("NCCL_IB_DISABLE") == "1":
        log.info("NCCL_IB_DISABLE set by environment to 1.")
    if conf.get("NCCL_IB_HCA"):
        log.info(f"NCCL_IB_HCA set to {conf['NCCL_IB_HCA']}")
    if info["net"] == "IB":
        for k, p in enumerate(info["ib"]):
            log.info(f"NET/IB : Made virtual device [{k}] name={p['device']} speed={int(p['speed_gbps']) * 1000} ndevs=1")
        devs = " ".join(f"[{k}]{p['device']}:1/{'RoCE' if p['link_layer'] == 'Ethernet' else 'IB'}" for k, p in enumerate(info["ib"]))
        log.info(f"NET/IB : Using {devs} [RO]; OOB {info['if']}:{info['ip']}<0>")
        log.info("Using network IB")
    else:
        if conf.get("NCCL_IB_DISABLE") != "1":
            log.info("NET/IB : No device found.")
        log.info(f"NET/Socket : Using [0]{info['if']}:{info['ip']}<0>")
        log.info("Using network Socket")
    commid = "0x%016x" % (abs(hash(os.environ.get("OMPI_MCA_ess_base_jobid", "x"))) & (2**64 - 1))
    nvml = (info.get("gpu_ids") or [0])[0]
    for g in range(min(info["gpus"], 1)):
        log.info(
            f"ncclCommInitRank comm 0x55c819b2{g:04x} rank {rank} nranks {nranks} cudaDev {g} "
            f"nvmlDev {nvml} busId {GPU_BUSES[nvml % 8]}000 commId {commid} - Init START",
            dev=g,
        )
    if info["net"] == "IB":
        for k, p in enumerate(info["ib"]):
            log.info(f"NET/IB : GPU Direct RDMA {'Enabled' if info['gdr'] else 'Disabled'} for HCA {k} '{p['device']}'")


def print_channels(log, info, verdict, first_rank, nranks):
    ngpu = info["gpus"]
    prev = (first_rank - ngpu) % nranks
    nxt = (first_rank + ngpu) % nranks
    if verdict["net"] == "IB" and info["net"] == "IB":
        names = [p["device"] for p in info["ib"]]
        # a rank of one GPU (-g 1) sends through its own rail; one driving every GPU, through all
        own = [names.index(d) for d in info.get("rails") or [] if d in names] if ngpu == 1 else []
        devs = own or list(range(len(info["ib"])))
        suffix = "/GDRDMA" if verdict["gdr"] else ""
        for ch, dev in enumerate(devs * 2):
            log.info(f"Channel {ch:02d}/0 : {prev + ngpu - 1}[{ngpu - 1}] -> {first_rank}[0] [receive] via NET/IB/{dev}{suffix}")
            log.info(f"Channel {ch:02d}/0 : {first_rank + ngpu - 1}[{ngpu - 1}] -> {nxt}[0] [send] via NET/IB/{dev}{suffix}", dev=ngpu - 1)
    elif info["net"] == "Socket":
        for ch in range(2):
            log.info(f"Channel {ch:02d}/0 : {prev + ngpu - 1}[{ngpu - 1}] -> {first_rank}[0] [receive] via NET/Socket/0")
            log.info(f"Channel {ch:02d}/0 : {first_rank + ngpu - 1}[{ngpu - 1}] -> {nxt}[0] [send] via NET/Socket/0", dev=ngpu - 1)
            log.info("NET/Socket: Using 2 threads and 8 sockets per thread")
    for g in range(min(ngpu, 1)):
        log.info("Connected all rings", dev=g)
        log.info(
            f"ncclCommInitRank comm 0x55c819b2{g:04x} rank {first_rank + g} nranks {nranks} cudaDev {g} "
            f"nvmlDev {g} busId {GPU_BUSES[g]}000 commId 0x0 - Init COMPLETE",
            dev=g,
        )


def sizes(args):
    """The message sizes in the order the test runs them: -b to -e by -f or -i, again each -N run cycle
    (``run_cycles`` 0: without end, until the process is stopped)."""
    one = _sizes(args)
    cycles = getattr(args, "run_cycles", 1)
    return itertools.chain.from_iterable(itertools.repeat(one) if cycles == 0 else [one] * max(1, cycles))


def _sizes(args):
    lo, hi = parse_size(args.minbytes), parse_size(args.maxbytes)
    out, s = [], lo
    while s <= hi:
        out.append(s)
        if args.stepfactor:
            s *= args.stepfactor
        else:
            s += parse_size(args.stepbytes) if args.stepbytes else 2**20
        if len(out) > 64:
            break
    return out


def print_header(args, infos_hosts, buses=None):
    fmt = grammar.nccl_tests_header(args.version)
    if fmt:  # util.cu PRINT (from 2.17.4): the release, NCCL_VERSION_CODE of the headers and of the library
        code = NCCL_VERSION_CODE
        print(fmt.replace("%s", grammar.pick(grammar.table("nccl_tests")["versions"], args.version), 1).replace("%d", str(code), 1).replace("%d", str(code), 1))
    step = f"{args.stepfactor}(factor)" if args.stepfactor else f"{parse_size(args.stepbytes or '1M')}(bytes)"
    print(
        f"# nThread {args.nthreads} nGpus {args.ngpus} minBytes {parse_size(args.minbytes)} maxBytes "
        f"{parse_size(args.maxbytes)} step: {step} warmup iters: {args.warmup_iters} iters: {args.iters} "
        f"agg iters: {args.agg_iters} validation: {args.check} graph: {args.cudagraph}"
    )
    print("#\n# Using devices")
    rank = 0
    for host, pid in infos_hosts:
        for g in range(args.ngpus):
            bus = buses[rank] if buses and rank < len(buses) else GPU_BUSES[g % 8]
            print(f"#  Rank {rank:2d} Group  0 Pid {pid:6d} on {host:>10} device {g:2d} [0000:{bus}:00] {GPU_NAME}")
            rank += 1
    print("#", flush=True)


def _tuned_busbw(verdict, size, nranks, tuning, rng, prog="all_reduce_perf"):
    """Bus bandwidth at ``size`` with NCCL's tuning knobs, the tuner plugin's rows and the fabric's
    quirk (linerate_lab/nccl_tuning.py), multi-node IB only."""
    nodes = len(verdict.get("hosts") or [])
    if tuning is None or verdict.get("net") != "IB" or nodes < 2:
        return None
    return nccl_tuning.busbw(size, nranks, nodes, verdict["busbw"], tuning, prog, tuning.get("quirk"))[0] * (1 - rng.uniform(0, 0.01))


def print_table(prog, args, verdict, nranks, jfile, tuning=None):
    allgather = prog == "all_gather_perf"
    reduces = prog in ("all_reduce_perf", "reduce_scatter_perf")
    factor = nccl_tuning.bus_factor(prog, nranks)
    elem = 4
    print(f"NCCL version {NCCL_VERSION}")
    print("#\n#                                                              out-of-place                       in-place          ")
    print("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
    print("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ")
    # the noise of a run (at most 1 %): seeded by the job (each mpirun its own), the settings and the size
    seed = "|".join(
        [
            os.environ.get("OMPI_MCA_ess_base_jobid") or os.environ.get("PMIX_NAMESPACE") or "",
            *(f"{k}={v}" for k, v in sorted((tuning or {}).get("conf", {}).items())),
        ]
    )
    rng = random.Random(seed)
    rows, total = [], 0.0
    for size in sizes(args):
        row = {"size": size}
        cells = []
        for place in ("out_of_place", "in_place"):
            bus = _tuned_busbw(verdict, size, nranks, tuning, rng, prog)
            if bus is None:
                bus = verdict["busbw"] * size / (size + SIZE_RAMP) * (1 - rng.uniform(0, 0.01))
            alg = bus / factor if factor else bus
            t = size / (alg * 1e9) * 1e6 if alg > 0 else 0.0
            wrong = "0" if args.check else "N/A"
            cells.append(f"{t:8.1f} {alg:7.2f} {bus:7.2f} {wrong:>6}")
            row[place] = {"time": round(t, 2), "alg_bw": round(alg, 2), "bus_bw": round(bus, 2), "nwrong": 0 if args.check else None}
        total += row["out_of_place"]["bus_bw"]
        count = size // elem // (nranks if allgather or prog == "reduce_scatter_perf" else 1)
        redop = args.op if reduces else "none"
        print(f"{size:12d}  {count:12d}  {args.datatype:>8}  {redop:>6}  {-1:6d}  " + "  ".join(cells))
        rows.append(
            {
                "experiment_name": prog,
                "size": size,
                "count": count,
                "type": args.datatype,
                "redop": redop,
                "root": "-1",
                "out_of_place": row["out_of_place"],
                "in_place": row["in_place"],
            }
        )
        time.sleep(0.05)
    avg = total / max(1, len(rows))
    print("# Out of bounds values : 0 OK")
    print(f"# Avg bus bandwidth    : {avg:g} ")
    print("#")
    if jfile:
        doc = {
            "version": 3,
            "nccl_version": NCCL_VERSION_CODE,
            "config": {"nThread": args.nthreads, "nGpus": args.ngpus},
            "results": rows,
            "out_of_bounds": {"count": 0, "okay": True},
            "average_bus_bandwidth": {"bandwidth": round(avg, 4), "okay": "unchecked"},
            "errors": [],
        }
        with open(jfile, "w") as f:
            json.dump(doc, f, indent=1)


def main(argv=None, prog="all_reduce_perf", version=NCCL_TESTS_VERSION):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        # the release's own getopt_long table: an option it lacks (-J before 2.17.3) prints glibc's
        # message, "invalid option '?'" and the usage, and main() returns 0 - no test runs
        opts, _operands = grammar.nccl_tests_parse(prog, argv, version)
    except grammar.NcclTestsUsage as e:
        if e.stderr:
            print(e.stderr, file=sys.stderr, flush=True)
        sys.stdout.write(e.stdout)
        sys.stdout.flush()
        return 0
    modelled = []
    for key, value in grammar.canonical(opts, grammar.nccl_tests_grammar(version)[1]["long"]):
        modelled.append(f"{key}={value}" if value is not None else key)
    args, _unmodelled = build_parser(prog).parse_known_args(modelled)
    args.version = version
    # the rank's GPUs run the collective (and their PCIe links train up) for as long as it runs
    with pcie.hold_gpus(cuda_gpus(args.ngpus), prog):
        return run(prog, args)


def cuda_gpus(ngpus):
    """The GPU indices a rank with ``-g ngpus`` uses: the first of CUDA_VISIBLE_DEVICES (else of all)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    order = [int(x) for x in visible.split(",") if x.strip().isdigit()] if visible is not None else range(max(0, ngpus))
    return list(order)[: max(0, ngpus)]


def mpi_rank():
    """(rank, size) as MPI_Init learns them: from mpirun (Open MPI's OMPI_COMM_WORLD_*), or under
    ``srun --mpi=pmix`` from the PMIx server of Slurm's step (PMIX_RANK; the step's SLURM_NTASKS)."""
    if "OMPI_COMM_WORLD_RANK" in os.environ:
        return int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    if "PMIX_RANK" in os.environ:
        return int(os.environ["PMIX_RANK"]), int(os.environ.get("SLURM_NTASKS", "1"))
    return 0, 1


def rank_info(conf, rank, nodename, ngpus):
    """This rank's facts (nccl_net.local_info) with its GPUs: how many, their buses and ids, its rails."""
    info = local_info(conf, rank, nodename)
    info["gpus"] = ngpus
    gpu_ids = cuda_gpus(ngpus)
    info["buses"] = [GPU_BUSES[g % 8] for g in gpu_ids]
    info["gpu_ids"] = gpu_ids
    info["rails"] = rank_rails(model.node(model.load()), info, gpu_ids)
    return info


def tuning_of(conf):
    """NCCL_ALGO / NCCL_PROTO / NCCL_NTHREADS / NCCL_BUFFSIZE as this NCCL release reads them, the tuner
    plugin NCCL_TUNER_PLUGIN names with its CSV config (linerate_lab/nccl_tuning.py), and the fabric's
    protocol quirk (fault nccl-proto-quirk), where one is injected."""
    tuning = nccl_tuning.read(conf, NCCL_VERSION)
    tuning["conf"] = {
        k: conf[k] for k in ("NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_NTHREADS", "NCCL_TUNER_PLUGIN", "NCCL_TUNER_CONFIG_FILE") if k in conf
    }
    tuner = nccl_tuning.load_tuner(conf, read_text)
    tuning["tuner_rows"] = tuner["rows"]
    tuning["infos"] = tuner["infos"] + tuning["infos"]
    tuning["quirk"] = (model.load() or {}).get("nccl_quirk")
    return tuning


def peer_error(log, mine, rank):
    """Log what NCCL logs when this rank's QPs fail (``mine``: the verdict's error for this node, or
    None when another node's failed) and return the reason the test prints."""
    if mine and mine["kind"] == "gid":
        log.warn("misc/ibvwrap.cc:262", "Call to ibv_modify_qp failed with error Invalid argument")
        log.info("transport/net_ib.cc:934 -> 2")
        log.info("transport/net.cc:712 -> 2")
        return "unhandled system error (run with NCCL_DEBUG=INFO for details) / Call to ibv_modify_qp failed with error Invalid argument"
    if mine and mine["kind"] == "mtu_drop":
        log.warn(
            "transport/net_ib.cc:1696",
            f"NET/IB : Got completion from peer {mine['peer_ip']}<{40000 + rank}> "
            "with status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:0.0.0.0 remoteGids::ffff:0.0.0.0",
        )
        log.info("transport/net.cc:1134 -> 6")
        log.info("proxy.cc:679 -> 6")
        return "remote process exited or there was a network error / NET/IB : Got completion from peer with status=12"
    log.warn("transport/net_ib.cc:1003", "NET/IB : Connection to remote peer closed")
    return "remote process exited or there was a network error / NET/IB : Connection to remote peer closed"


def fail_test(nodename, pid, reason):
    """The two lines nccl-tests prints when a communicator fails (common.cu), and its exit status."""
    sys.stdout.flush()
    print(f"{nodename}: Test NCCL failure common.cu:1005 '{reason}'")
    print(f" .. {nodename} pid {pid}: Test failure common.cu:891", flush=True)
    return 3


def run(prog, args):
    rank, size = mpi_rank()
    nodename = socket.gethostname().split(".")[0]
    conf = nccl_settings()
    info = rank_info(conf, rank, nodename, args.ngpus)
    debug = conf.get("NCCL_DEBUG", "").upper() in ("INFO", "TRACE")
    log = Log(info, debug)
    tuning = tuning_of(conf)
    if info["ip"] is None:
        log.warn("misc/socket.cc:484", "Bootstrap : no socket interface found")
        print(
            f"{nodename}: Test NCCL failure common.cu:958 'internal error - please report this issue to the "
            f"NCCL developers / Bootstrap : no socket interface found'",
            flush=True,
        )
        return 3
    nranks = size * args.ngpus
    try:
        verdict = bootstrap(info, rank, size)
    except (OSError, EOFError, TimeoutError, ValueError) as e:
        log.warn("misc/socket.cc:540", f"Connect to bootstrap root failed : {e}")
        print(
            f"{nodename}: Test NCCL failure common.cu:958 'remote process exited or there was a network error / Connect to bootstrap root failed'", flush=True
        )
        return 3
    if rank == 0:
        print_header(args, list(zip(verdict["hosts"], verdict.get("pids") or [info["pid"]] * size)), verdict.get("buses"))
    first_rank = rank * args.ngpus
    print_init(log, info, conf, first_rank, nranks)
    for msg in tuning["infos"]:
        log.info(msg)
    for where, msg in tuning["warnings"]:
        log.warn(where, msg)
    if tuning["error"]:  # NCCL >= 2.24: an unknown NCCL_ALGO/NCCL_PROTO name fails the communicator's init
        return fail_test(nodename, info["pid"], "invalid usage (run with NCCL_DEBUG=WARN for details)")
    if verdict["errors"]:
        return fail_test(nodename, info["pid"], peer_error(log, verdict["errors"].get(nodename), rank))
    print_channels(log, info, verdict, first_rank, nranks)
    sys.stdout.flush()
    if rank == 0:
        print_table(prog, args, verdict, nranks, args.output_file, tuning)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
