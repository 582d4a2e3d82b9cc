"""rdma_netdev (module_utils/netdev.py): exact ip argv through the shared Runner, only the delta,
check mode, idempotence and failures naming the command."""
import json

from ansible_collections.linerate.fabric.plugins.modules import rdma_netdev
from module_harness import Tools, run_module

DEV = "enp65s0f0np0"


class Ip:
    """A netdev that ``ip`` reads and changes: ``ip -json addr show`` prints its real JSON shape."""

    def __init__(self, up=False, addrs=(), fail=None):
        self.up, self.addrs, self.fail = up, list(addrs), fail

    def __call__(self, args):
        if args[:3] == ["-json", "addr", "show"]:
            if args[4] != DEV:
                return 1, "", f'Device "{args[4]}" does not exist.\n'
            info = [{"family": "inet", "local": a.split("/")[0], "prefixlen": int(a.split("/")[1]), "scope": "global"}
                    for a in self.addrs]
            info.append({"family": "inet6", "local": "fe80::1", "prefixlen": 64, "scope": "link"})
            flags = ["BROADCAST", "MULTICAST"] + (["UP", "LOWER_UP"] if self.up else [])
            return 0, json.dumps([{"ifname": DEV, "flags": flags, "addr_info": info}]), ""
        if self.fail and args[:2] == self.fail:
            return 2, "", "RTNETLINK answers: Operation not permitted\n"
        if args[:2] == ["addr", "add"]:
            self.addrs.append(args[2])
        elif args[:2] == ["addr", "del"]:
            self.addrs.remove(args[2])
        elif args[:2] == ["link", "set"]:
            self.up = True
        return 0, "", ""


def run(capsys, ip, check=False, diff=False, **args):
    tools = Tools({"ip": ip})
    return run_module(rdma_netdev.main, dict({"name": DEV}, **args), tools, capsys, check=check, diff=diff), tools.calls


def test_brings_the_link_up_with_its_address_then_is_idempotent(capsys):
    ip = Ip(addrs=["10.9.0.5/16"])
    res, calls = run(capsys, ip, address="192.168.100.11/24")
    assert calls == [["ip", "-json", "addr", "show", "dev", DEV],
                     ["ip", "addr", "add", "192.168.100.11/24", "dev", DEV],
                     ["ip", "link", "set", "dev", DEV, "up"],
                     ["ip", "-json", "addr", "show", "dev", DEV]]
    assert res["changed"] is True and res["before"] == {"up": False, "addresses": ["10.9.0.5/16"]}
    assert res["after"] == {"up": True, "addresses": ["10.9.0.5/16", "192.168.100.11/24"]}
    again, calls = run(capsys, ip, address="192.168.100.11/24")
    assert again["changed"] is False and again["commands"] == [] and len(calls) == 1


def test_check_mode_plans_and_changes_nothing_with_a_diff(capsys):
    ip = Ip(up=True, addrs=["10.9.0.5/16"])
    res, calls = run(capsys, ip, check=True, diff=True, address="192.168.100.11/24", exclusive=True)
    assert calls == [["ip", "-json", "addr", "show", "dev", DEV]] and ip.addrs == ["10.9.0.5/16"]
    assert res["changed"] is True and res["commands"] == [["ip", "addr", "del", "10.9.0.5/16", "dev", DEV],
                                                          ["ip", "addr", "add", "192.168.100.11/24", "dev", DEV]]
    assert res["after"] == {"up": True, "addresses": ["192.168.100.11/24"]}
    assert json.loads(res["diff"]["before"]) == res["before"] and res["diff"]["after_header"] == DEV


def test_a_missing_netdev_and_a_failing_ip_fail_naming_them(capsys):
    res, _calls = run(capsys, Ip(), name="nosuch0")
    assert res["failed"] and res["msg"] == 'netdev nosuch0: Device "nosuch0" does not exist.' and res["rc"] == 1
    res, calls = run(capsys, Ip(fail=["addr", "add"]), address="192.168.100.11/24")
    assert res["failed"] and res["msg"] == f"ip addr add 192.168.100.11/24 dev {DEV}: RTNETLINK answers: Operation not permitted"
    assert res["rc"] == 2 and res["before"] == {"up": False, "addresses": []} and len(calls) == 2


def test_an_address_without_prefix_is_refused_before_any_command(capsys):
    res, calls = run(capsys, Ip(), address="192.168.100.11")
    assert res["failed"] and calls == [] and "is not allowed (allowed: an IPv4 address with prefix length" in res["msg"]
