"""A report is written whatever fails: every node unreachable (issue 40 point 8).

playbooks/verify.yml against a copy of the lab's inventory whose nodes answer nowhere (127.0.0.1 port 1:
the connection is refused at once). Nothing of the lab is touched: with only the ports check no switch is
read, and no node is reached. Before, Ansible ended the run when every node of the verify play failed (a
whole batch failed) and no report was written; now each node's rescue records why, the report play writes
the report naming every node unreachable, updates latest, and then fails the nodes.
"""

import json
import os
import re
import shutil
from xml.etree import ElementTree as ET

import pytest

from conftest import REPO, run_playbook

LAB_HOSTS = os.path.join(REPO, "inventory", "lab", "hosts.yml")
# Ansible's ssh connection plugin (ansible/plugins/connection/ssh.py) words a refused port three ways, by which
# side of the race notices first: "Failed to connect to the host via ssh: ... Connection refused", or, where it
# wrote to an ssh that had already exited, "Data could not be sent to remote host '127.0.0.1'. Make sure ..."
# (its own repr) or 'Data could not be sent to remote host "127.0.0.1". Make sure ...: <ssh's stderr>'.
UNREACHABLE = re.compile(r"Failed to connect to the host via ssh: .*Connection refused|Data could not be sent to remote host ['\"]127\.0\.0\.1['\"]")


@pytest.fixture
def down_inventory(lab, tmp_path):
    """The lab's inventory (the ``lab`` fixture brings it up and writes hosts.yml) with every GPU node
    at an address that refuses SSH."""
    assert os.path.exists(LAB_HOSTS), "lab/labctl.py up wrote no inventory/lab/hosts.yml"
    inv = tmp_path / "down"
    shutil.copytree(os.path.join(REPO, "inventory", "lab", "group_vars"), inv / "group_vars")
    text = open(LAB_HOSTS, encoding="utf-8").read()
    nodes = re.findall(r"^        (node\d+):\n          ansible_host: \S+$", text, flags=re.M)
    text = re.sub(r"^(        node\d+:\n)(          )ansible_host: \S+$", r"\1\2ansible_host: 127.0.0.1\n\2ansible_port: 1", text, flags=re.M)
    (inv / "hosts.yml").write_text(text, encoding="utf-8")
    assert nodes
    return inv, nodes


def test_every_node_unreachable_still_writes_the_report_naming_each(down_inventory, tmp_path):
    inv, nodes = down_inventory
    out = tmp_path / "output"
    res = run_playbook(
        "playbooks/verify.yml",
        "-e",
        '{"verify_fabric_checks": ["ports"]}',
        "-e",
        "verify_fabric_reachable_timeout=5",
        "-e",
        f"linerate_output_dir={out}",
        inventory=str(inv),
        timeout=600,
    )
    assert res.returncode != 0, res.stdout[-3000:]
    latest = out / "reports" / "latest"
    assert latest.is_symlink() and (latest / "report.json").exists(), res.stdout[-4000:]
    report = json.loads((latest / "report.json").read_text())
    assert report["summary"]["passed"] is False
    nv = {f["node"]: f for f in report["findings"] if f["code"] == "NODE_NOT_VERIFIED"}
    assert sorted(nv) == sorted(nodes)
    for node, f in nv.items():
        assert f["reason"] == "unreachable" and f["severity"] == "error", f
        assert f["message"].startswith(f"{node}: not verified: unreachable"), f
        # the transport's own error, in whichever of Ansible's forms the race gives (UNREACHABLE), naming the address
        assert UNREACHABLE.search(f["message"]) and "127.0.0.1" in f["message"], f
    assert report["checks"]["nodes"]["verified"] == 0 and report["meta"]["nodes"] == []
    md = (latest / "summary.md").read_text()
    assert md.startswith("# Fabric verification: FAILED") and "0/4 nodes in scope verified" in md
    assert (latest / "report.html").read_text().startswith("<!DOCTYPE html>")
    root = ET.parse(latest / "junit.xml").getroot()
    assert {c.get("name") for c in root.iter("testcase") if c.find("failure") is not None} >= {f"{n} verified" for n in nodes}
    # every node still ends failed in the recap, after the report was written
    for node in nodes:
        assert re.search(rf"^{node}\s+: .*failed=1 .*rescued=1", res.stdout, flags=re.M), res.stdout[-2000:]
