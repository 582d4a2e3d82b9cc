"""NIC firmware profiles: the mlxconfig settings for PCI performance and GPUDirect, per NIC generation.

The one table of these settings (intent key ``fabric.firmware.profile``; role
connectx_firmware passes the profile to module mlxconfig, which picks the
row of the device type ``mlxconfig q`` reports).

Facts from NVIDIA's nic-configuration-operator (github.com/Mellanox/
nic-configuration-operator, read at commit 8bfbeb34ba25, tag
network-operator-v26.7.0-beta.4-7; files pkg/configuration/configvalidation.go,
pkg/consts/consts.go, README.md, docs/nic-configuration-library.md, and the
history of configvalidation.go):

- ``pciPerformanceOptimized`` sets ``MAX_ACC_OUT_READ`` (maximum outstanding
  PCIe read requests). Its first version (commit ec4be7c, 2024-09) chose by
  the PCIe generation the NIC trained at: 44 on Gen4 (16 GT/s), 0 on Gen5;
  since commit a9153f9 (2024-11) it sets 0, which the PRM defines as *auto*
  (the firmware picks the best value), and skips the parameter with a warning
  on firmware whose default is not 0 (a firmware bug where 0 is unavailable).
- ``MAX_ACC_OUT_READ`` is hidden while ``ADVANCED_PCI_SETTINGS`` is off. Up
  to v26.7 the operator turned ``ADVANCED_PCI_SETTINGS=1`` on itself (and
  re-queried after a reset to see the hidden parameters); since commit
  cfaaaa3 (2026-06) it leaves that knob to the deployer and skips hidden
  parameters, reporting them. linerate sets it in the ``gpudirect`` profile
  (the deployer's choice, made in the intent) and, like the operator, skips
  a parameter the device does not report yet, naming it.
- ``gpuDirectOptimized`` (bare metal only, and only together with
  ``pciPerformanceOptimized``) sets ``ATS_ENABLED=0``: with ATS, peer-to-peer
  DMA between GPU and NIC goes through the root complex's address
  translation instead of straight across the PCIe switch.
- ``maxReadRequest`` (4096) is a runtime PCI setting (sysfs), not firmware:
  not in this table.
- ``roceOptimized`` sets ``ROCE_CC_PRIO_MASK_P*=255``, ``CNP_DSCP_P*=4``,
  ``CNP_802P_PRIO_P*=6``; linerate derives these from the RoCE intent
  instead (``fabric.roce.cnp_dscp`` / ``cnp_priority`` / ``ecn``), so they
  agree with the switches: not in this table either.

Profiles:

- ``gpudirect``: the operator's pciPerformanceOptimized + gpuDirectOptimized.
- ``default``: these parameters at their factory defaults (ADVANCED_PCI_SETTINGS
  and ATS off): what linerate set before profiles existed.
- ``none``: linerate leaves these parameters alone.

Stdlib only.
"""

PROFILES = ("gpudirect", "default", "none")

# mlxconfig's "Device type:" -> (generation label, PCIe generation of the card).
GENERATIONS = {
    "ConnectX6": ("ConnectX-6", 4),
    "ConnectX6DX": ("ConnectX-6 Dx", 4),
    "ConnectX6LX": ("ConnectX-6 Lx", 4),
    "BlueField2": ("BlueField-2", 4),
    "ConnectX7": ("ConnectX-7", 5),
    "BlueField3": ("BlueField-3", 5),
    "ConnectX8": ("ConnectX-8", 6),
    "ConnectX9": ("ConnectX-9", 6),
}

# MAX_ACC_OUT_READ by PCIe generation (operator commit ec4be7c): 44 on Gen4;
# 0 (auto) from Gen5 on, and on every generation since a9153f9 when the
# firmware offers 0. linerate keeps the per-generation value on Gen4 cards,
# whose firmware is the one with the auto-mode bug.
MAX_ACC_OUT_READ = {4: 44, 5: 0, 6: 0}

# The parameters every profile manages (so "none" and the rest agree on scope).
MANAGED = ("ADVANCED_PCI_SETTINGS", "MAX_ACC_OUT_READ", "ATS_ENABLED")


def generation(device_type):
    """(label, PCIe generation) of an mlxconfig device type, or (device_type, None) when unknown."""
    key = str(device_type or "").strip()
    for name, value in GENERATIONS.items():
        if name.lower() == key.lower():
            return value
    return (key or "unknown device", None)


def profile_params(profile, device_type):
    """The mlxconfig parameters of ``profile`` for a device of ``device_type``.

    Returns ``(params, notes)``: ``params`` {NAME: value} in mlxconfig's
    spelling; ``notes`` what was left out and why (an unknown generation gets
    no MAX_ACC_OUT_READ). Raises ValueError on an unknown profile.
    """
    if profile not in PROFILES:
        raise ValueError(f"firmware profile {profile!r} is not allowed (allowed: {' | '.join(PROFILES)})")
    if profile == "none":
        return {}, []
    if profile == "default":
        return {"ADVANCED_PCI_SETTINGS": False, "ATS_ENABLED": False}, []
    label, gen = generation(device_type)
    params = {"ADVANCED_PCI_SETTINGS": True, "ATS_ENABLED": False}
    notes = []
    if gen in MAX_ACC_OUT_READ:
        params["MAX_ACC_OUT_READ"] = MAX_ACC_OUT_READ[gen]
    else:
        notes.append(
            f"MAX_ACC_OUT_READ left alone: {label} is not a NIC generation the gpudirect profile knows (known: {', '.join(v[0] for v in GENERATIONS.values())})"
        )
    return params, notes
