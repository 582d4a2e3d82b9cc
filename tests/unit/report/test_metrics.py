"""The Prometheus textfile of a report (module_utils/report/metrics.py): every value the report's, labels
escaped, the example alerts on documented metrics only."""

import os


from report.test_history import FLAP, make


import re


from ansible_collections.linerate.fabric.plugins.module_utils.report import metrics


def parse_prom(text):
    out = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.fullmatch(r"(\w+)\{(.*)\} (\S+)", line)
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        out[(m.group(1), tuple(sorted(labels.items())))] = float(m.group(3))
    return out


def value(samples, name, **labels):
    hits = [v for (n, ls), v in samples.items() if n == name and all(dict(ls).get(k) == x for k, x in labels.items())]
    assert len(hits) == 1, (name, labels, hits)
    return hits[0]


def test_metrics_values_match_the_report():
    doc = make(flaps=2, ber=2e-11, findings=[FLAP, dict(FLAP, code="PCIE_SLOT_LIMITED", severity="warning")])
    doc["history"] = {"last_pass": {"node1": "2026-11-26T10:00:00Z", "node2": "2026-11-25T10:00:00Z"}}
    text = metrics.node_metrics(doc)
    assert set(text) == {"node1", "node2"}
    s = parse_prom(text["node2"])
    assert value(s, "linerate_rdma_bandwidth_gbps", device="mlx5_1") == 391.0
    assert value(s, "linerate_rdma_bandwidth_gbps", device="mlx5_0") == 390.0
    assert value(s, "linerate_link_flaps_window", device="mlx5_1") == 2
    assert value(s, "linerate_link_errors_window", device="mlx5_1") == 6
    assert value(s, "linerate_link_effective_ber", device="mlx5_1") == 2e-11
    assert value(s, "linerate_incast_pause_frames", device="mlx5_0") == 17
    assert value(s, "linerate_incast_cnp_handled", device="mlx5_0") == 12
    assert value(s, "linerate_findings", code="LINK_FLAP", severity="error") == 1
    assert value(s, "linerate_findings", code="PCIE_SLOT_LIMITED", severity="warning") == 1
    assert value(s, "linerate_node_passed") == 0
    assert value(s, "linerate_nccl_busbw_gbytes", test="all_reduce_perf") == 180.5
    assert value(s, "linerate_last_run_timestamp_seconds") == metrics.epoch("2026-11-26T10:00:00Z")
    assert value(s, "linerate_last_pass_timestamp_seconds") == metrics.epoch("2026-11-25T10:00:00Z")
    assert all(dict(ls)["mode"] == "verify" and dict(ls)["fabric"] == "lab" and dict(ls)["node"] == "node2" for _n, ls in s)
    s1 = parse_prom(text["node1"])
    assert value(s1, "linerate_node_passed") == 1 and value(s1, "linerate_incast_ecn_marked", device="mlx5_0") == 40
    assert not [k for k in s1 if k[0] == "linerate_findings"]
    # one HELP and TYPE per metric
    assert text["node2"].count("# TYPE linerate_rdma_bandwidth_gbps gauge") == 1


def test_metrics_label_values_are_escaped():
    doc = make()
    doc["fabric"]["name"] = 'a"b\\c'
    assert 'fabric="a\\"b\\\\c"' in metrics.node_metrics(doc, ["node1"])["node1"]


def test_example_alert_rules_use_only_documented_metrics():
    import yaml

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    with open(os.path.join(root, "examples", "prometheus", "linerate-alerts.yml")) as f:
        rules = [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]]
    used = {m for r in rules for m in re.findall(r"\blinerate_\w+", r["expr"])}
    assert used and used <= set(metrics.HELP), used - set(metrics.HELP)
    doc = open(os.path.join(root, "docs", "audit.md")).read()
    assert all(f"`{name}`" in doc for name in metrics.HELP), [n for n in metrics.HELP if f"`{n}`" not in doc]
