"""The NCCL parsers, kept at their old import path: ``parse_nccl_tests``
(nccl_tests.py, nccl-tests results) and ``parse_nccl_log`` (nccl_log.py,
NCCL_DEBUG=INFO logs) are two modules; import them from there.
"""
# pylint: disable=unused-import
from ansible_collections.linerate.fabric.plugins.module_utils.nccl_log import parse_nccl_log  # noqa: F401
from ansible_collections.linerate.fabric.plugins.module_utils.nccl_tests import parse_nccl_tests  # noqa: F401
