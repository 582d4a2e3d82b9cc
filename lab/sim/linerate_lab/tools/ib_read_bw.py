"""Simulated perftest ib_read_bw: ib_write_bw's engine, data flowing server -> client."""

import sys

from linerate_lab.tools import ib_write_bw


def main(argv=None, perftest=ib_write_bw.PERFTEST_VERSION):
    return ib_write_bw.main(argv, prog="ib_read_bw", perftest=perftest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
