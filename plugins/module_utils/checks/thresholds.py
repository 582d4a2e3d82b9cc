# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""Thresholds of the verification, read from the derived values the intent publishes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.linerate.fabric.plugins.module_utils.checks.errors import CheckError

# ---------------------------------------------------------------- thresholds


class NotPublished(CheckError):
    """A fabric without the derived values the validation publishes with it."""


def derived(fabric):
    """The intent's derived values (``intent.derive``) as the validation published them
    (``fabric_effective.derived``). Verification derives nothing of its own: a fabric without
    them (the raw ``fabric`` variable, a caller that skipped the validation) is refused with
    ``NotPublished``, naming what to pass instead."""
    d = fabric.get("derived") if isinstance(fabric, dict) else None
    if not isinstance(d, dict):
        raise NotPublished(
            "fabric: has no 'derived' values: pass fabric_effective as playbooks/validate.yml "
            "publishes it (module_utils/intent/fabric.py published()), not the raw fabric intent"
        )
    return d


def rdma_threshold_gbps(fabric):
    """ib_write_bw bandwidth (Gb/s) one port should reach."""
    return derived(fabric)["ib_write_bw_min_gbps"]


def nccl_threshold_gbytes(fabric, nics):
    """nccl-tests bus bandwidth (GB/s) one node's NICs should reach."""
    return round(derived(fabric)["nccl_busbw_min_gbytes_per_nic"] * nics, 3)


def nccl_loopback_threshold_gbytes(fabric, nics, ranks):
    """The NET loopback's bus bandwidth (GB/s) one node should reach: with P2P and SHM off every hop of
    its ring leaves through a NIC, so ``ranks`` ranks share ``nics`` NICs (8 GPUs on 8 rails: one NIC's
    worth, the per-NIC threshold)."""
    if nics < 1 or ranks < 1:
        raise ValueError(f"nics {nics}, ranks {ranks}: a loopback needs a NIC and a rank")
    return round(derived(fabric)["nccl_busbw_min_gbytes_per_nic"] * min(nics, ranks) / ranks, 3)
