"""Action plugin: the inputs' digest and the probes of the converge stamp (module host_stamp).

``state: check`` makes the digest of the host's inputs on the controller and
passes it to the module, which compares it and the probes' answers with the
stamp on the host. The inputs are the validated intent (``fabric_effective``),
the host's ``rdma_ports`` and groups, every variable named like a host role's
(``mofed_*``, ``rdma_netdev_*``, ``connectx_firmware_*``, ``roce_qos_*``,
``nvidia_peermem_*``, ``nccl_env_*``: inventory, play and extra vars; role
defaults are code) and the digest of linerate's code (roles, plugins,
playbooks). Run it before any host role registers a result.

``state: write`` is given ``inputs`` (the check's) and builds the probes: the
kernel release, the package list with versions and selections, the loaded
modules, the RDMA devices, ports and GIDs as the OFED tools print them, each
rail netdev's addresses, QoS, RDMA-CM mode and ToS and ECN knobs (RoCE), each
device's firmware configuration (``firmware_devices``), and every file,
directory and unit the roles' ``host_files`` calls manage (``managed``: their
registered results, whose ``paths`` and ``units`` list them all).
"""

import os

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase
from ansible_collections.linerate.fabric.plugins.module_utils.host import stamp

ROLE_PREFIXES = ("mofed_", "rdma_netdev_", "connectx_firmware_", "roce_qos_", "nvidia_peermem_", "nccl_env_")
INPUT_NAMES = ("fabric_effective", "rdma_ports", "group_names")
COLLECTION = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_CODE = {}


def code_digest(root=COLLECTION):
    """The digest of linerate's roles, plugins and playbooks (once per controller process)."""
    if root not in _CODE:
        _CODE[root] = stamp.tree_digest(root, ("roles", "plugins", "playbooks"))
    return _CODE[root]


def input_names(names):
    """The variables (of ``names``) that are the host stack's inputs, sorted."""
    return sorted(n for n in names if n in INPUT_NAMES or n.startswith(ROLE_PREFIXES))


def host_probes(ports, transport, firmware_devices=(), managed=(), files=(), sysfs_net="/sys/class/net"):
    """The probes of the host stack (module_utils/host/stamp.py) for a host's ports and managed files."""
    commands = [
        ["uname", "-r"],
        ["dpkg-query", "-W", "-f=${Package} ${Version} ${Status}\n"],
        ["lsmod"],
        ["ibdev2netdev", "-v"],
        ["ibv_devinfo", "-v"],
        ["ibstat"],
        ["show_gids"],
    ]
    paths = ["/etc/os-release"]
    for port in ports:
        netdev, device, num = port["netdev"], port["device"], str(port.get("port", 1))
        commands.append(["ip", "-json", "addr", "show", "dev", netdev])
        if transport == "roce":
            commands += [["mlnx_qos", "-i", netdev], ["cma_roce_mode", "-d", device, "-p", num], ["cma_roce_tos", "-d", device, "-p", num]]
            paths += [f"{sysfs_net}/{netdev}/ecn/roce_*/*", f"{sysfs_net}/{netdev}/ecn/roce_*/enable/*"]
    commands += [["mlxconfig", "-d", pci, "-e", "q"] for pci in firmware_devices]
    units = []
    for result in managed:
        paths += (result or {}).get("paths") or []
        units += [name for name in (result or {}).get("units") or {} if name not in units]
    if units:
        commands += [["systemctl", "is-enabled", *units], ["systemctl", "is-active", *units]]
    paths += [p for p in files if p]
    return {"commands": commands, "files": list(dict.fromkeys(paths))}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("state", "inputs", "keys", "path", "ports", "transport", "firmware_devices", "managed", "files", "sysfs_net"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = dict(self._task.args)
        state = args.get("state", "check")
        module_args = {"state": state}
        if args.get("path"):
            module_args["path"] = args["path"]
        try:
            if state == "check":
                values = {n: self._templar.template(task_vars[n]) for n in input_names(task_vars)}
                module_args["inputs"] = stamp.inputs_digest(values, code_digest())
            elif state == "write":
                if not args.get("inputs"):
                    raise AnsibleError("inputs: missing (allowed: the inputs digest of this run's state=check)")
                module_args["inputs"] = args["inputs"]
                module_args["probes"] = host_probes(
                    args.get("ports") or [],
                    args.get("transport"),
                    args.get("firmware_devices") or [],
                    args.get("managed") or [],
                    args.get("files") or [],
                    args.get("sysfs_net") or "/sys/class/net",
                )
            elif state == "refresh":
                if not args.get("inputs"):
                    raise AnsibleError("inputs: missing (allowed: the inputs digest of this run's state=check)")
                module_args.update(inputs=args["inputs"], keys=list(args.get("keys") or []))
            else:
                raise AnsibleError(f"state: {state!r} is not allowed (allowed: check, write, refresh)")
        except (AnsibleError, KeyError, TypeError) as e:
            result.update(failed=True, msg=f"host_stamp: {e}")
            return result
        result.update(self._execute_module(module_name="linerate.fabric.host_stamp", module_args=module_args, task_vars=task_vars))
        return result
