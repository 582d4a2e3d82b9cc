"""Platform name -> driver class."""
from ansible_collections.linerate.fabric.plugins.module_utils.switch.eos import EosDriver
from ansible_collections.linerate.fabric.plugins.module_utils.switch.nvue import NvueDriver
from ansible_collections.linerate.fabric.plugins.module_utils.switch.sonic import SonicDriver

DRIVERS = {"nvue": NvueDriver, "sonic": SonicDriver, "eos": EosDriver}


def driver_for(platform, name, **kw):
    try:
        cls = DRIVERS[platform]
    except KeyError:
        raise ValueError(f"switch {name}: unknown switch_platform {platform!r} "
                         f"(allowed: {', '.join(sorted(DRIVERS))})") from None
    return cls(name, **kw)
