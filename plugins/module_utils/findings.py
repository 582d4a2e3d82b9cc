# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""Findings: the fault codes (code -> severity, suspect layer, meaning), ``finding()``, and
the report's correlation and summary of them. Shared by intent (which codes a policy may name),
host (drain, readiness) and checks.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


# code -> (severity, suspect layer, what it means). Codes are stable: reports,
# dashboards and CI key on them; add new ones, never rename.
FAULT_CODES = {
    "PORT_MISSING": ("error", "hca", "a cabled RDMA device is not present on the host"),
    "PORT_DOWN": ("error", "link", "a cabled RDMA port is not ACTIVE / LinkUp"),
    "PORT_SPEED": ("error", "link", "a port trained below the expected link speed"),
    "PORT_WIDTH": ("error", "link", "a port trained with fewer lanes than expected"),
    "MTU_MISMATCH": ("error", "mtu", "the netdev MTU differs from the intent"),
    "GID_MISSING": ("error", "gid", "no RoCE v2 IPv4 GID on the port (rail address missing)"),
    "RDMA_CONNECT_FAILED": ("error", "host", "the ib_write_bw client could not reach its server"),
    "RDMA_QP_FAILED": ("error", "gid", "queue pairs did not connect (GID index / addressing)"),
    "RDMA_TRANSPORT_RETRY": ("error", "mtu", "transport retry exceeded: frames dropped on the path"),
    "RDMA_TEST_ERROR": ("error", "host", "ib_write_bw failed"),
    "RDMA_BW_LOW": ("error", "link", "RDMA write bandwidth below the threshold"),
    # an error since issue 24: a failing test is a fault on its path whether or not its end is isolated
    "RDMA_INCONCLUSIVE": ("error", "link", "a failing pair whose bad end could not be isolated"),
    "RDMA_INTERMITTENT": ("error", "link", "a rail that fails a share of its tests (k of n) in one direction or both"),
    "UPLINK_DEGRADED": ("error", "fabric", "cross-leaf tests through one leaf's uplinks fail while its same-leaf tests pass"),
    # ib_send_bw and ib_write_lat on the first rounds' pairs (benchcheck.py)
    "RDMA_SEND_BW_LOW": ("error", "link", "RDMA send bandwidth (ib_send_bw) below the threshold"),
    "RDMA_LATENCY_HIGH": ("error", "link", "RDMA write latency (ib_write_lat) above fabric.verify.latency_us_max"),
    # GPUDirect RDMA: ib_write_bw --use_cuda on the first rounds' pairs and gdrcopy's sanity test (gpudirect.py)
    "GPUDIRECT_UNAVAILABLE": ("error", "peermem", "ib_write_bw cannot use GPU memory (perftest without CUDA, no peermem/DMA-BUF, no CUDA)"),
    "GPUDIRECT_RDMA_SLOW": ("error", "pcie", "RDMA write bandwidth from GPU memory below the threshold"),
    "GDRCOPY_SANITY_FAILED": ("error", "peermem", "gdrcopy's sanity test failed or gave no result"),
    "NCCL_NET_SOCKET": ("error", "hca_selection", "NCCL fell back to NET/Socket (TCP)"),
    "NCCL_NO_GDR": ("error", "peermem", "GPUDirect RDMA expected but not used"),
    "NCCL_FEW_NICS": ("error", "hca_selection", "fewer NICs carry NCCL traffic than are cabled"),
    "NCCL_BUSBW_LOW": ("error", "fabric", "NCCL bus bandwidth below the threshold"),
    "NCCL_QP_FAILED": ("error", "gid", "NCCL could not connect its queue pairs (GID index)"),
    "NCCL_TRANSPORT_RETRY": ("error", "mtu", "NCCL completion error 12: frames dropped on the path"),
    "NCCL_FAILED": ("error", "host", "nccl-tests failed"),
    # the per-node NET loopback test and the scaling series (checks/nccl_scale.py)
    "NCCL_LOOPBACK_LOW": ("error", "link", "a node's NET loopback (nccl-tests on one node, P2P and SHM off) below the threshold"),
    "NCCL_LOOPBACK_FAILED": ("error", "host", "a node's NET loopback test failed or gave no result"),
    "NCCL_SCALING_LOW": ("error", "fabric", "a step of the scaling series below the efficiency asked for"),
    "NCCL_STRAGGLER": ("error", "link", "the node that slows the collective, named from its own loopback and the series"),
    # NCCL's own configuration read back from each node (nccl_conf_findings)
    "NCCL_CONF_MISSING": ("error", "hca_selection", "NCCL's configuration file is absent or unreadable"),
    "NCCL_CONF_INVALID": ("error", "hca_selection", "a line of NCCL's configuration file NCCL would not apply as meant"),
    "NCCL_TUNED_MISSING": ("error", "host", "the tuned NCCL file is absent or unreadable while NCCL tuning is in use"),
    "NCCL_TC_MISMATCH": ("error", "pfc", "NCCL_IB_TC differs from the intent's data class (DSCP << 2)"),
    "NCCL_SL_MISMATCH": ("error", "pfc", "NCCL_IB_SL differs from the service level the benchmarks ran on"),
    "NCCL_GID_INDEX_MISMATCH": ("error", "gid", "NCCL_IB_GID_INDEX differs from the port's RoCE v2 IPv4 GID index"),
    "NCCL_HCA_MISMATCH": ("error", "hca_selection", "NCCL_IB_HCA differs from the cabled, active ports"),
    # Lossless proof under incast (incast_findings): counters and goodput of k senders into one receiver
    "INCAST_NO_PAUSE": ("error", "pfc", "no PFC pause on the no-drop priority under incast on a lossless intent"),
    "INCAST_PAUSE_WRONG_PRIORITY": ("error", "pfc", "pause frames on a priority other than the no-drop one"),
    "INCAST_DROPS": ("error", "pfc", "drops on the no-drop priority under incast"),
    "INCAST_GOODPUT_LOW": ("error", "pfc", "an incast flow kept far less than its fair share (drops, go-back-N)"),
    "INCAST_FAILED": ("error", "host", "an incast flow did not run"),
    "INCAST_INCONCLUSIVE": ("warning", "pfc", "an incast flow ran alone (the others had finished): no proof for its port"),
    "INCAST_OUT_OF_SEQUENCE": ("error", "pfc", "out-of-sequence / sequence errors at the receiver: loss on the no-drop class"),
    "INCAST_ECN_NO_CNP": ("error", "pfc", "ECN marks not answered by CNPs, or CNPs a sender does not handle"),
    "INCAST_NO_ECN": ("error", "pfc", "no ECN mark and no CNP under incast although the intent enables ECN"),
    "COUNTER_MISSING": ("warning", "hca", "a counter this driver/firmware does not expose: what it proves is not proven"),
    # the switches' own counters over the benchmarks (incastcheck.switch_findings)
    "SWITCH_PAUSE_WRONG_PRIORITY": ("error", "pfc", "a switch port sent or received pause frames on a priority other than the no-drop one"),
    "SWITCH_DROPS_NO_DROP": ("error", "pfc", "a switch port dropped packets of the no-drop priority"),
    # the switches' lossless state read back in the same snapshots (incastcheck.lossless_findings) and
    # the hosts' pause counters over the verification window (linkcheck.port_health)
    "SWITCH_NO_HEADROOM": ("error", "pfc", "a switch port has no lossless headroom for the no-drop priority: it drops under incast"),
    "PFC_WATCHDOG_OFF": ("error", "pfc", "a switch port's PFC watchdog does not guard the no-drop priority: a pause storm would stall the fabric"),
    "PFC_STORM": ("error", "pfc", "a NIC keeps sending pause frames (host tx pauses, or the switch's watchdog detected a storm)"),
    # Host readiness below the fabric (host/readiness_findings.py): PCIe, ACS, IOMMU, affinity, parity, limits
    "PCIE_DEGRADED": ("error", "pcie", "a NIC's or GPU's PCIe link trained below what both its ends can do (width or generation)"),
    "PCIE_SLOT_LIMITED": ("warning", "pcie", "a NIC's or GPU's PCIe link runs at its slot's (upstream port's) capability, below its own"),
    "ACS_ENABLED": ("error", "pcie", "ACS redirects peer-to-peer traffic on a bridge between a NIC and its GPU"),
    "IOMMU_NOT_PASSTHROUGH": ("warning", "pcie", "the IOMMU translates DMA (no iommu=pt): GPUDirect RDMA pays for it"),
    "MAX_READ_REQ_LOW": ("warning", "pcie", "a NIC's PCIe MaxReadReq is below 4096 bytes"),
    "GPU_NIC_AFFINITY": ("warning", "pcie", "a rail has no GPU behind its PCIe switch (PIX/PXB)"),
    "VERSION_SKEW": ("error", "host", "nodes run different kernel/OFED/firmware/GPU driver/peermem/NCCL versions"),
    "MEMLOCK_LIMITED": ("error", "host", "RLIMIT_MEMLOCK is not unlimited: RDMA memory registration fails"),
    "SHM_SMALL": ("warning", "host", "/dev/shm is smaller than NCCL's shared-memory transport needs"),
    "READINESS_UNPROVEN": ("warning", "host", "a readiness source could not be read: what it proves is not proven"),
    # Link health over the verification window (linkcheck.py): ethtool -S / perfquery deltas, mlxlink BER
    "LINK_ERRORS": ("error", "link", "physical errors (CRC, symbol, uncorrectable FEC) over the threshold in the window"),
    "LINK_FLAP": ("error", "link", "the link went down and came back during verification"),
    "LINK_BER_HIGH": (
        "error",
        "link",
        "an effective (post-FEC) or raw (pre-FEC) bit error rate above the threshold: mlxlink on a NIC, the switch's FEC read on a switch port",
    ),
    # Optics (mlxlink -m Module Info) against the module's own thresholds and fabric.verify's margins
    "OPTIC_RX_POWER_LOW": ("error", "link", "an optical module's received power on a lane below its low threshold (+ margin)"),
    "OPTIC_TEMP_HIGH": ("error", "link", "an optical module's temperature above its high threshold (- margin)"),
    "MLXLINK_RECOMMENDATION": ("warning", "link", "mlxlink's troubleshooting status is not 'No issue was observed'"),
    # InfiniBand: the subnet manager / topology / partition check (ibcheck.py)
    "IB_CHECK_FAILED": ("error", "subnet_manager", "the subnet could not be checked (sminfo / ibnetdiscover failed)"),
    "IB_SM_NOT_MASTER": ("error", "subnet_manager", "no SM is MASTER, or the master is not the intended port"),
    "IB_SM_PRIORITY_MISMATCH": ("error", "subnet_manager", "the master SM's priority differs from the intent"),
    "IB_LINK_MISSING": ("error", "cabling", "an intended link is absent"),
    "IB_PORTS_SWAPPED": ("error", "cabling", "two cables of a switch are on each other's ports"),
    "IB_LINK_MISWIRED": ("error", "cabling", "an intended peer is cabled to another port or switch"),
    "IB_UNEXPECTED_LINK": ("warning", "cabling", "a link the intent does not have"),
    "IB_UNEXPECTED_DEVICE": ("warning", "cabling", "a switch or CA the inventory does not know"),
    "IB_LINK_DEGRADED": ("error", "link", "a link trained below the intended width or speed"),
    "IB_PARTITION_NOT_IN_FORCE": ("error", "partition", "a member port lacks its partition key or membership"),
    # InfiniBand port error counters over the whole subnet (ibqueryerrors; ibcheck.check_port_errors)
    "IB_LINK_ERRORS": ("error", "link", "a switch port, inter-switch link or CA port counts errors above fabric.verify.ib_error_thresholds (both ends named)"),
    "IB_COUNTERS_UNREADABLE": ("error", "subnet_manager", "ibqueryerrors could not read the subnet's port error counters: they are not proven"),
    # RoCE: cabling by LLDP (cabling.py), switch neighbour tables and lldpd on hosts vs the inventory
    "CABLE_SWAPPED": ("error", "cabling", "two ports of a switch see each other's intended neighbour (cables swapped)"),
    "CABLE_MISWIRED": ("error", "cabling", "a port sees another endpoint than the inventory cables there"),
    "CABLE_MISSING": ("error", "cabling", "no LLDP neighbour on an intended switch-to-switch link"),
    "CABLE_UNEXPECTED": ("warning", "cabling", "a neighbour the inventory does not know, on a port it does not cable"),
    "CABLE_UNVERIFIED": ("warning", "cabling", "LLDP could not be read (switch, lldpd on a host, silent host port): cabling unproven"),
    # The read-only audit (playbooks/audit.yml, module_utils/checks/audit.py): what a role would change in check mode
    "DRIFT_FIRMWARE": ("error", "firmware", "a NIC firmware (mlxconfig Next Boot) value differs from the intent"),
    "DRIFT_ROCE_QOS": ("error", "pfc", "a port's trust, PFC, DSCP map, ECN, RDMA-CM ToS or MTU differs from the intent"),
    "DRIFT_NCCL_CONF": ("error", "hca_selection", "a NCCL_* line of NCCL's configuration differs from the intent"),
    "DRIFT_HOST": ("error", "host", "another host setting (packages, netdevs, peermem, boot units) differs from the intent"),
    "DRIFT_SUBNET_MANAGER": ("error", "subnet_manager", "the subnet manager's configuration differs from the intent"),
    "DRIFT_SWITCH": ("error", "switch", "a switch's running config differs from the intent"),
    "AUDIT_LAYER_FAILED": ("error", "host", "the audit could not run a layer's role on the node: its drift is unproven"),
    # Every node and switch in scope accounted for (accounting.py): what did not finish is not verified
    "NODE_NOT_VERIFIED": ("error", "host", "a node in scope did not finish the verification (unreachable or failed)"),
    "SWITCH_UNREACHABLE": ("error", "switch", "a switch in scope could not be read (unreachable, login refused, or left the run)"),
    "FIRMWARE_PENDING": ("warning", "firmware", "a firmware value is set for the next boot but not running yet"),
    # Attribution before action (checks/attribution.py): one shared element explains the failures of several
    # nodes; the nodes it explains are not drained for them (docs/audit.md#attribution-before-action)
    "LEAF_SUSPECT": ("error", "switch", "one leaf switch explains the failing ports of several nodes cabled to it"),
    "RAIL_SUSPECT": ("error", "fabric", "one rail (the same NIC of every node, over several leaves) explains the failures of several nodes"),
    "SPINE_SUSPECT": ("error", "fabric", "one spine explains the failing ports of several nodes under several of its leaves"),
    "SM_SUSPECT": ("error", "subnet_manager", "the subnet manager explains the failing ports of several nodes"),
    "CONTROLLER_PATH": ("error", "host", "several nodes are unreachable from the controller at once (its own path, or one jump host)"),
    # The job's own preflight (intent/preflight.py: Slurm TaskProlog, Kubernetes init container), inside the job
    "PREFLIGHT_RDMA_DEVICE": ("error", "hca", "a rail's RDMA device, verbs device file or netdev is not visible inside the job"),
    "PREFLIGHT_MEMLOCK": ("error", "host", "RLIMIT_MEMLOCK inside the job is below what RDMA needs (IPC_LOCK, slurmd's limits)"),
    "PREFLIGHT_SHM": ("error", "host", "/dev/shm inside the job is missing or smaller than NCCL needs"),
    "PREFLIGHT_NCCL_VERSION": ("error", "host", "the job's (image's) NCCL differs from the fleet's, or none is found"),
    "PREFLIGHT_NET_PLUGIN": ("error", "hca_selection", "the job's NCCL net plugins differ from the fleet's"),
    "PREFLIGHT_SOCKET_IFNAME": ("error", "hca_selection", "NCCL_SOCKET_IFNAME resolves to no interface with an address inside the job"),
    "PREFLIGHT_NET_IB": ("error", "hca_selection", "the 2-rank NET/IB handshake on a rail failed, hung, fell back to TCP or lacked GDRDMA"),
    "PREFLIGHT_BOOTSTRAP": ("error", "host", "the bootstrap (rendezvous) port is taken or not reached through NCCL_SOCKET_IFNAME"),
    # The drain budget (host/breaker.py): more nodes would leave service than fabric.remediation.budget allows
    "DRAIN_BREAKER_TRIPPED": ("error", "host", "the drain circuit breaker is open: linerate drains and returns nothing until an operator resets it"),
}


