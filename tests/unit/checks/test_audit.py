"""The read-only audit's drift collection (module_utils/checks/audit.py) and its report mode."""

import json
import os
from xml.etree import ElementTree as ET

import pytest
import yaml

from ansible_collections.linerate.fabric.plugins.module_utils.checks import audit
from ansible_collections.linerate.fabric.plugins.module_utils.report import report
from ansible_collections.linerate.fabric.plugins.module_utils.report import junit as report_junit
from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown
from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults

from checks.test_plans import FABRIC

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# Shapes as the modules return them in check mode (--diff).
MLXCONFIG_DRIFT = {
    "changed": True,
    "device": "0000:41:00.0",
    "item": {"pci": "0000:41:00.0"},
    "before": {
        "CNP_DSCP_P1": {"default": "48", "current": "48", "next_boot": "10"},
        "LINK_TYPE_P1": {"default": "ETH(2)", "current": "ETH(2)", "next_boot": "ETH(2)"},
    },
    "after": {
        "CNP_DSCP_P1": {"default": "48", "current": "48", "next_boot": "48"},
        "LINK_TYPE_P1": {"default": "ETH(2)", "current": "ETH(2)", "next_boot": "ETH(2)"},
    },
    "pending_reset": False,
    "pending_params": [],
    "reset_kind": None,
    "commands": [["mlxconfig", "-d", "0000:41:00.0", "-y", "set", "CNP_DSCP_P1=48"]],
}
MLXCONFIG_PENDING = {
    "changed": False,
    "device": "0000:c1:00.0",
    "before": {"ATS_ENABLED": {"default": "False(0)", "current": "True(1)", "next_boot": "False(0)"}},
    "after": {"ATS_ENABLED": {"default": "False(0)", "current": "True(1)", "next_boot": "False(0)"}},
    "pending_reset": True,
    "pending_params": ["ATS_ENABLED"],
    "reset_kind": "cold_reboot",
    "reset_reason": "PCIe enumeration",
    "commands": [],
}
MLXCONFIG_CLEAN = {
    "changed": False,
    "device": "0000:41:00.0",
    "before": MLXCONFIG_DRIFT["after"],
    "after": MLXCONFIG_DRIFT["after"],
    "pending_reset": False,
    "pending_params": [],
}
ROCE_QOS_DRIFT = {
    "changed": True,
    "netdev": "enp65s0f0np0",
    "device": "mlx5_0",
    "item": {"device": "mlx5_0", "netdev": "enp65s0f0np0"},
    "before": {"trust": "pcp", "pfc": [0, 0, 0, 0, 0, 0, 0, 0], "mtu": 4200, "dscp2prio": {"26": 3, "48": 6}},
    "after": {"trust": "dscp", "pfc": [0, 0, 0, 1, 0, 0, 0, 0], "mtu": 4200, "dscp2prio": {"26": 3, "48": 6}},
    "commands": [["mlnx_qos", "-i", "enp65s0f0np0", "--trust", "dscp"]],
}
NCCL_CONF_DRIFT = {
    "changed": True,
    "dest": "/etc/nccl.conf",
    "diff": {
        "before": "# Ansible managed\nNCCL_IB_HCA=mlx5_0\nNCCL_IB_TC=0\nNCCL_DEBUG=WARN\n",
        "after": "# Ansible managed\nNCCL_IB_HCA==mlx5_0:1,mlx5_1:1\nNCCL_IB_TC=104\nNCCL_DEBUG=WARN\n",
        "before_header": "/etc/nccl.conf",
        "after_header": "/etc/nccl.conf",
    },
}
SKIPPED = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}


def codes(findings):
    return sorted((f["code"], f.get("node") or f.get("switch"), f.get("device"), f.get("key")) for f in findings)


