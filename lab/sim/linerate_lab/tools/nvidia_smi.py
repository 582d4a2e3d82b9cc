"""nvidia-smi of the R550 driver (the 89-column table of 545 and later),
for the node's H100 SXM GPUs: the default table, ``-L``, ``-q`` (summary
subset), ``--query-gpu=... --format=csv[,noheader][,nounits]``,
``--query-compute-apps=...`` and ``topo -m`` (TAB-separated matrix with the
NICs, Legend and NIC Legend).

The PCIe fields are ``nvidia-smi --help-query-gpu``'s: ``pcie.link.gen.current``
(alias ``pcie.link.gen.gpucurrent``) and ``pcie.link.width.current`` - what the
link runs at now, Gen1 at rest, "These may be reduced when the GPU is not in
use" - and ``pcie.link.gen.max`` (the most this GPU and system configuration
allow: the lower of ``pcie.link.gen.gpumax``, the GPU's, and
``pcie.link.gen.hostmax``, the port above it), ``pcie.link.width.max``. A GPU
a workload holds (linerate_lab.pcie.hold_gpus) is listed by
``--query-compute-apps`` and in the table's Processes, and its link runs at
``max`` (or where the pcie-gpu-stuck fault keeps it).

It talks to the driver: without the ``nvidia`` module loaded it fails with
the real message and exit code 9.
"""

import hashlib
import time

from . import common
from .. import pcie

FAILED = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n"
CUDA = {"550": "12.4", "535": "12.2", "555": "12.5", "560": "12.6", "565": "12.7"}
MEM_TOTAL = 81559
SEP = "+-----------------------------------------+------------------------+----------------------+"
WIDE = "+-----------------------------------------------------------------------------------------+"


def gpu_list(node):
    name = node.get("gpu_model", "NVIDIA H100 80GB HBM3")
    gpus = []
    buses = pcie.gpu_buses(node)
    for i in range(node.get("gpus", 0)):
        seed = hashlib.sha1(f"{node.get('name', '')}{node.get('index', 0)}/{i}".encode()).hexdigest()
        gpus.append(
            {
                "index": i,
                "name": name,
                "bus_id": f"00000000:{buses[i]:02X}:00.0",
                "uuid": f"GPU-{seed[:8]}-{seed[8:12]}-{seed[12:16]}-{seed[16:20]}-{seed[20:32]}",
                "serial": str(1654423000000 + int(seed[:6], 16) % 999999),
            }
        )
    return gpus


def table(node, driver):
    cuda = CUDA.get(driver.split(".")[0], "12.4")
    lines = [
        time.strftime("%a %b %d %H:%M:%S %Y") + "       ",
        WIDE,
        f"| NVIDIA-SMI {driver:<23}Driver Version: {driver:<15}CUDA Version: {cuda:<9}|",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|=========================================+========================+======================|",
    ]
    for g in gpu_list(node):
        lines += [
            f"|{g['index']:>4}  {g['name']:<29}{'On':>4}  |   {g['bus_id']} Off |{'0':>21} |",
            f"| N/A   {30 + g['index'] % 3}C    P0{'72W':>16} / {'700':>4}W |{0:>8}MiB / {MEM_TOTAL:>6}MiB |{0:>7}%{'Default':>13} |",
            f"|{'':41}|{'':24}|{'Disabled':>21} |",
            SEP,
        ]
    lines += [
        " " * 89,
        WIDE,
        "| Processes:                                                                              |",
        "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|=========================================================================================|",
    ]
    procs = [(g["index"], p) for g in _gpus_now(node) for p in g["procs"]]
    lines += [f"|  {i:>3}   N/A  N/A  {p['pid']:>9}      C   {p['name'][:40]:<40}{'1024MiB':>11} |" for i, p in procs] or [
        "|  No running processes found                                                             |"
    ]
    lines.append(WIDE)
    return "\n".join(lines) + "\n"