# Findings that never drain a node, whatever fabric.remediation says: what the run could not see is not a
# fault of the node (NODE_NOT_VERIFIED), and a shared element's finding or the breaker's names no node of its own.
NEVER_DRAIN = frozenset(("NODE_NOT_VERIFIED", "DRAIN_BREAKER_TRIPPED", "LEAF_SUSPECT", "RAIL_SUSPECT", "SPINE_SUSPECT", "SM_SUSPECT", "CONTROLLER_PATH"))


LAYERS = (
    "link",
    "hca",
    "hca_selection",
    "interface_selection",
    "peermem",
    "pfc",
    "mtu",
    "gid",
    "host",
    "fabric",
    "subnet_manager",
    "cabling",
    "partition",
    "firmware",
    "switch",
    "pcie",
)


# Which report check an InfiniBand finding belongs to.
IB_CHECK_OF = {
    "IB_CHECK_FAILED": "subnet_manager",
    "IB_SM_NOT_MASTER": "subnet_manager",
    "IB_SM_PRIORITY_MISMATCH": "subnet_manager",
    "IB_PARTITION_NOT_IN_FORCE": "ib_partitions",
    "IB_LINK_ERRORS": "ib_port_errors",
    "IB_COUNTERS_UNREADABLE": "ib_port_errors",
}