def test_firmware_drift_names_node_device_pci_key_current_and_intended():
    found = audit.firmware_drift("node2", {"results": [MLXCONFIG_DRIFT]}, {"0000:41:00.0": "mlx5_0"})
    assert codes(found) == [("DRIFT_FIRMWARE", "node2", "mlx5_0", "CNP_DSCP_P1")]
    f = found[0]
    assert (f["current"], f["intended"], f["pci"], f["layer"], f["check"]) == ("10", "48", "0000:41:00.0", "firmware", "drift")
    assert f["severity"] == "error"
    assert "node2 mlx5_0 (0000:41:00.0)" in f["message"] and "CNP_DSCP_P1 is 10" in f["message"]


def test_firmware_pending_is_a_warning_not_drift():
    found = audit.firmware_drift("node1", {"results": [MLXCONFIG_PENDING, MLXCONFIG_CLEAN, SKIPPED]})
    assert codes(found) == [("FIRMWARE_PENDING", "node1", "0000:c1:00.0", "ATS_ENABLED")]
    assert found[0]["severity"] == "warning" and "cold_reboot" in found[0]["message"]
    assert (found[0]["current"], found[0]["intended"]) == ("True(1)", "False(0)")


def test_roce_qos_drift_one_finding_per_differing_key():
    found = audit.state_drift("roce_qos", "node3", {"results": [ROCE_QOS_DRIFT]})
    assert codes(found) == [("DRIFT_ROCE_QOS", "node3", "mlx5_0", "pfc"), ("DRIFT_ROCE_QOS", "node3", "mlx5_0", "trust")]
    trust = next(f for f in found if f["key"] == "trust")
    assert (trust["current"], trust["intended"], trust["layer"]) == ("pcp", "dscp", "pfc")


def test_nested_state_keys_are_flattened():
    r = dict(ROCE_QOS_DRIFT, before=dict(ROCE_QOS_DRIFT["after"], dscp2prio={"26": 0, "48": 6}))
    found = audit.state_drift("roce_qos", "node1", {"results": [r]})
    assert [(f["key"], f["current"], f["intended"]) for f in found] == [("dscp2prio.26", 0, 3)]


# One module execution for every port (roce_qos / rdma_netdev with ``ports``), as they return it in check mode.
ROCE_QOS_PORTS = {
    "changed": True,
    "commands": ROCE_QOS_DRIFT["commands"],
    "ports": [
        {
            "netdev": "enp65s0f0np0",
            "device": "mlx5_0",
            "port": 1,
            "changed": True,
            "before": ROCE_QOS_DRIFT["before"],
            "after": ROCE_QOS_DRIFT["after"],
            "commands": ROCE_QOS_DRIFT["commands"],
        },
        {
            "netdev": "enp193s0f0np0",
            "device": "mlx5_1",
            "port": 1,
            "changed": True,
            "before": dict(ROCE_QOS_DRIFT["after"], mtu=1500),
            "after": ROCE_QOS_DRIFT["after"],
            "commands": [["ip", "link", "set", "dev", "enp193s0f0np0", "mtu", "4200"]],
        },
        {
            "netdev": "enp66s0f0np0",
            "device": "mlx5_2",
            "port": 1,
            "changed": False,
            "before": ROCE_QOS_DRIFT["after"],
            "after": ROCE_QOS_DRIFT["after"],
            "commands": [],
        },
    ],
    "diff": [{"before": "", "after": ""}] * 3,
}
RDMA_NETDEV_PORTS = {
    "changed": True,
    "commands": [["ip", "addr", "add", "192.168.101.11/24", "dev", "enp193s0f0np0"]],
    "ports": [
        {
            "name": "enp65s0f0np0",
            "device": "mlx5_0",
            "changed": False,
            "before": {"up": True, "addresses": ["192.168.100.11/24"]},
            "after": {"up": True, "addresses": ["192.168.100.11/24"]},
            "commands": [],
        },
        {
            "name": "enp193s0f0np0",
            "device": None,
            "changed": True,
            "before": {"up": True, "addresses": []},
            "after": {"up": True, "addresses": ["192.168.101.11/24"]},
            "commands": [["ip", "addr", "add", "192.168.101.11/24", "dev", "enp193s0f0np0"]],
        },
    ],
}


