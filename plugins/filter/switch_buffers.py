"""Filter for the SONiC template: the lossless buffer profile of each fabric port speed
(module_utils/switch/buffers.py), validated (a clear error naming key, value and what is allowed)."""

from ansible.errors import AnsibleFilterError
from ansible_collections.linerate.fabric.plugins.module_utils.switch import buffers as switch_buffers


def sonic_lossless_profiles(
    ports,
    cable,
    extra=None,
    detection_ms=switch_buffers.PFCWD_DEFAULT_MS,
    restoration_ms=switch_buffers.PFCWD_DEFAULT_MS,
    action=switch_buffers.PFCWD_DEFAULT_ACTION,
    hwsku=None,
):
    """{speed_mbps (str): {"name", "size", "xon", "xoff", "dynamic_th", "fields"}} from the SKU's own
    pg_profile_lookup.ini (``hwsku``) or sonic-swss's rows, with ``extra`` over them."""
    try:
        profiles = switch_buffers.sonic_lossless(ports, cable, extra, detection_ms, restoration_ms, action, hwsku or None)
        return {str(k): v for k, v in profiles.items()}
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def eos_pfcwd(action=switch_buffers.PFCWD_DEFAULT_ACTION, detection_ms=switch_buffers.PFCWD_DEFAULT_MS, restoration_ms=switch_buffers.PFCWD_DEFAULT_MS):
    """EOS's per-port PFC watchdog settings {"action", "timeout", "recovery_time"} (module_utils/switch/buffers.py)."""
    try:
        return switch_buffers.eos_pfcwd(action, detection_ms, restoration_ms)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"switch_sonic_lossless": sonic_lossless_profiles, "switch_eos_pfcwd": eos_pfcwd}
