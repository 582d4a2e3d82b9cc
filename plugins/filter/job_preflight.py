"""Filter job_preflight_script: the job's own preflight (module_utils/intent/preflight.py)."""

from ansible.errors import AnsibleFilterError
from ansible_collections.linerate.fabric.plugins.module_utils.intent import preflight


def job_preflight_script(params):
    """The preflight's POSIX sh text for ``params``; AnsibleFilterError naming every bad key."""
    try:
        return preflight.preflight_script(params)
    except ValueError as e:
        raise AnsibleFilterError(str(e)) from None


class FilterModule:
    def filters(self):
        return {"job_preflight_script": job_preflight_script}