def test_a_result_with_ports_is_one_result_per_port():
    found = audit.state_drift("roce_qos", "node3", ROCE_QOS_PORTS)
    assert codes(found) == [
        ("DRIFT_ROCE_QOS", "node3", "mlx5_0", "pfc"),
        ("DRIFT_ROCE_QOS", "node3", "mlx5_0", "trust"),
        ("DRIFT_ROCE_QOS", "node3", "mlx5_1", "mtu"),
    ]
    mtu = next(f for f in found if f["key"] == "mtu")
    assert (mtu["current"], mtu["intended"]) == (1500, 4200) and mtu["message"].startswith("node3 mlx5_1: mtu is 1500")
    # the same as a loop over the ports registers
    loop = {"results": [dict(p, item={"device": p["device"], "netdev": p["netdev"]}) for p in ROCE_QOS_PORTS["ports"]]}
    assert audit.state_drift("roce_qos", "node3", loop) == found
    assert [r["netdev"] for r in audit._results(ROCE_QOS_PORTS)] == ["enp65s0f0np0", "enp193s0f0np0", "enp66s0f0np0"]


def test_rdma_netdev_ports_are_named_by_device_or_netdev():
    found = audit.state_drift("rdma_netdev", "node2", RDMA_NETDEV_PORTS)
    assert codes(found) == [("DRIFT_HOST", "node2", "enp193s0f0np0", "addresses")]
    assert found[0]["intended"] == ["192.168.101.11/24"] and found[0]["layer"] == "interface_selection"
    named = dict(RDMA_NETDEV_PORTS, ports=[RDMA_NETDEV_PORTS["ports"][0], dict(RDMA_NETDEV_PORTS["ports"][1], device="mlx5_1")])
    assert codes(audit.state_drift("rdma_netdev", "node2", named)) == [("DRIFT_HOST", "node2", "mlx5_1", "addresses")]
    found = audit.drift_findings({"node2": {"layers": {"rdma_netdev": [RDMA_NETDEV_PORTS], "roce_qos": [ROCE_QOS_PORTS]}}})
    assert {(f["code"], f["device"]) for f in found} == {("DRIFT_HOST", "enp193s0f0np0"), ("DRIFT_ROCE_QOS", "mlx5_0"), ("DRIFT_ROCE_QOS", "mlx5_1")}


def test_a_failed_port_is_no_drift_the_others_still_are():
    failed = dict(
        ROCE_QOS_PORTS,
        failed=True,
        msg="1 of 3 ports failed (the others were done): enp65s0f0np0: ...",
        ports=[{"netdev": "enp65s0f0np0", "device": "mlx5_0", "port": 1, "failed": True, "msg": "mlnx_qos ...", "rc": 1}] + ROCE_QOS_PORTS["ports"][1:],
    )
    assert codes(audit.state_drift("roce_qos", "node3", failed)) == [("DRIFT_ROCE_QOS", "node3", "mlx5_1", "mtu")]
    skipped = dict(SKIPPED, ports=ROCE_QOS_PORTS["ports"])
    assert audit.state_drift("roce_qos", "node3", skipped) == []
    assert audit.state_drift("roce_qos", "node3", dict(ROCE_QOS_PORTS, changed=False, ports=[])) == []


def test_unchanged_failed_and_skipped_results_are_no_drift():
    quiet = [dict(ROCE_QOS_DRIFT, changed=False), dict(ROCE_QOS_DRIFT, failed=True), SKIPPED]
    assert audit.state_drift("roce_qos", "node1", {"results": quiet}) == []
    assert audit.file_drift("nccl_conf", "node1", dict(NCCL_CONF_DRIFT, changed=False)) == []
    assert audit.switch_drift("leaf1", {"changed": False, "commands": []}) == []


