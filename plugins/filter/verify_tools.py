"""Filter for the verify_fabric role: the nccl-tests install plan (module_utils.host.verify_tools)."""

from ansible.errors import AnsibleFilterError
from ansible_collections.linerate.fabric.plugins.module_utils.host import verify_tools


def verify_tools_plan(method, version, url="", installed=None):
    try:
        return verify_tools.tools_plan(method, version, url, installed)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    def filters(self):
        return {"verify_tools_plan": verify_tools_plan}
