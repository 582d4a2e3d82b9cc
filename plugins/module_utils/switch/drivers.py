"""Platform name -> driver class."""

from __future__ import annotations

from typing import Any

from ansible_collections.linerate.fabric.plugins.module_utils.switch import network_os
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import Driver
from ansible_collections.linerate.fabric.plugins.module_utils.switch.eos import EosDriver
from ansible_collections.linerate.fabric.plugins.module_utils.switch.nvue import NvueDriver
from ansible_collections.linerate.fabric.plugins.module_utils.switch.sonic import SonicDriver

DRIVERS: dict[str, type[Driver]] = {"nvue": NvueDriver, "sonic": SonicDriver, "eos": EosDriver}


def platform_of(name: str, value: Any) -> str:
    """switch_platform or ansible_network_os -> nvue | sonic | eos (ValueError naming the switch otherwise)."""
    platform = network_os.normalize(value)
    if platform is not None:
        return platform
    raise ValueError(
        f"switch {name}: unknown platform {value!r} (switch_platform or ansible_network_os; "
        f"allowed: {', '.join(sorted(network_os.ALIASES))}, also collection-qualified like arista.eos.eos)"
    )


def driver_for(platform: str, name: str, **kw: Any) -> Driver:
    try:
        cls = DRIVERS[platform]
    except KeyError:
        raise ValueError(f"switch {name}: unknown switch_platform {platform!r} (allowed: {', '.join(sorted(DRIVERS))})") from None
    return cls(name, **kw)