def test_nccl_conf_drift_names_each_line():
    found = audit.file_drift("nccl_conf", "node1", NCCL_CONF_DRIFT)
    assert codes(found) == [("DRIFT_NCCL_CONF", "node1", None, "NCCL_IB_HCA"), ("DRIFT_NCCL_CONF", "node1", None, "NCCL_IB_TC")]
    tc = next(f for f in found if f["key"] == "NCCL_IB_TC")
    assert (tc["current"], tc["intended"], tc["path"]) == ("0", "104", "/etc/nccl.conf")


def test_a_missing_file_and_a_file_changed_only_in_attributes():
    absent = {"changed": True, "dest": "/etc/nccl.conf", "diff": {"before": "", "after": "NCCL_IB_TC=104\n"}}
    found = audit.file_drift("nccl_conf", "node1", absent)
    assert [(f["key"], f["current"], f["intended"]) for f in found] == [("NCCL_IB_TC", "absent", "104")]
    mode_only = {"changed": True, "dest": "/etc/default/nccl", "diff": {"before": {"mode": "0600"}, "after": {"mode": "0644"}}}
    found = audit.file_drift("nccl_conf", "node1", mode_only)
    assert codes(found) == [("DRIFT_NCCL_CONF", "node1", None, "/etc/default/nccl")]


def test_a_result_without_before_after_still_is_named():
    apt = {"changed": True, "msg": "", "item": "perftest"}
    found = audit.state_drift("mofed", "node2", apt)
    assert codes(found) == [("DRIFT_HOST", "node2", None, "perftest")]


def test_host_files_result_one_finding_per_line_and_per_file_without_lines():
    # host_files (nccl_env's three files in one call): nccl.conf has a NAME=value delta, the profile
    # script changed only in its mode, the env file is missing (created): each file is named once.
    r = {
        "changed": True,
        "changed_paths": ["/etc/nccl.conf", "/etc/profile.d/nccl.sh", "/etc/default/nccl"],
        "files": [
            {"path": "/etc/nccl.conf", "action": "updated"},
            {"path": "/etc/profile.d/nccl.sh", "action": "attributes"},
            {"path": "/etc/default/nccl", "action": "created"},
        ],
        "diff": [NCCL_CONF_DRIFT["diff"], {"before_header": "/dev/null", "after_header": "/etc/default/nccl", "before": "", "after": "NCCL_IB_TC='104'\n"}],
    }
    found = audit.file_drift("nccl_conf", "node1", r)
    assert codes(found) == [
        ("DRIFT_NCCL_CONF", "node1", None, "/etc/profile.d/nccl.sh (attributes)"),
        ("DRIFT_NCCL_CONF", "node1", None, "NCCL_IB_HCA"),
        ("DRIFT_NCCL_CONF", "node1", None, "NCCL_IB_TC"),
        ("DRIFT_NCCL_CONF", "node1", None, "NCCL_IB_TC"),
    ]
    assert sorted(f["path"] for f in found if f["key"] == "NCCL_IB_TC") == ["/etc/default/nccl", "/etc/nccl.conf"]
    assert audit.file_drift("nccl_conf", "node1", dict(r, changed=False)) == []


def test_a_boot_unit_that_would_change_is_named_by_its_path_and_commands():
    unit = {
        "changed": True,
        "changed_paths": ["/etc/systemd/system/linerate-roce-qos.service"],
        "commands": [["systemctl", "daemon-reload"], ["systemctl", "enable", "linerate-roce-qos.service"]],
    }
    found = audit.state_drift("roce_qos", "node2", unit)
    assert codes(found) == [("DRIFT_ROCE_QOS", "node2", None, "/etc/systemd/system/linerate-roce-qos.service")]
    assert "would run: systemctl daemon-reload; systemctl enable linerate-roce-qos.service" in found[0]["message"]


