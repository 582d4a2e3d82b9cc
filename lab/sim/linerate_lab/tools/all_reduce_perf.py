"""Simulated nccl-tests all_reduce_perf (see nccl_tests)."""

import sys

from linerate_lab.tools import nccl_tests


def main(argv=None, version=nccl_tests.NCCL_TESTS_VERSION):
    return nccl_tests.main(argv, prog="all_reduce_perf", version=version)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
