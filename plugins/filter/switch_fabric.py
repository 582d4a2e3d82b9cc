"""Filters deriving a switch's fabric ports from the inventory's cabling, its platform from
switch_platform or ansible_network_os (module_utils/switch/network_os.py), and an EOS switch's platform
profile (module_utils/switch/profiles.py)."""
from ansible.errors import AnsibleFilterError

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
        raise AnsibleFilterError(f"switch {name}: ansible_network_os (or switch_platform) is {value!r}: "
                                 f"allowed: {network_os.ALLOWED}")
    return value


def fabric_ports(hostvars, hosts, switch, link_speed_gbps=None, extra=None):
    """Ports of ``switch`` that carry the RDMA fabric, sorted by name.

    From every host's ``rdma_ports`` entry whose ``switch`` is this switch,
    from this switch's own ``switch_uplinks`` and from the other switches'
    uplinks that land on it (``peer``/``peer_port``), plus ``extra``.
    Returns [{"name", "peer", "speed_gbps"}].
    """
    ports = {}

    def add(name, peer, speed):
        if not name:
            return
        ports.setdefault(str(name), {"name": str(name), "peer": peer,
                                     "speed_gbps": int(speed) if speed else None})

    for h in hosts:
        hv = hostvars[h]
        for rp in hv.get("rdma_ports") or []:
            if rp.get("switch") == switch:
                add(rp.get("switch_port"), f"{h}:{rp.get('device')}", rp.get("speed_gbps", link_speed_gbps))
        for up in hv.get("switch_uplinks") or []:
            if h == switch:
                add(up.get("port"), f"{up.get('peer')}:{up.get('peer_port')}", up.get("speed_gbps", link_speed_gbps))
            elif up.get("peer") == switch:
                add(up.get("peer_port"), f"{h}:{up.get('port')}", up.get("speed_gbps", link_speed_gbps))
    for e in extra or []:
        add(e.get("name"), e.get("peer", ""), e.get("speed_gbps", link_speed_gbps))

    def key(p):
        import re
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p["name"])]
    return sorted(ports.values(), key=key)


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
        raise AnsibleFilterError(f"EOS {profile.get('family')} has no speed form for {gbps} Gb/s on {port} "
                                 f"(it has {', '.join(speeds.values())}): set switch_eos_family or the port speed")
    return form


class FilterModule:
    def filters(self):
        return {"switch_fabric_ports": fabric_ports, "switch_eos_profile": eos_profile,
                "switch_eos_speed": eos_speed, "switch_platform": switch_platform}
