"""iproute2's ``rdma`` (Debian bookworm 6.1) for the simulated ConnectX devices:
``rdma statistic [show] [link [DEV/PORT]]`` prints the mlx5 hw_counters, one
line per link, in the order and names of an MLNX_OFED 23.10 mlx5_ib
(tests/unit/fixtures/counters/rdma_statistic_mofed.txt): ``link mlx5_0/1
rx_write_requests 0 ... np_cnp_sent 0 rx_icrc_encapsulated 0``. The values are
the NIC's counters in the model (the lab's incast physics adds out_of_sequence,
np_ecn_marked_roce_packets, np_cnp_sent, rp_cnp_handled ...). Every other
command runs Debian's rdma, diverted to /bin/rdma.distrib.
"""

from . import common

REAL = "/bin/rdma.distrib"
# MLNX_OFED 23.10 mlx5_ib hw_counters, in the order the driver lists them
COUNTERS = (
    "rx_write_requests",
    "rx_read_requests",
    "rx_atomic_requests",
    "out_of_buffer",
    "out_of_sequence",
    "duplicate_request",
    "rnr_nak_retry_err",
    "packet_seq_err",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "rx_dct_connect",
    "resp_local_length_error",
    "resp_cqe_error",
    "req_cqe_error",
    "req_remote_invalid_request",
    "req_remote_access_errors",
    "resp_remote_access_errors",
    "resp_cqe_flush_error",
    "req_cqe_flush_error",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "roce_slow_restart",
    "roce_slow_restart_cnps",
    "roce_slow_restart_trans",
    "rp_cnp_ignored",
    "rp_cnp_handled",
    "np_ecn_marked_roce_packets",
    "np_cnp_sent",
    "rx_icrc_encapsulated",
)


def delegate(argv):
    return common.delegate(REAL, "rdma", argv)


def _is(word, full):
    """iproute2 accepts any prefix of a keyword."""
    return bool(word) and full.startswith(word)


def line(nic):
    c = nic.get("counters") or {}
    return f"link {nic['device']}/1 " + " ".join(f"{n} {int(c.get(n, 0))}" for n in COUNTERS)


def main(argv):
    args = list(argv)
    if not args or not _is(args[0], "statistic"):
        return delegate(argv)
    args = args[1:]
    if args and _is(args[0], "show"):
        args = args[1:]
    if args and _is(args[0], "link"):
        args = args[1:]
    if len(args) > 1 or (args and args[0].startswith("-")):
        return delegate(argv)
    _, node = common.load_node()
    nics = common.rdma_nics(node)
    if not nics:
        return delegate(argv)
    if args:
        dev, _, port = args[0].partition("/")
        nic = next((n for n in nics if n["device"] == dev), None)
        if nic is None or port not in ("", "1"):
            common.err("Wrong device name\n" if nic is None else "Wrong port number\n")
            return 1
        nics = [nic]
    common.out("".join(line(n) + "\n" for n in nics))
    return 0
