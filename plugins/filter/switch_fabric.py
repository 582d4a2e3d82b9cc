"""Filters deriving a switch's fabric ports from the inventory's cabling, its platform from
switch_platform or ansible_network_os (module_utils/switch/network_os.py), and an EOS switch's platform
profile and the values the fabric templates render that are derived from the intent
(module_utils/switch/profiles.py)."""

from ansible.errors import AnsibleFilterError
from ansible_collections.linerate.fabric.plugins.module_utils.intent.cabling import fabric_ports
from ansible_collections.linerate.fabric.plugins.module_utils.switch import network_os
from ansible_collections.linerate.fabric.plugins.module_utils.switch import profiles as switch_profiles


def switch_platform(value, name="", strict=False):
    """nvue | sonic | eos for a switch_platform or ansible_network_os value, short or collection-qualified
    (nvidia.nvue.nvue, cumulus, arista.eos.eos, dellemc.enterprise_sonic.sonic, ...).

    A value that names no platform comes back as it is (the switch modules then refuse it naming the
    switch); with ``strict`` it fails naming the switch, the value and the allowed values."""
    platform = network_os.normalize(value)
    if platform is not None:
        return platform
    if strict:
        raise AnsibleFilterError(f"switch {name}: ansible_network_os (or switch_platform) is {value!r}: allowed: {network_os.ALLOWED}")
    return value


def eos_profile(family=None):
    """The EOS platform profile of ``family`` (None or '': the default family): family, mtu_max,
    queue (tx-queue | uc-tx-queue), lane_gbps, speeds {gbps: speed form}."""
    try:
        return switch_profiles.eos_profile(family)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from None


def eos_speed(profile, gbps, port=""):
    """The ``speed`` form for ``gbps`` in an EOS profile (from switch_eos_profile), e.g. 400g-8;
    fails naming the port, the family and the forms it has when there is none."""
    speeds = {str(k): v for k, v in (profile.get("speeds") or {}).items()}
    form = speeds.get(str(gbps))
    if form is None:
        raise AnsibleFilterError(
            f"EOS {profile.get('family')} has no speed form for {gbps} Gb/s on {port} "
            f"(it has {', '.join(speeds.values())}): set switch_eos_family or the port speed"
        )
    return form


def fabric_derived(platform, **intent):
    """The derived values a switch's fabric template renders (profiles.fabric_derived): mtu (switch_mtu),
    the ECN thresholds in bytes, the SONiC object names, NVUE's ECN word and ETS."""
    try:
        return switch_profiles.fabric_derived(platform, **intent)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"switch_fabric_derived: {exc}") from None


class FilterModule:
    def filters(self):
        return {
            "switch_fabric_ports": fabric_ports,
            "switch_eos_profile": eos_profile,
            "switch_eos_speed": eos_speed,
            "switch_platform": switch_platform,
            "switch_fabric_derived": fabric_derived,
        }
