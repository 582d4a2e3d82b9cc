"""Filters of the NCCL environment of one host: the logic is module_utils/intent/nccl_env.py.

``nccl_env_settings(rdma, cabled, options)`` returns
``{"settings": {NCCL_*: str} (ordered), "hcas": [{device, port, netdev}],
"excluded": [msg], "problems": [msg]}``; the role fails on ``problems`` and
warns about ``excluded``.
"""

from ansible_collections.linerate.fabric.plugins.module_utils.intent.nccl_env import nccl_env_settings, nccl_tuned_settings, shell_quote


class FilterModule:
    def filters(self):
        return {"nccl_env_settings": nccl_env_settings, "nccl_shell_quote": shell_quote, "nccl_tuned_settings": nccl_tuned_settings}