# ---------------------------------------------------------------- findings


def finding(code, message, node=None, device=None, switch=None, switch_port=None, layer=None, check=None, evidence=None, **extra):
    severity, default_layer, _meaning = FAULT_CODES[code]
    out = {
        "code": code,
        "severity": severity,
        "layer": layer or default_layer,
        "check": check,
        "node": node,
        "device": device,
        "switch": switch,
        "switch_port": None if switch_port is None else str(switch_port),
        "message": message,
    }
    if evidence:
        out["evidence"] = evidence
    out.update(extra)
    return out


def correlate(findings):
    """Refine suspect layers across checks (the port check knows what the benchmarks only see).

    A low-bandwidth or failing link on an endpoint that the port check flagged
    takes the port check's layer; NCCL findings name the endpoint when the
    port check found exactly one bad port on that node.
    """
    by_ep = {}
    for f in findings:
        if f.get("check") == "ports" and f.get("device"):
            by_ep.setdefault((f["node"], f["device"]), []).append(f)
    for f in findings:
        if f.get("check") != "ports" and f.get("device"):
            port = by_ep.get((f["node"], f["device"]))
            if port:
                f["layer"] = port[0]["layer"]
                f["related"] = [p["code"] for p in port]
        elif str(f.get("check", "")).startswith("nccl") and f.get("node") and not f.get("device"):
            # the NCCL log names the node; the port check may know the one port to blame
            same = [p[0] for (n, _device), p in by_ep.items() if n == f["node"] and p[0]["layer"] == f["layer"]]
            if len(same) == 1:
                f.update(device=same[0]["device"], switch=same[0]["switch"], switch_port=same[0]["switch_port"], related=[same[0]["code"]])
        elif str(f.get("check", "")).startswith("nccl") and f["code"] == "NCCL_BUSBW_LOW":
            port_layers = sorted({p[0]["layer"] for p in by_ep.values()})
            if len(port_layers) == 1 and f["layer"] == "pfc":
                f["layer"] = port_layers[0]
    return findings


def summarize(findings):
    counts = {}
    for f in findings:
        counts[f["code"]] = counts.get(f["code"], 0) + 1
    errors = [f for f in findings if f["severity"] == "error"]
    return {"passed": not errors, "errors": len(errors), "warnings": len(findings) - len(errors), "codes": counts}
