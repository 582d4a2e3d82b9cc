"""The pluggable module in each simulated NIC's cage, one state for every tool that reads it.

``mlxlink -m`` reads the module through the NIC firmware (the PDDR register's module page, mstflint
``mlxlink_commander.cpp`` ``showModuleInfo``); ``ethtool -m`` reads its EEPROM pages through the
kernel (mlx5 ``get_module_eeprom_by_page``, the MCIA register). Both print what ``module(nic)``
returns, so a fault shows in both: ``optic-degrade NODE DEVICE`` sets ``nic["optics"]``
(``rx_power_dbm``, ``temperature_c``). ``module-eeprom-error NODE DEVICE`` sets
``nic["module_eeprom_error"]``: the EEPROM reads fail (ethtool -m), the firmware's view does not
(mlxlink -m still shows the module), which is how the two paths fail apart on real mlx5 ports.

The values and thresholds are this simulator's, in the range of an 850 nm SR optic: a 400G port
carries an OSFP (CMIS) NVIDIA MMA4Z00-NS, a slower one a QSFP28 (SFF-8636) MMA1B00-C100D, as
``mlxlink`` has always said. Alarm thresholds are the ones mlxlink prints; the warning thresholds,
which only ethtool prints, sit inside them.
"""

# (low, high) alarm thresholds: mlxlink prints them beside each value ([low..high]), ethtool as
# "<what> low/high alarm threshold"
ALARMS = {"temperature_c": (-5, 75), "voltage_mv": (2970, 3630), "bias_ma": (2, 15), "rx_power_dbm": (-10.41, 6), "tx_power_dbm": (-8.508, 5)}
WARNINGS = {"temperature_c": (0, 70), "voltage_mv": (3135, 3465), "bias_ma": (3, 13), "rx_power_dbm": (-7.4, 3), "tx_power_dbm": (-5.5, 3)}
HEALTHY = {"temperature_c": 52, "voltage_mv": 3261.2, "bias_ma": 8.38, "rx_power_dbm": 1.9, "tx_power_dbm": 1.5}


def module(nic):
    """The module in ``nic``'s cage: {form, cmis, vendor, part_number, serial, lanes, values, eeprom_error}.

    ``lanes``: the lanes the link uses (its width); ``values``: HEALTHY with the faults' overrides.
    """
    speed = int(nic.get("speed_gbps", 0))
    osfp = speed >= 400
    return {
        "form": "OSFP" if osfp else "QSFP28",
        "cmis": osfp,
        "vendor": "NVIDIA",
        "part_number": "MMA4Z00-NS" if osfp else "MMA1B00-C100D",
        "serial": "MT2402FT" + str(nic.get("serial_number") or "00000")[-5:],
        "lanes": max(1, int(nic.get("width", 4))),
        "values": dict(HEALTHY, **(nic.get("optics") or {})),
        "eeprom_error": bool(nic.get("module_eeprom_error")),
    }
