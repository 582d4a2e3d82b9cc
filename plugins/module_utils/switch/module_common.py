"""Argument spec and driver construction shared by the switch modules, and the one skeleton of the
read-only ones (switch_info, switch_counters, switch_lldp): ``read_only_module``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import Driver, SwitchError, Unreachable
from ansible_collections.linerate.fabric.plugins.module_utils.switch.drivers import DRIVERS, driver_for, platform_of

if TYPE_CHECKING:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.redact import Redactor

CONNECTION_ARGS = dict(
    name=dict(type="str", required=True),
    platform=dict(type="str", required=True, aliases=["network_os"]),
    host=dict(type="str", required=True),
    port=dict(type="int", default=22),
    username=dict(type="str"),
    password=dict(type="str", no_log=True),
    enable_secret=dict(type="str", no_log=True),
    private_key_file=dict(type="path"),
    known_hosts=dict(type="path", default="~/.ssh/known_hosts"),
    ssh_config_file=dict(type="path"),
    host_key_checking=dict(type="bool", default=True),
    connect_timeout=dict(type="int", default=15),
    command_timeout=dict(type="int", default=60),
    profile=dict(type="str", default="linerate"),
    fabric_ports=dict(type="list", elements="str", default=[]),
)


def make_driver(p: dict[str, Any]) -> Driver:
    if not p.get("username"):
        raise ValueError(f"switch {p['name']}: no login name: set ansible_user (or switch_username)")
    if not p.get("password") and not p.get("private_key_file"):
        raise ValueError(
            f"switch {p['name']}: neither a password (ansible_password or switch_password) nor a "
            "private key (ansible_ssh_private_key_file or switch_private_key_file) is set"
        )
    return driver_for(
        platform_of(p["name"], p["platform"]),
        p["name"],
        ssh_config_file=p.get("ssh_config_file"),
        host=p["host"],
        port=p["port"],
        username=p["username"],
        password=p.get("password"),
        secret=p.get("enable_secret"),
        key_file=p.get("private_key_file"),
        known_hosts=p["known_hosts"],
        host_key_checking=p["host_key_checking"],
        connect_timeout=p["connect_timeout"],
        command_timeout=p["command_timeout"],
        profile=p["profile"],
    )


def read_only_module(
    read: Callable[[dict[str, Any], Driver], dict[str, Any]], argument_spec: Optional[dict[str, Any]] = None, unreachable: bool = False
) -> None:
    """Run one read-only switch module: its argument spec (CONNECTION_ARGS and ``argument_spec``), full check
    mode (it only reads), the driver made from the connection arguments (missing credentials fail naming the
    variables) and always closed, and ``read(params, driver) -> dict`` as the result with ``changed: false``.

    What ``read`` lets through: a ``SwitchError`` fails the module with the command and its output, a
    ``ParseError`` names the switch; with ``unreachable``, a switch that cannot be reached ends the module as
    UNREACHABLE in the recap (``unreachable: true``), not FAILED."""
    module = AnsibleModule(argument_spec=dict(CONNECTION_ARGS, **(argument_spec or {})), supports_check_mode=True)
    p = module.params
    try:
        driver = make_driver(p)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    try:
        result = read(p, driver)
    except Unreachable as exc:
        if not unreachable:
            module.fail_json(msg=str(exc), switch=p["name"], command=exc.command, output=exc.output)
        module.exit_json(unreachable=True, changed=False, msg=str(exc), switch=p["name"])
    except SwitchError as exc:
        module.fail_json(msg=str(exc), switch=p["name"], command=exc.command, output=exc.output)
    except ParseError as exc:
        module.fail_json(msg=f"{p['name']}: {exc}", switch=p["name"])
    finally:
        driver.close()
    module.exit_json(changed=False, **result)


def read_ports_or_why(p: dict[str, Any], read: Callable[[list[str]], Any], failed: Any) -> tuple[Any, str]:
    """``(read(fabric_ports), "")`` ({} without fabric ports) for a read whose failure only leaves part of a
    read-only module's result unproven: where the switch or its output fails, ``(failed, why)`` - the
    ``SwitchError``'s message, or the ``ParseError`` naming the switch as ``read_only_module`` names it."""
    try:
        return (read(p["fabric_ports"]) if p["fabric_ports"] else {}), ""
    except SwitchError as exc:
        return failed, str(exc)
    except ParseError as exc:
        return failed, f"{p['name']}: {exc}"


# Outputs that are whole configurations (they may hold hashed secrets) are
# summarised in the command log, never copied into the module result.
_CONFIG_READS = frozenset(c for cls in DRIVERS.values() for c in cls.config_reads())


def command_log(driver: Driver, redactor: Optional[Redactor] = None) -> list[dict[str, str]]:
    """Every command sent with its output; whole configurations summarised, and with ``redactor`` (a restore,
    whose commands are the whole config) every secret masked in commands and outputs."""
    log: list[dict[str, str]] = []
    for c, o in driver.log:
        if c in _CONFIG_READS:
            o = f"<running configuration, {len(o.splitlines())} lines, not shown>"
        elif redactor is not None:
            o = redactor.text(o)
        log.append({"command": redactor.text(c) if redactor is not None else c, "output": o})
    return log
