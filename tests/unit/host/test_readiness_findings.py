"""Host readiness findings (host/readiness_findings.py) on readiness facts: each NIC's and GPU's PCIe
link against the lower of both ends, MaxReadReq, affinity, ACS, IOMMU and limits, fleet parity, and a
GPU's link judged at rest (width) and under load (speed). The findings on facts the collector read from
the lab's tools are in test_readiness.py."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.findings import FAULT_CODES
from ansible_collections.linerate.fabric.plugins.module_utils.host import readiness_findings


# ---------------------------------------------------------------- findings


def _nic(**kw):
    base = {
        "device": "mlx5_1",
        "pci": "0000:c1:00.0",
        "lnkcap": {"speed_gts": 32.0, "gen": 5, "width": 16},
        "lnksta": {"speed_gts": 32.0, "gen": 5, "width": 16},
        "max_read_req": 4096,
        "gpu": {"index": 4, "link": "PIX", "pci": "0000:c2:00.0"},
        "path": [{"address": "0000:c0:00.0", "acs_ctl": {"SrcValid": False, "ReqRedir": False, "CmpltRedir": False}}],
    }
    base.update(kw)
    return base


def _facts(**kw):
    f = {"nics": [_nic()], "iommu": {"mode": "passthrough", "units": ["dmar0"]}, "memlock_kb": -1, "shm_bytes": 8 << 30, "unread": []}
    f.update(kw)
    return f


def test_healthy_facts_no_findings():
    assert readiness_findings.host_findings("node2", _facts()) == []


@pytest.mark.parametrize(
    "facts, code, extra",
    [
        (_facts(nics=[_nic(lnksta={"speed_gts": 32.0, "gen": 5, "width": 8})]), "PCIE_DEGRADED", "x8"),
        (_facts(nics=[_nic(lnksta={"speed_gts": 8.0, "gen": 3, "width": 16})]), "PCIE_DEGRADED", "Gen3 x16"),
        (
            _facts(
                nics=[_nic(path=[{"address": "0000:c0:00.0", "acs_ctl": {"SrcValid": True, "ReqRedir": True}}])],
            ),
            "ACS_ENABLED",
            "between mlx5_1 (0000:c1:00.0) and GPU4 (0000:c2:00.0): 0000:c0:00.0 SrcValid+ ReqRedir+",
        ),
        (_facts(nics=[_nic(max_read_req=512)]), "MAX_READ_REQ_LOW", "MaxReadReq 512 bytes"),
        (_facts(nics=[_nic(gpu={"index": 3, "link": "SYS", "pci": "0000:5d:00.0"})]), "GPU_NIC_AFFINITY", "GPU3 at SYS"),
    ],
)
def test_nic_findings_name_node_device_pci(facts, code, extra):
    f = readiness_findings.host_findings("node2", facts)
    assert [x["code"] for x in f] == [code]
    x = f[0]
    assert (x["node"], x["device"], x["pci_address"], x["check"]) == ("node2", "mlx5_1", "0000:c1:00.0", "readiness")
    assert extra in x["message"] and x["severity"] == FAULT_CODES[code][0]


def test_acs_one_finding_per_nic_naming_every_redirecting_bridge():
    path = [
        {"address": "0000:c0:00.0", "acs_ctl": {"ReqRedir": True, "CmpltRedir": True}},
        {"address": "0000:c0:01.0", "acs_ctl": {"SrcValid": False, "TransBlk": True}},
        {"address": "0000:bf:00.0", "acs_ctl": {"UpstreamFwd": True}},
    ]
    f = readiness_findings.host_findings("n", _facts(nics=[_nic(path=path)]))
    assert [(x["code"], x["bridge"], x["bridges"]) for x in f] == [("ACS_ENABLED", "0000:c0:00.0", ["0000:bf:00.0", "0000:c0:00.0"])]
    assert "0000:c0:00.0 ReqRedir+ CmpltRedir+" in f[0]["message"] and "0000:c0:01.0" not in f[0]["message"]


def test_acs_only_on_the_path_of_a_near_gpu_and_pxb_is_near():
    nic = _nic(gpu={"index": 4, "link": "PXB", "pci": "0000:c2:00.0"})
    assert readiness_findings.host_findings("n", _facts(nics=[nic])) == []


@pytest.mark.parametrize(
    "facts, code",
    [
        (_facts(iommu={"mode": "translated", "units": ["dmar0", "dmar1"]}), "IOMMU_NOT_PASSTHROUGH"),
        (_facts(memlock_kb=65536), "MEMLOCK_LIMITED"),
        (_facts(shm_bytes=64 << 20), "SHM_SMALL"),
    ],
)
def test_host_findings(facts, code):
    f = readiness_findings.host_findings("node3", facts)
    assert [(x["code"], x["node"]) for x in f] == [(code, "node3")]


def test_limits_are_thresholds():
    assert readiness_findings.host_findings("n", _facts(memlock_kb=8192), min_memlock_kb=8192) == []
    assert [x["code"] for x in readiness_findings.host_findings("n", _facts(memlock_kb=8191), min_memlock_kb=8192)] == ["MEMLOCK_LIMITED"]
    assert readiness_findings.host_findings("n", _facts(shm_bytes=1 << 30)) == []
    assert readiness_findings.host_findings("n", _facts(nics=[_nic(max_read_req=512)]), min_max_read_req=512) == []


def test_parity_names_the_odd_node_component_and_majority():
    def node(nccl, fw):
        return {"versions": {"kernel": "6.1", "nccl": nccl}, "nics": [{"device": "mlx5_0", "pci": "0000:41:00.0", "fw_ver": fw, "psid": "MT_0000000838"}]}

    f = readiness_findings.parity_findings(
        {"node1": node("2.21.5", "28.39.2048"), "node2": node("2.21.5", "28.39.2048"), "node3": node("2.18.3", "28.38.1002")}
    )
    assert [(x["code"], x["node"], x["device"], x["component"], x["value"], x["majority"]) for x in f] == [
        ("VERSION_SKEW", "node3", None, "nccl", "2.18.3", "2.21.5"),
        ("VERSION_SKEW", "node3", "mlx5_0", "connectx_firmware", "28.38.1002", "28.39.2048"),
    ]
    assert f[1]["pci_address"] == "0000:41:00.0"
    assert readiness_findings.parity_findings({"a": node("2.21.5", "1"), "b": node("2.21.5", "1")}) == []


def test_parity_ignores_unread_values_and_compares_firmware_per_psid():
    a = {"versions": {"nccl": None}, "nics": [{"device": "mlx5_0", "fw_ver": "22.1", "psid": "MT_A"}]}
    b = {"versions": {"nccl": "2.21.5"}, "nics": [{"device": "mlx5_0", "fw_ver": "28.1", "psid": "MT_B"}]}
    assert readiness_findings.parity_findings({"a": a, "b": b}) == []


# ---------------------------------------------------------------- PCIe links against the right reference

GEN5, GEN4, GEN3 = ({"speed_gts": 32.0, "gen": 5}, {"speed_gts": 16.0, "gen": 4}, {"speed_gts": 8.0, "gen": 3})


def _up(cap, sta=None, address="0000:c0:00.0"):
    return {"address": address, "port_type": "Downstream Port", "lnkcap": cap, "lnksta": sta or cap}


@pytest.mark.parametrize(
    "own, slot, sta, want",
    [
        # healthy: trained at what both ends can do
        (dict(GEN5, width=16), dict(GEN5, width=16), dict(GEN5, width=16), []),
        # a Gen5 NIC in a Gen4 slot at Gen4 x16: full speed for the slot - a warning naming the slot
        (dict(GEN5, width=16), dict(GEN4, width=16), dict(GEN4, width=16), ["PCIE_SLOT_LIMITED"]),
        # an x8 slot at x8
        (dict(GEN5, width=16), dict(GEN5, width=8), dict(GEN5, width=8), ["PCIE_SLOT_LIMITED"]),
        # below both ends: the error, whatever the slot
        (dict(GEN5, width=16), dict(GEN4, width=16), dict(GEN3, width=16), ["PCIE_DEGRADED"]),
        (dict(GEN5, width=16), dict(GEN5, width=16), dict(GEN4, width=16), ["PCIE_DEGRADED"]),
        (dict(GEN5, width=16), dict(GEN5, width=8), dict(GEN5, width=4), ["PCIE_DEGRADED"]),
        # an older NIC in a newer slot: its own capability is the reference
        (dict(GEN4, width=16), dict(GEN5, width=16), dict(GEN4, width=16), []),
        (dict(GEN4, width=16), dict(GEN5, width=16), dict(GEN3, width=16), ["PCIE_DEGRADED"]),
    ],
)
def test_pcie_link_against_the_lower_of_both_ends(own, slot, sta, want):
    nic = _nic(lnkcap=own, lnksta=dict(sta, downgraded=sta != own), upstream=_up(slot))
    f = [x for x in readiness_findings.host_findings("node1", _facts(nics=[nic])) if x["code"].startswith("PCIE")]
    assert [x["code"] for x in f] == want
    for x in f:
        assert x["severity"] == FAULT_CODES[x["code"]][0] and x["upstream"] == "0000:c0:00.0"
        assert x["device"] == "mlx5_1" and x["pci_address"] == "0000:c1:00.0"
        assert "upstream port 0000:c0:00.0 (Downstream Port)" in x["message"]
    if want == ["PCIE_SLOT_LIMITED"]:
        assert f[0]["severity"] == "warning" and f[0]["slot"] == "0000:c0:00.0" and "limit of its slot" in f[0]["message"]
    if want == ["PCIE_DEGRADED"]:
        assert "below what both ends can do" in f[0]["message"]


def test_pcie_without_the_upstream_port_falls_back_to_the_devices_own_capability():
    nic = _nic(lnkcap=dict(GEN5, width=16), lnksta=dict(GEN4, width=16))
    (x,) = [x for x in readiness_findings.host_findings("node1", _facts(nics=[nic])) if x["code"].startswith("PCIE")]
    assert x["code"] == "PCIE_DEGRADED" and "upstream port not seen by lspci" in x["message"]


def test_gpu_pcie_links_are_judged_too():
    gpus = [
        {
            "index": 0,
            "pci": "0000:42:00.0",
            "lnkcap": dict(GEN5, width=16),
            "lnksta": dict(GEN4, width=16),
            "upstream": _up(dict(GEN4, width=16), address="0000:40:01.0"),
        },
        {
            "index": 4,
            "pci": "0000:c2:00.0",
            "lnkcap": dict(GEN5, width=16),
            "lnksta": dict(GEN5, width=8),
            "upstream": _up(dict(GEN5, width=16), address="0000:c0:01.0"),
        },
        {
            "index": 5,
            "pci": "0000:d2:00.0",
            "lnkcap": dict(GEN5, width=16),
            "lnksta": dict(GEN5, width=16),
            "upstream": _up(dict(GEN5, width=16), address="0000:d0:01.0"),
        },
    ]
    f = [x for x in readiness_findings.host_findings("node1", _facts(gpus=gpus)) if x["code"].startswith("PCIE")]
    assert [(x["code"], x["device"], x["gpu"], x["upstream"]) for x in f] == [
        ("PCIE_SLOT_LIMITED", "GPU0", 0, "0000:40:01.0"),
        ("PCIE_DEGRADED", "GPU4", 4, "0000:c0:01.0"),
    ]


# ---------------------------------------------------------------- GPUs train their link down at rest (issue 35)


def _gpu(index=4, rest=None, **kw):
    g = {
        "index": index,
        "pci": "0000:c2:00.0",
        "driver": "550.54.15",
        "lnkcap": dict(GEN5, width=16),
        "lnksta": rest or {"speed_gts": 2.5, "gen": 1, "width": 16, "downgraded": True},
        "upstream": _up(dict(GEN5, width=16), address="0000:c0:01.0"),
        "busy": [],
    }
    g.update(kw)
    return g


def _pcie(facts):
    return [x for x in readiness_findings.host_findings("node7", facts) if x["code"].startswith("PCIE")]


def test_an_idle_gpu_below_its_maximum_speed_is_no_finding_and_says_why():
    facts = _facts(gpus=[_gpu()])
    assert _pcie(facts) == []
    (note,) = readiness_findings.gpu_link_notes(facts)
    assert note["gpu"] == 4 and note["state"] == "at rest" and note["speed_judged"] is False
    assert "not a finding (GPUs train down at rest)" in note["note"] and "load_command is empty" in note["note"]
    facts = _facts(gpus=[_gpu(load_unjudged="the load workload all_reduce_perf did not start (not found)")])
    assert _pcie(facts) == [] and "did not start" in readiness_findings.gpu_link_notes(facts)[0]["note"]


def test_a_gpu_narrower_at_rest_is_degraded_its_width_does_not_change_with_power_state():
    (x,) = _pcie(_facts(gpus=[_gpu(rest={"speed_gts": 2.5, "gen": 1, "width": 8})]))
    assert (x["code"], x["node"], x["device"], x["gpu"], x["pci_address"], x["slot"]) == ("PCIE_DEGRADED", "node7", "GPU4", 4, "0000:c2:00.0", "0000:c0:01.0")
    assert "x8 (width at rest; its speed at rest is not judged)" in x["message"]
    assert x["evidence"]["state"] == "at rest" and "trains up under load" in x["evidence"]["speed_unjudged"]


def test_a_gpu_below_its_maximum_under_load_is_degraded_naming_node_gpu_and_slot():
    load = {"workload": "all_reduce_perf (pid 4242)", "lnksta": {"speed_gts": 2.5, "gen": 1, "width": 16}}
    (x,) = _pcie(_facts(gpus=[_gpu(under_load=load)]))
    assert (x["code"], x["severity"], x["node"], x["device"], x["gpu"], x["pci_address"], x["slot"], x["upstream"]) == (
        "PCIE_DEGRADED",
        "error",
        "node7",
        "GPU4",
        4,
        "0000:c2:00.0",
        "0000:c0:01.0",
        "0000:c0:01.0",
    )
    assert x["message"].startswith("GPU4 (0000:c2:00.0) trained at PCIe Gen1 x16 (2.5 GT/s) under load (all_reduce_perf (pid 4242))")
    assert "upstream port 0000:c0:01.0" in x["message"]
    # at full speed under load: nothing, and the note says what it trained up to
    load = dict(load, lnksta=dict(GEN5, width=16))
    facts = _facts(gpus=[_gpu(under_load=load)])
    assert _pcie(facts) == []
    assert readiness_findings.gpu_link_notes(facts)[0]["note"].startswith("under load (all_reduce_perf (pid 4242)): Gen5 x16")


def test_a_gpu_already_running_a_process_is_judged_on_the_reading_at_rest():
    busy = [{"pid": 77, "name": "python3"}]
    (x,) = _pcie(_facts(gpus=[_gpu(busy=busy, rest={"speed_gts": 16.0, "gen": 4, "width": 16})]))
    assert x["code"] == "PCIE_DEGRADED" and "Gen4 x16 (16.0 GT/s) under load (python3 (pid 77) ran on it)" in x["message"]
    assert _pcie(_facts(gpus=[_gpu(busy=busy, rest=dict(GEN5, width=16))])) == []


def test_a_gpu_in_a_gen4_slot_at_rest_warns_about_the_slot_not_about_rest():
    g = _gpu(upstream=_up(dict(GEN4, width=16), address="0000:c0:01.0"))
    (x,) = _pcie(_facts(gpus=[g]))
    assert x["code"] == "PCIE_SLOT_LIMITED" and "at most Gen4 x16 (16.0 GT/s) (at rest Gen1 x16" in x["message"]


def test_a_gpu_from_nvidia_smi_alone_uses_its_max_fields():
    smi = {"gen_current": 1, "gen_max": 5, "gen_gpumax": 5, "gen_hostmax": 5, "width_current": 16, "width_max": 16}
    g = {"index": 2, "pci": "0000:3a:00.0", "driver": "550.54.15", "smi_link": smi, "busy": []}
    assert _pcie(_facts(gpus=[g])) == []  # Gen1 at rest below gen.max 5: not a finding
    (x,) = _pcie(_facts(gpus=[dict(g, smi_link=dict(smi, width_current=8))]))
    assert x["code"] == "PCIE_DEGRADED" and x["gpu"] == 2 and "x8" in x["message"]
    (x,) = _pcie(_facts(gpus=[dict(g, under_load={"workload": "w (pid 1)", "smi_link": dict(smi, gen_current=3)})]))
    assert x["code"] == "PCIE_DEGRADED" and "Gen3 x16 (8.0 GT/s) under load" in x["message"]


def test_a_nic_below_its_maximum_is_still_degraded_nics_do_not_train_down():
    nic = _nic(lnksta={"speed_gts": 2.5, "gen": 1, "width": 16}, upstream=_up(dict(GEN5, width=16)))
    (x,) = _pcie(_facts(nics=[nic]))
    assert x["code"] == "PCIE_DEGRADED" and x["device"] == "mlx5_1" and "gpu" not in x
