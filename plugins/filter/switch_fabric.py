"""Filters deriving a switch's fabric ports from the inventory's cabling."""


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


class FilterModule:
    def filters(self):
        return {"switch_fabric_ports": fabric_ports}