def test_switch_drift_lists_the_commands():
    r = {"changed": True, "commands": [f"nv set interface swp{i} qos pfc profile linerate" for i in range(7)], "before": "a", "after": "b"}
    found = audit.switch_drift("leaf1", r)
    assert codes(found) == [("DRIFT_SWITCH", "leaf1", None, "running-config")]
    assert found[0]["switch"] == "leaf1" and found[0]["layer"] == "switch"
    assert "nv set interface swp0 qos pfc profile linerate" in found[0]["message"] and "(7 commands)" in found[0]["message"]
    assert len(found[0]["commands"]) == 7


def test_drift_findings_over_hosts_and_switches_and_the_check():
    hosts = {
        "node1": {
            "layers": {"firmware": [{}, {"results": [MLXCONFIG_DRIFT]}], "roce_qos": [{"results": [ROCE_QOS_DRIFT]}], "nccl_conf": [NCCL_CONF_DRIFT]},
            "devices": {"mlx5_0": {"pci": "0000:41:00.0"}, "mlx5_1": {"pci": "0000:c1:00.0"}},
        },
        "node2": {"layers": {"firmware": [{"results": [MLXCONFIG_CLEAN]}], "roce_qos": [SKIPPED]}},
        "node3": {},
    }
    found = audit.drift_findings(hosts, {"leaf1": {"changed": True, "commands": ["x"]}, "leaf2": {"changed": False}})
    assert {f["code"] for f in found} == {"DRIFT_FIRMWARE", "DRIFT_ROCE_QOS", "DRIFT_NCCL_CONF", "DRIFT_SWITCH"}
    assert next(f for f in found if f["code"] == "DRIFT_FIRMWARE")["device"] == "mlx5_0"
    check = audit.drift_check(found, ["node1", "node2", "node3"], ["leaf1", "leaf2"])
    assert not check["passed"]
    assert {c["name"]: c["ok"] for c in check["cases"]} == {
        "node1 drift": False,
        "node2 drift": True,
        "node3 drift": True,
        "leaf1 drift": False,
        "leaf2 drift": True,
    }
    assert audit.drift_check([], ["node1"], [])["passed"]


def test_unknown_layer_is_refused():
    with pytest.raises(ValueError, match="unknown audit layer 'qos'"):
        audit.host_drift("node1", {"qos": [ROCE_QOS_DRIFT]})


def test_every_drift_code_is_a_fault_code_and_documented():
    with open(os.path.join(REPO, "docs", "verification.md")) as f:
        doc = f.read()
    for code, _layer in set(audit.LAYER_CODES.values()):
        assert code in faults.FAULT_CODES and f"`{code}`" in doc
    for code in ("DRIFT_SWITCH", "FIRMWARE_PENDING"):
        assert f"`{code}`" in doc


def test_the_report_says_it_is_a_read_only_audit():
    found = audit.firmware_drift("node2", {"results": [MLXCONFIG_DRIFT]})
    doc = report.build_report(found, faults.summarize(found), {"drift": audit.drift_check(found, ["node2"])}, dict(FABRIC, name="lab"), mode=audit.MODE_TEXT)
    assert doc["mode"] == "audit: read-only, nothing was changed"
    json.dumps(doc)
    md = report_markdown.to_markdown(doc)
    assert md.startswith("# Fabric audit: FAILED") and "audit: read-only, nothing was changed" in md
    assert "DRIFT_FIRMWARE" in md
    junit = ET.fromstring(report_junit.to_junit(doc))
    assert junit.get("name") == "linerate-audit"
    prop = junit.find("testsuite/properties/property")
    assert prop.get("name") == "mode" and prop.get("value") == audit.MODE_TEXT
    plain = report.build_report([], faults.summarize([]), {}, dict(FABRIC, name="lab"))
    assert "mode" not in plain and report_markdown.to_markdown(plain).startswith("# Fabric verification: PASSED")


def _tasks(path):
    with open(path) as f:
        data = yaml.safe_load(f) or []
    for t in data:
        yield t
        for key in ("block", "rescue", "always"):
            yield from t.get(key) or []


