"""Switch platform names: ``switch_platform`` or Ansible's ``ansible_network_os`` -> nvue | sonic | eos.

The one table every part that names a platform reads (the switch modules' drivers, the intent
validation, the switch_fabric role's filter ``linerate.fabric.switch_platform`` that picks
``switch_configs/<platform>/``). Stdlib only: the validation loads it on its own.

Ansible names a network OS by the cliconf/httpapi plugin of its collection, short or
fully qualified (sources, ansible 12.3 package): arista.eos has cliconf and httpapi plugin
``eos`` (``arista.eos.eos``); dellemc.enterprise_sonic has cliconf and httpapi plugin ``sonic``
(``dellemc.enterprise_sonic.sonic``). nvidia.nvue (Galaxy, not in the ansible package) is used
with ``ansible_network_os: nvidia.nvue.httpapi`` in NVIDIA's "Data Center Network Automation
Ansible Deployment Guide" (Running the Playbooks); ``nvidia.nvue.nvue`` and ``cumulus`` are seen
in site inventories. docs/conformance.md, "Switch platforms", lists them.
"""

from __future__ import annotations

from typing import Any, Optional

# The last dotted part -> platform (bare names and collection-qualified ones such as arista.eos.eos).
ALIASES = {"nvue": "nvue", "cumulus": "nvue", "eos": "eos", "sonic": "sonic", "enterprise_sonic": "sonic"}
# Fully qualified names whose last part is a plugin kind, not the platform.
QUALIFIED = {"nvidia.nvue.httpapi": "nvue"}
PLATFORMS = ("nvue", "sonic", "eos")
ALLOWED = (
    ", ".join(sorted(ALIASES)) + ", also collection-qualified like arista.eos.eos, dellemc.enterprise_sonic.sonic, nvidia.nvue.nvue or nvidia.nvue.httpapi"
)


def normalize(value: Any) -> Optional[str]:
    """nvue | sonic | eos for a switch_platform or ansible_network_os value; None when it names none."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    if text in QUALIFIED:
        return QUALIFIED[text]
    return ALIASES.get(text.rsplit(".", 1)[-1])
