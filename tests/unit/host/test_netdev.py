"""rdma_netdev (module_utils/host/netdev.py): exact ip argv through the shared Runner, only the delta,
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
            info = [{"family": "inet", "local": a.split("/")[0], "prefixlen": int(a.split("/")[1]), "scope": "global"} for a in self.addrs]
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
    assert calls == [
        ["ip", "-json", "addr", "show", "dev", DEV],
        ["ip", "addr", "add", "192.168.100.11/24", "dev", DEV],
        ["ip", "link", "set", "dev", DEV, "up"],
        ["ip", "-json", "addr", "show", "dev", DEV],
    ]
    assert res["changed"] is True and res["before"] == {"up": False, "addresses": ["10.9.0.5/16"]}
    assert res["after"] == {"up": True, "addresses": ["10.9.0.5/16", "192.168.100.11/24"]}
    again, calls = run(capsys, ip, address="192.168.100.11/24")
    assert again["changed"] is False and again["commands"] == [] and len(calls) == 1


def test_check_mode_plans_and_changes_nothing_with_a_diff(capsys):
    ip = Ip(up=True, addrs=["10.9.0.5/16"])
    res, calls = run(capsys, ip, check=True, diff=True, address="192.168.100.11/24", exclusive=True)
    assert calls == [["ip", "-json", "addr", "show", "dev", DEV]] and ip.addrs == ["10.9.0.5/16"]
    assert res["changed"] is True and res["commands"] == [
        ["ip", "addr", "del", "10.9.0.5/16", "dev", DEV],
        ["ip", "addr", "add", "192.168.100.11/24", "dev", DEV],
    ]
    assert res["after"] == {"up": True, "addresses": ["192.168.100.11/24"]}
    assert json.loads(res["diff"]["before"]) == res["before"] and res["diff"]["after_header"] == DEV


def test_a_missing_netdev_and_a_failing_ip_fail_naming_them(capsys):
    res, _calls = run(capsys, Ip(), name="nosuch0")
    assert res["failed"] and res["msg"] == 'ip -json addr show dev nosuch0 exited 1: Device "nosuch0" does not exist.' and res["rc"] == 1
    res, calls = run(capsys, Ip(fail=["addr", "add"]), address="192.168.100.11/24")
    assert res["failed"] and res["msg"] == f"ip addr add 192.168.100.11/24 dev {DEV} exited 2: RTNETLINK answers: Operation not permitted"
    assert res["rc"] == 2 and res["before"] == {"up": False, "addresses": []} and len(calls) == 2


def test_an_address_without_prefix_is_refused_before_any_command(capsys):
    res, calls = run(capsys, Ip(), address="192.168.100.11")
    assert res["failed"] and calls == [] and "is not allowed (allowed: an IPv4 address with prefix length" in res["msg"]


# ---------------------------------------------------------------- ports: several netdevs in one execution

DEV2 = "enp193s0f0np0"
ALLOWED = "(allowed: an IPv4 address with prefix length, such as 192.168.100.11/24)"


class Ips:
    """Several netdevs on one host, each an ``Ip``; one ``ip`` that answers for the one it names."""

    def __init__(self, **netdevs):
        self.netdevs = netdevs

    def __call__(self, args):
        name = args[args.index("dev") + 1]
        if name not in self.netdevs:
            return 1, "", f'Device "{name}" does not exist.\n'
        ip = self.netdevs[name]
        if args[:3] == ["-json", "addr", "show"]:
            rc, out, err = ip(["-json", "addr", "show", "dev", DEV])
            return rc, out.replace(DEV, name), err
        return ip([DEV if a == name else a for a in args])


def run_ports(capsys, ips, ports, check=False, diff=False, **args):
    tools = Tools({"ip": ips})
    return run_module(rdma_netdev.main, dict({"ports": ports}, **args), tools, capsys, check=check, diff=diff), tools.calls


PORTS = [{"name": DEV, "address": "192.168.100.11/24", "device": "mlx5_0"}, {"name": DEV2, "address": "192.168.101.11/24", "device": "mlx5_1"}]


def test_ports_brings_each_netdev_up_in_one_execution_only_the_delta(capsys):
    ips = Ips(**{DEV: Ip(), DEV2: Ip(up=True, addrs=["10.9.0.5/16"])})
    res, calls = run_ports(capsys, ips, PORTS)
    assert calls == [
        ["ip", "-json", "addr", "show", "dev", DEV],
        ["ip", "addr", "add", "192.168.100.11/24", "dev", DEV],
        ["ip", "link", "set", "dev", DEV, "up"],
        ["ip", "-json", "addr", "show", "dev", DEV],
        ["ip", "-json", "addr", "show", "dev", DEV2],
        ["ip", "addr", "add", "192.168.101.11/24", "dev", DEV2],
        ["ip", "-json", "addr", "show", "dev", DEV2],
    ]
    first, second = res["ports"]
    assert first == {
        "name": DEV,
        "device": "mlx5_0",
        "changed": True,
        "before": {"up": False, "addresses": []},
        "after": {"up": True, "addresses": ["192.168.100.11/24"]},
        "commands": [["ip", "addr", "add", "192.168.100.11/24", "dev", DEV], ["ip", "link", "set", "dev", DEV, "up"]],
    }
    # already up: only its address is added; the other address stays (not exclusive)
    assert second == {
        "name": DEV2,
        "device": "mlx5_1",
        "changed": True,
        "before": {"up": True, "addresses": ["10.9.0.5/16"]},
        "after": {"up": True, "addresses": ["10.9.0.5/16", "192.168.101.11/24"]},
        "commands": [["ip", "addr", "add", "192.168.101.11/24", "dev", DEV2]],
    }
    assert res["changed"] is True and res["commands"] == first["commands"] + second["commands"]
    assert "diff" not in res and "before" not in res
    again, calls = run_ports(capsys, ips, PORTS)
    assert again["changed"] is False and again["commands"] == [] and [p["changed"] for p in again["ports"]] == [False, False]
    assert calls == [["ip", "-json", "addr", "show", "dev", DEV], ["ip", "-json", "addr", "show", "dev", DEV2]]


def test_ports_without_address_or_device_only_bring_the_link_up(capsys):
    ips = Ips(**{DEV: Ip(up=True, addrs=["192.168.100.11/24"]), DEV2: Ip(addrs=["10.9.0.5/16"])})
    res, _calls = run_ports(capsys, ips, [{"name": DEV, "address": "192.168.100.11/24"}, {"name": DEV2}], exclusive=True)
    first, second = res["ports"]
    assert first["changed"] is False and first["commands"] == [] and first["device"] is None
    # exclusive applies to every port: with no rail address, the stray one goes
    assert second["commands"] == [["ip", "addr", "del", "10.9.0.5/16", "dev", DEV2], ["ip", "link", "set", "dev", DEV2, "up"]]
    assert res["changed"] is True and ips.netdevs[DEV2].addrs == [] and ips.netdevs[DEV2].up


def test_ports_check_mode_plans_every_port_and_changes_nothing(capsys):
    ips = Ips(**{DEV: Ip(), DEV2: Ip(up=True, addrs=["10.9.0.5/16"])})
    res, calls = run_ports(capsys, ips, PORTS, check=True, diff=True, exclusive=True)
    assert calls == [["ip", "-json", "addr", "show", "dev", DEV], ["ip", "-json", "addr", "show", "dev", DEV2]]
    assert ips.netdevs[DEV].addrs == [] and not ips.netdevs[DEV].up and ips.netdevs[DEV2].addrs == ["10.9.0.5/16"]
    assert res["changed"] is True
    assert res["commands"] == [
        ["ip", "addr", "add", "192.168.100.11/24", "dev", DEV],
        ["ip", "link", "set", "dev", DEV, "up"],
        ["ip", "addr", "del", "10.9.0.5/16", "dev", DEV2],
        ["ip", "addr", "add", "192.168.101.11/24", "dev", DEV2],
    ]
    assert res["ports"][1]["after"] == {"up": True, "addresses": ["192.168.101.11/24"]}
    assert [d["before_header"] for d in res["diff"]] == [DEV, DEV2]
    assert [json.loads(d["after"]) for d in res["diff"]] == [p["after"] for p in res["ports"]]
    assert all("diff" not in p for p in res["ports"])


def test_ports_a_failing_port_does_not_stop_the_others(capsys):
    ips = Ips(**{DEV: Ip(fail=["addr", "add"]), DEV2: Ip()})
    ports = [{"name": "nosuch0", "address": "192.168.99.11/24"}] + PORTS
    res, calls = run_ports(capsys, ips, ports)
    assert res["failed"] is True
    assert res["msg"] == (
        "2 of 3 ports failed (the others were done): "
        'nosuch0: ip -json addr show dev nosuch0 exited 1: Device "nosuch0" does not exist.; '
        f"{DEV}: ip addr add 192.168.100.11/24 dev {DEV} exited 2: RTNETLINK answers: Operation not permitted"
    )
    missing, refused, done = res["ports"]
    assert missing["failed"] is True and missing["name"] == "nosuch0" and missing["rc"] == 1
    assert refused["failed"] is True and (refused["name"], refused["device"], refused["rc"]) == (DEV, "mlx5_0", 2)
    assert refused["before"] == {"up": False, "addresses": []}
    # the third port was still brought up with its address
    assert "failed" not in done and done["changed"] is True and done["after"] == {"up": True, "addresses": ["192.168.101.11/24"]}
    assert ips.netdevs[DEV2].up and ips.netdevs[DEV2].addrs == ["192.168.101.11/24"]
    assert ["ip", "addr", "add", "192.168.101.11/24", "dev", DEV2] in calls
    assert res["changed"] is True


def test_ports_every_address_is_checked_before_any_command(capsys):
    bad = [PORTS[0], {"name": DEV2, "address": "192.168.101.11"}]
    res, calls = run_ports(capsys, Ips(**{DEV: Ip(), DEV2: Ip()}), bad)
    assert res["failed"] is True and calls == []
    assert res["msg"] == f"ports[1].address: '192.168.101.11' is not allowed {ALLOWED}"
    res, calls = run_ports(capsys, Ips(), [PORTS[0], {"name": DEV2, "address": "fe80::1/64"}])
    assert res["failed"] is True and calls == [] and res["msg"] == f"ports[1].address: 'fe80::1/64' is not allowed {ALLOWED}"
    res, calls = run_ports(capsys, Ips(), [PORTS[0], dict(PORTS[1], name=DEV)])
    assert res["failed"] is True and calls == [] and res["msg"] == f"ports[1].name: {DEV!r} is already ports[0]"


def test_ports_addresses_are_normalised_like_the_single_form(capsys):
    ips = Ips(**{DEV: Ip(up=True, addrs=["192.168.100.11/24"])})
    res, calls = run_ports(capsys, ips, [{"name": DEV, "address": "192.168.100.11/255.255.255.0"}])
    assert res["changed"] is False and calls == [["ip", "-json", "addr", "show", "dev", DEV]]


def test_ports_excludes_name_and_address_and_one_of_them_is_required(capsys):
    for extra in ({"name": DEV}, {"address": "192.168.100.11/24"}):
        res, calls = run_ports(capsys, Ips(), PORTS, **extra)
        assert res["failed"] is True and calls == []
        assert res["msg"] == f"parameters are mutually exclusive: {next(iter(extra))}|ports"
    res = run_module(rdma_netdev.main, {"exclusive": True}, Tools({}), capsys)
    assert res["failed"] is True and res["msg"] == "one of the following is required: name, ports"


def test_an_empty_ports_list_does_nothing(capsys):
    res, calls = run_ports(capsys, Ips(), [])
    assert res == {"changed": False, "commands": [], "ports": [], "invocation": res["invocation"]} and calls == []
