"""Simulated perftest ib_send_lat: ib_write_lat's engine with the send verb (perftest src/send_lat.c)."""

import sys

from linerate_lab.tools import ib_write_lat


def main(argv=None, perftest=ib_write_lat.bw.PERFTEST_VERSION):
    return ib_write_lat.main(argv, prog="ib_send_lat", perftest=perftest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