def query(node, driver):
    gpus = gpu_list(node)
    out = [
        "",
        "==============NVSMI LOG==============",
        "",
        f"{'Timestamp':<42}: {time.strftime('%a %b %d %H:%M:%S %Y')}",
        f"{'Driver Version':<42}: {driver}",
        f"{'CUDA Version':<42}: {CUDA.get(driver.split('.')[0], '12.4')}",
        "",
        f"{'Attached GPUs':<42}: {len(gpus)}",
    ]
    for g in gpus:
        out += [
            f"GPU {g['bus_id']}",
            f"    {'Product Name':<38}: {g['name']}",
            f"    {'Product Brand':<38}: NVIDIA",
            f"    {'Product Architecture':<38}: Hopper",
            f"    {'Persistence Mode':<38}: Enabled",
            f"    {'Serial Number':<38}: {g['serial']}",
            f"    {'GPU UUID':<38}: {g['uuid']}",
            f"    {'Minor Number':<38}: {g['index']}",
            f"    {'VBIOS Version':<38}: 96.00.74.00.01",
            "    PCI",
            f"        {'Bus':<34}: 0x{g['bus_id'][9:11].lower()}",
            f"        {'Bus Id':<34}: {g['bus_id']}",
            "    FB Memory Usage",
            f"        {'Total':<34}: {MEM_TOTAL} MiB",
            f"        {'Used':<34}: 0 MiB",
            f"        {'Free':<34}: {MEM_TOTAL - 453} MiB",
            f"    {'Compute Mode':<38}: Default",
            "",
        ]
    return "\n".join(out) + "\n"


def _link(field):
    def value(g, d, n):
        return str(pcie.gpu_state(n, g["index"], g["busy"])[field])

    return value


FIELDS = {
    "index": lambda g, d, n: str(g["index"]),
    "name": lambda g, d, n: g["name"],
    "gpu_name": lambda g, d, n: g["name"],
    "driver_version": lambda g, d, n: d,
    "pci.bus_id": lambda g, d, n: g["bus_id"],
    "gpu_bus_id": lambda g, d, n: g["bus_id"],
    "uuid": lambda g, d, n: g["uuid"],
    "gpu_uuid": lambda g, d, n: g["uuid"],
    "serial": lambda g, d, n: g["serial"],
    "count": lambda g, d, n: str(len(gpu_list(n))),
    "persistence_mode": lambda g, d, n: "Enabled",
    "compute_cap": lambda g, d, n: "9.0",
    "memory.total": lambda g, d, n: f"{MEM_TOTAL} MiB",
    "memory.used": lambda g, d, n: "0 MiB",
    "temperature.gpu": lambda g, d, n: str(30 + g["index"] % 3),
    "utilization.gpu": lambda g, d, n: "100 %" if g["index"] in g["busy"] else "0 %",
    "pcie.link.gen.current": _link("gen"),
    "pcie.link.gen.gpucurrent": _link("gen"),
    "pcie.link.gen.max": _link("gen_max"),
    "pcie.link.gen.gpumax": _link("gen_gpumax"),
    "pcie.link.gen.hostmax": _link("gen_hostmax"),
    "pcie.link.width.current": _link("width"),
    "pcie.link.width.max": _link("width_max"),
}
# --query-compute-apps: one row per process and GPU it runs on
APP_FIELDS = {
    "pid": lambda g, p: str(p["pid"]),
    "process_name": lambda g, p: p["name"],
    "name": lambda g, p: p["name"],
    "gpu_bus_id": lambda g, p: g["bus_id"],
    "gpu_uuid": lambda g, p: g["uuid"],
    "gpu_name": lambda g, p: g["name"],
    "gpu_serial": lambda g, p: g["serial"],
    "used_gpu_memory": lambda g, p: "1024 MiB",
    "used_memory": lambda g, p: "1024 MiB",
}
HEADERS = {
    "memory.total": "memory.total [MiB]",
    "memory.used": "memory.used [MiB]",
    "utilization.gpu": "utilization.gpu [%]",
    "used_gpu_memory": "used_gpu_memory [MiB]",
    "used_memory": "used_gpu_memory [MiB]",
}


def _csv(names, rows, fmt, table):
    """Print ``rows`` (lists of values) for the fields ``names`` in --format ``fmt``; exit status."""
    for f in names:
        if f not in table:
            common.out(f'Field "{f}" is not a valid field to query.\n\n')
            return 2
    opts = [o.strip() for o in fmt.split(",")]
    if "csv" not in opts:
        common.out(f'"{fmt}" is not a valid format.\n')
        return 2
    lines = []
    if "noheader" not in opts:
        lines.append(", ".join(HEADERS.get(f, f) for f in names))
    for values in rows:
        if "nounits" in opts:
            values = [v.rsplit(" ", 1)[0] if v.endswith((" MiB", " %")) else v for v in values]
        lines.append(", ".join(values))
    common.out("".join(x + "\n" for x in lines))
    return 0


