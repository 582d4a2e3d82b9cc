"""Thresholds of the verification (module_utils/checks/thresholds.py), read from what the intent publishes."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.checks import thresholds as checks_thresholds
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published

from checks.test_plans import FABRIC, INTENT


def test_thresholds_from_intent():
    assert checks_thresholds.rdma_threshold_gbps(FABRIC) == 360.0
    assert checks_thresholds.rdma_threshold_gbps(published(dict(INTENT, link_speed_gbps=200, verify={"ib_write_bw_fraction": 0.85}))) == 170.0
    assert checks_thresholds.nccl_threshold_gbytes(FABRIC, 8) == 320.0  # 0.8 x 8 x 400 Gb/s / 8
    assert checks_thresholds.nccl_threshold_gbytes(FABRIC, 2) == 80.0


def test_the_thresholds_are_the_published_ones_and_a_raw_intent_is_refused():
    assert checks_thresholds.derived(FABRIC) is FABRIC["derived"]
    assert checks_thresholds.rdma_threshold_gbps(FABRIC) == FABRIC["derived"]["ib_write_bw_min_gbps"]
    with pytest.raises(checks_thresholds.NotPublished, match="fabric: has no 'derived' values"):
        checks_thresholds.rdma_threshold_gbps(INTENT)
    with pytest.raises(checks_thresholds.NotPublished):
        checks_thresholds.derived(None)