READ_ONLY_MODULES = {"ansible.builtin.command", "ansible.builtin.slurp", "ansible.builtin.stat"}


def test_every_task_that_escapes_check_mode_only_reads():
    """The audit forces check mode; a task with check_mode: false runs anyway,
    so it must be one that only reads (a command with changed_when: false, slurp, stat)."""
    roles = os.path.join(REPO, "roles")
    seen = 0
    for role in os.listdir(roles):
        for sub in ("tasks", "handlers"):
            d = os.path.join(roles, role, sub)
            if not os.path.isdir(d):
                continue
            for name in os.listdir(d):
                for t in _tasks(os.path.join(d, name)):
                    if t.get("check_mode") is not False:
                        continue
                    seen += 1
                    module = next(k for k in t if k.startswith("ansible.builtin.") or k.startswith("linerate."))
                    assert module in READ_ONLY_MODULES, f"{role}/{sub}/{name}: {t.get('name')} ({module})"
                    if module == "ansible.builtin.command":
                        assert t.get("changed_when") is False, f"{role}/{sub}/{name}: {t.get('name')}"
    assert seen >= 5


def test_a_layer_that_failed_is_an_error_naming_the_node_layer_and_cause():
    hosts = {
        "node3": {
            "layers": {},
            "errors": [{"layer": "firmware", "role": "connectx_firmware", "task": "Query the firmware", "msg": "mlxconfig: -E- no device"}, "junk"],
        },
        "node1": {"layers": {}},
    }
    f = audit.drift_findings(hosts)
    assert [(x["code"], x["severity"], x["node"], x["check"]) for x in f] == [("AUDIT_LAYER_FAILED", "error", "node3", "drift")]
    assert "firmware layer could not be audited (role connectx_firmware at 'Query the firmware': mlxconfig: -E- no device)" in f[0]["message"]
    check = audit.drift_check(f, ["node1", "node3"])
    assert not check["passed"] and [c["ok"] for c in check["cases"]] == [True, False]


def test_audit_layers_run_one_by_one_with_a_rescue_each():
    with open(os.path.join(REPO, "playbooks", "audit.yml")) as fh:
        plays = yaml.safe_load(fh)
    host_play = next(p for p in plays if p.get("hosts") == "gpu_nodes" and p.get("check_mode") is True)
    layers = next(t for t in host_play["tasks"] if "audit_layer.yml" in str(t))
    assert [x["role"] for x in layers["loop"]] == ["mofed", "rdma_netdev", "connectx_firmware", "roce_qos", "nvidia_peermem", "nccl_env"]
    assert set(x["layer"] for x in layers["loop"]) <= set(audit.HOST_LAYERS)
    with open(os.path.join(REPO, "playbooks", "tasks", "audit_layer.yml")) as fh:
        block = yaml.safe_load(fh)[0]
    assert block["block"][0]["ansible.builtin.include_role"]["name"] == "{{ audit_layer.role }}"
    assert "audit_host_errors" in str(block["rescue"])


def test_audit_playbook_forces_check_mode_on_every_role_play():
    with open(os.path.join(REPO, "playbooks", "audit.yml")) as f:
        plays = yaml.safe_load(f)
    role_plays = [
        p
        for p in plays
        if "hosts" in p
        and (p.get("roles") or any(("include_role" in str(t) or "audit_layer.yml" in str(t)) and "verify_fabric" not in str(t) for t in p.get("tasks") or []))
    ]
    assert len(role_plays) >= 3
    assert all(p.get("check_mode") is True for p in role_plays), [p["name"] for p in role_plays]
    verify_play = next(p for p in plays if any((t.get("ansible.builtin.include_role") or {}).get("name") == "verify_fabric" for t in p.get("tasks") or []))
    v = verify_play["tasks"][0]["vars"]
    assert v["verify_fabric_read_only"] is True and v["verify_fabric_mode"] == audit.MODE_TEXT
