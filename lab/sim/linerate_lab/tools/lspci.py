"""lspci (pciutils 3.9, Debian bookworm) over the node's simulated PCIe tree
(linerate_lab.pcie): the GPUs, the ConnectX NICs and the switch and root
ports above them. ``-D`` (domain), ``-v``/``-vv``/``-vvv`` (the Express
capability with DevCtl MaxReadReq, LnkCap and LnkSta with pciutils'
``(ok)``/``(downgraded)``, ACS capability and control on bridges, NUMA
node, kernel driver) and ``-s [[domain:]bus:]dev.fn``.

    lspci [-D] [-v|-vv|-vvv] [-s SLOT]
"""

from . import common
from .. import pcie

USAGE = "Usage: lspci [<switches>]\n"
ACS_CAP = "SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"


def _acs(on):
    s = "+" if on else "-"
    return f"SrcValid{s} TransBlk- ReqRedir{s} CmpltRedir{s} UpstreamFwd{s} EgressCtrl- DirectTrans-"


def _lnksta(f):
    (cg, cw), (g, w) = f["cap"], f["sta"]
    speed = pcie.gt(g) + (" (downgraded)" if g < cg else " (ok)")
    width = f"x{w}" + (" (downgraded)" if w < cw else " (ok)")
    return f"Speed {speed}, Width {width}"


def render(f, verbose, domain):
    addr = f["address"] if domain else f["address"][5:]
    progif = " (prog-if 00 [Normal decode])" if f["class"] == "PCI bridge" else ""
    lines = [f"{addr} {f['class']}: {f['name']}{progif}"]
    if verbose == 0:
        return lines
    t = "\t"
    lines += [
        f"{t}Subsystem: {f['name'].split(' (rev')[0]}",
        f"{t}Control: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+",
        f"{t}Status: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-",
        f"{t}Latency: 0, Cache Line Size: 64 bytes",
    ]
    if f["class"] == "PCI bridge":
        p, s, u = f["bus"]
        lines.append(f"{t}Bus: primary={p:02x}, secondary={s:02x}, subordinate={u:02x}, sec-latency=0")
    lines.append(f"{t}NUMA node: {f['numa']}")
    slot = " (Slot+)" if f["kind"] in ("Root Port", "Downstream Port") else ""
    lines.append(f"{t}Capabilities: [60] Express (v2) {f['kind']}{slot}, MSI 00")
    if verbose >= 2:
        mrr = f.get("mrr", 512)
        cg, cw = f["cap"]
        lines += [
            f"{t}{t}DevCap:{t}MaxPayload 512 bytes, PhantFunc 0, Latency L0s unlimited, L1 unlimited",
            f"{t}{t}{t}ExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit 0W",
            f"{t}{t}DevCtl:{t}CorrErr- NonFatalErr+ FatalErr+ UnsupReq+",
            f"{t}{t}{t}RlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop+ FLReset-",
            f"{t}{t}{t}MaxPayload 256 bytes, MaxReadReq {mrr} bytes",
            f"{t}{t}DevSta:{t}CorrErr- NonFatalErr- FatalErr- UnsupReq- AuxPwr- TransPend-",
            f"{t}{t}LnkCap:{t}Port #0, Speed {pcie.gt(cg)}, Width x{cw}, ASPM not supported",
            f"{t}{t}{t}ClockPM- Surprise- LLActRep+ BwNot- ASPMOptComp+",
            f"{t}{t}LnkCtl:{t}ASPM Disabled; RCB 64 bytes, Disabled- CommClk+",
            f"{t}{t}{t}ExtSynch- ClockPM- AutWidDis- BWInt- AutBWInt-",
            f"{t}{t}LnkSta:{t}{_lnksta(f)}",
            f"{t}{t}{t}TrErr- Train- SlotClk+ DLActive+ BWMgmt- ABWMgmt-",
        ]
    lines.append(f"{t}Capabilities: [100 v1] Advanced Error Reporting")
    if f["class"] == "PCI bridge":
        lines.append(f"{t}Capabilities: [148 v1] Access Control Services")
        if verbose >= 2:
            lines += [f"{t}{t}ACSCap:{t}{ACS_CAP}", f"{t}{t}ACSCtl:{t}{_acs(f['acs'])}"]
    lines.append(f"{t}Kernel driver in use: {f['driver']}")
    if f["driver"] != "pcieport":
        lines.append(f"{t}Kernel modules: {f['driver']}")
    return lines


def _slot_match(want, address):
    parts = want.lower().split(":")
    full = address.split(":")  # dom, bus, dev.fn
    return parts == full[-len(parts) :] if len(parts) <= 3 else False


def main(argv):
    verbose, domain, slot = 0, False, None
    it = iter(argv)
    for a in it:
        if a == "-D":
            domain = True
        elif a in ("-v", "-vv", "-vvv"):
            verbose = max(verbose, len(a) - 1)
        elif a == "-s":
            slot = next(it, None)
            if slot is None:
                common.err("lspci: option requires an argument -- 's'\n" + USAGE)
                return 2
        else:
            common.err(f"lspci: invalid option -- '{a.lstrip('-')[:1]}'\n" + USAGE)
            return 2
    _, node = common.load_node()
    blocks = []
    for f in pcie.functions(node):
        if slot and not _slot_match(slot, f["address"]):
            continue
        # -v and more: a blank line after every device, as pciutils prints
        blocks.append("\n".join(render(f, verbose, domain)) + ("\n\n" if verbose else "\n"))
    common.out("".join(blocks))
    return 0
