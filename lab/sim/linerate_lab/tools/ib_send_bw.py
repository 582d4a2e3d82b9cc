"""Simulated perftest ib_send_bw: ib_write_bw's engine with the send verb (perftest src/send_bw.c).

The client's sends land in the server's posted receives, so data flows client -> server as
for a write; the header says ``Send BW Test``, the server prints its ``RX depth`` and the
address lines carry no RKey/VAddr (ctx_print_test_info, ctx_print_pingpong_data).
"""

import sys

from linerate_lab.tools import ib_write_bw


def main(argv=None, perftest=ib_write_bw.PERFTEST_VERSION):
    return ib_write_bw.main(argv, prog="ib_send_bw", perftest=perftest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