def _gpus_now(node):
    busy = pcie.busy_gpus()
    return [dict(g, busy=busy, procs=busy.get(g["index"], [])) for g in gpu_list(node)]


def query_gpu(node, driver, fields, fmt):
    names = [f.strip() for f in fields.split(",") if f.strip()]
    gpus = _gpus_now(node) if all(f in FIELDS for f in names) else []
    return _csv(names, [[FIELDS[f](g, driver, node) for f in names] for g in gpus], fmt, FIELDS)


def query_apps(node, fields, fmt):
    """--query-compute-apps: a row per process on each GPU (none: the header only, or nothing)."""
    names = [f.strip() for f in fields.split(",") if f.strip()]
    rows = [[APP_FIELDS[f](g, p) for f in names] for g in _gpus_now(node) for p in g["procs"]] if all(f in APP_FIELDS for f in names) else []
    return _csv(names, rows, fmt, APP_FIELDS)


CPU_AFFINITY = {0: "0-55,112-167", 1: "56-111,168-223"}
LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""


def topo(node):
    """``nvidia-smi topo -m``: HGX H100 — GPUs 0-3 on NUMA 0, 4-7 on NUMA 1,
    NVLink (NV18) between GPUs; a NIC behind the same PCIe switch as a GPU
    (linerate_lab.pcie: its rail-aligned GPU) is PIX, same NUMA node NODE,
    else SYS."""
    gpus = gpu_list(node)
    nics = sorted(node["nics"], key=lambda n: int(n["device"].rsplit("_", 1)[1]))
    gpu_numa = [0 if g["index"] < max(1, len(gpus) // 2) else 1 for g in gpus]
    names = [f"GPU{g['index']}" for g in gpus] + [f"NIC{i}" for i in range(len(nics))]
    numa = gpu_numa + [n["numa_node"] for n in nics]

    def link(a, b):
        if a == b:
            return " X "
        if a < len(gpus) and b < len(gpus):
            return "NV18"
        g, n = min(a, b), max(a, b) - len(gpus)
        if g < len(gpus) <= max(a, b) and pcie.paired_nic(node, g) is nics[n]:
            return "PIX"
        return "NODE" if numa[a] == numa[b] else "SYS"

    lines = ["\t" + "\t".join(names) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"]
    for a, name in enumerate(names):
        cells = [link(a, b) for b in range(len(names))]
        row = name + "\t" + "\t".join(cells)
        if a < len(gpus):
            row += f"\t{CPU_AFFINITY[numa[a]]}\t{numa[a]}\t\tN/A"
        lines.append(row)
    text = "\n".join(lines) + "\n" + LEGEND
    if nics:
        text += "\nNIC Legend:\n\n" + "".join(f"  NIC{i}: {n['device']}\n" for i, n in enumerate(nics))
    return text + "\n"


def main(argv):
    _, node = common.load_node()
    if not common.loaded(node, "nvidia") or not node.get("gpu_driver"):
        common.out(FAILED)
        return 9
    driver = node["gpu_driver"]
    fields = apps = fmt = None
    for a in argv:
        if a.startswith("--query-gpu="):
            fields = a.split("=", 1)[1]
        elif a.startswith("--query-compute-apps="):
            apps = a.split("=", 1)[1]
        elif a.startswith("--format="):
            fmt = a.split("=", 1)[1]
    if fields is not None:
        return query_gpu(node, driver, fields, fmt or "")
    if apps is not None:
        return query_apps(node, apps, fmt or "")
    if argv[:1] == ["topo"]:
        if "-m" not in argv[1:] and "--matrix" not in argv[1:]:
            common.out("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")
            return 2
        common.out(topo(node))
        return 0
    if "-L" in argv or "--list-gpus" in argv:
        for g in gpu_list(node):
            common.out(f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})\n")
        return 0
    if "-q" in argv or "--query" in argv:
        common.out(query(node, driver))
        return 0
    common.out(table(node, driver))
    return 0
