"""ofed_info of ofed-scripts (MLNX_OFED 23.10 / DOCA-OFED 24.10): ``-s``
prints the release line ending in ':'; ``-n`` the bare version; no option
the release header.
"""

from . import common


def main(argv, release="MLNX_OFED_LINUX-24.10-1.1.4.0", ofed="24.10-1.1.4.0"):
    if "-s" in argv:
        common.out(f"{release}:\n")
    elif "-n" in argv:
        common.out(f"{ofed}\n")
    else:
        common.out(f"{release} (OFED-{ofed}):\n\n")
    return 0
