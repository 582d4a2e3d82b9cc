"""InfiniBand ports, ibv_devices, ofed_info, mst status -v, ibstat port errors."""

from labsim import hardware  # noqa: F401
from linerate_lab.tools import ibdev2netdev, ibstat, ibstatus, ibv_devinfo, mlxconfig, mst, ofed_info, show_gids


def make_ib(lab, lid=None):
    def change(node):
        for rail, nic in enumerate(node["nics"]):
            ib = hardware.new_nic(1, rail, "infiniband", 400, "leaf1", rail + 1)
            if lid:
                ib.update(lid=lid + rail, sm_lid=1)
            nic.clear()
            nic.update(ib)

    lab.update(change)
    lab.netdevs.update({n: dict(v, name=n) for n, v in {"ibp65s0": lab.netdevs["enp65s0f0np0"], "ibp193s0": lab.netdevs["enp193s0f0np0"]}.items()})


def test_infiniband_port_waits_for_the_subnet_manager(lab):
    make_ib(lab)
    out = lab.run(ibstat, ["mlx5_0", "1"])[1]
    assert "State: Initializing\nPhysical state: LinkUp\nRate: 400\nBase lid: 0\n" in out
    assert "Capability mask: 0xa751e848\nPort GUID: 0xa088c20300100100\nLink layer: InfiniBand\n" in out
    make_ib(lab, lid=12)
    out = lab.run(ibstatus, ["mlx5_1:1"])[1]
    assert "\tbase lid:\t 0xd\n\tsm lid:\t\t 0x1\n\tstate:\t\t 4: ACTIVE\n" in out
    assert "\tlink_layer:\t InfiniBand\n" in out
    out = lab.run(ibv_devinfo, ["-d", "mlx5_0", "-v"])[1]
    assert "\t\t\tsm_lid:\t\t\t1\n\t\t\tport_lid:\t\t12\n" in out
    assert "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:a088:c203:0010:0100\n" in out
    assert lab.run(ibdev2netdev, [])[1].startswith("mlx5_0 port 1 ==> ibp65s0 (Up)\n")
    assert "mlx5_0\t1\t0\tfe80:0000:0000:0000:a088:c203:0010:0100\t\t\tv1\t\n" in lab.run(show_gids, [])[1]
    assert lab.run(mlxconfig, ["-d", "mlx5_0", "q", "LINK_TYPE_P1"])[1].endswith("        LINK_TYPE_P1                                IB(1)               \n")


def test_ibstat_missing_port_warns(lab):
    rc, out, err = lab.run(ibstat, ["mlx5_0", "2"])
    assert (rc, out) == (0, "")
    assert "ca_stat: CA: 'mlx5_0' has no port number 2 - max (1)\n" in err
    assert "main: stat of IB device 'mlx5_0' failed\n" in err


def test_ibv_devices_and_ofed_info(lab):
    assert lab.run(ibv_devinfo, [], what="devices")[1] == (
        "    device          \t   node GUID\n    ------          \t----------------\n"
        "    mlx5_0          \ta088c20300100100\n    mlx5_1          \ta088c20300100110\n"
    )
    assert lab.run(ofed_info, ["-s"], release="MLNX_OFED_LINUX-23.10-2.1.3.1", ofed="23.10-2.1.3.1")[1] == "MLNX_OFED_LINUX-23.10-2.1.3.1:\n"
    assert lab.run(ofed_info, ["-n"], release="OFED-internal-24.10-1.1.4", ofed="24.10-1.1.4.0")[1] == "24.10-1.1.4.0\n"


def test_mst_status_and_stop(lab):
    assert "MST PCI configuration module is not loaded" in lab.run(mst, ["status"])[1]
    lab.run(mst, ["start"])
    out = lab.run(mst, ["status", "-v"])[1]
    assert "/dev/mst/mt4129_pciconf0" in out and "net-enp65s0f0np0" in out
    lab.run(mst, ["stop"])
    assert lab.run(mlxconfig, ["-d", "/dev/mst/mt4129_pciconf0", "q"])[0] == 3
