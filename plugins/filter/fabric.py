"""Filters over linerate's facts, usable from templates and tasks."""

# Documentation: rdma_summary.yml beside this file (one file documents one filter).


def rdma_summary(ports):
    """['mlx5_0/1 enp65s0f0np0 Ethernet PORT_ACTIVE LinkUp 400G 4X mtu 4096 gid 3 fw 28.39.2048 numa 0', ...]"""
    lines = []
    for p in ports:
        gid = p.get("roce_v2_ipv4_gid_index")
        lines.append(
            f"{p['device']}/{p['port']} {p.get('netdev') or '-'} {p.get('link_layer')} {p.get('state')} "
            f"{p.get('physical_state')} {p.get('speed_gbps')}G {p.get('width') or '-'} "
            f"mtu {p.get('active_mtu')} gid {'-' if gid is None else gid} fw {p.get('fw_version')} "
            f"pci {p.get('pci') or '-'} numa {'-' if p.get('numa_node') is None else p.get('numa_node')}"
        )
    return lines


class FilterModule:
    def filters(self):
        return {"rdma_summary": rdma_summary}
