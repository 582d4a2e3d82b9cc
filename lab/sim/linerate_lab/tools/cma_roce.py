"""cma_roce_mode and cma_roce_tos, the mlnx-tools scripts (23.10/24.10):
they write /sys/kernel/config/rdma_cm/<dev>/ports/<port>/default_roce_mode
(``IB/RoCE v1`` | ``RoCE v2``) or ``default_roce_tos`` and print the value.

    cma_roce_mode [-d <dev>] [-p <port>] [-m 1|2]
    cma_roce_tos  [-d <dev>] [-p <port>] [-t <tos>]
"""

import getopt

from . import common
from .. import model

USAGE = {
    "mode": (
        "Set/Show RoCE default mode of RDMA_CM applications\n\nUsage:\n\tcma_roce_mode OPTIONS\n"
        "Options:\n\t-h              show this help\n"
        "\t-d <dev>        use IB device <dev> (default mlx5_0)\n"
        "\t-p <port>       use port <port> of IB device (default 1)\n"
        "\t-m <roce_mode>  set RoCE mode of RDMA_CM applications (1 or 2)\n"
    ),
    "tos": (
        "Set/Show RoCE default ToS of RDMA_CM applications\n\nUsage:\n\tcma_roce_tos OPTIONS\n"
        "Options:\n\t-h              show this help\n"
        "\t-d <dev>        use IB device <dev> (default mlx5_0)\n"
        "\t-p <port>       use port <port> of IB device (default 1)\n"
        "\t-t <tos>        set ToS of RoCE RDMA_CM applications (0)\n"
    ),
}
MODES = {"1": "IB/RoCE v1", "2": "RoCE v2"}


def main(argv, what="mode"):
    letter = "m" if what == "mode" else "t"
    try:
        opts, _ = getopt.getopt(argv, f"d:{letter}:hp:")
    except getopt.GetoptError as e:
        common.err(f"cma_roce_{what}: {e}\n")
        opts = []
    device, port, value = "mlx5_0", "1", None
    for o, a in opts:
        if o == "-h":
            common.out(USAGE[what])
            return 0
        if o == "-d":
            device = a
        elif o == "-p":
            port = a
        else:
            value = a
    if not common.is_root():
        common.out("You must be root to run this\n")
        return 1
    with model.locked() as m:
        node = model.node(m)
        if not common.loaded(node, "rdma_cm"):
            common.out("Module rdma_cm is not loaded or does not support configfs\n")
            return 1
        nic = next((n for n in common.rdma_nics(node) if n["device"] == device), None)
        if nic is None:
            common.err(f"mkdir: cannot create directory '{device}': No such file or directory\n")
            common.out(f"Failed to create configuration for {device}\n")
            return 1
        if port != str(nic["port"]):
            common.out(f"Device {device} port {port} does not exist\n")
            return 1
        cma = nic["cma"]
        if what == "mode":
            if value in MODES:
                cma["roce_mode"] = MODES[value]
            common.out(cma["roce_mode"] + "\n")
        else:
            if value is not None:
                if value.isdigit() and 0 <= int(value) <= 255:
                    cma["tos"] = int(value)
                else:
                    common.err("/usr/sbin/cma_roce_tos: line 99: echo: write error: Invalid argument\n")
            common.out(f"{cma['tos']}\n")
    return 0
