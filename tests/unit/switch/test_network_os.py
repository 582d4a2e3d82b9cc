"""Switch connections by Ansible's conventions: ansible_network_os values, login checks, ssh_config_file."""

import os

import pytest

import switch_testlib  # noqa: F401  (puts the collection on sys.path)

from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.drivers import platform_of
from ansible_collections.linerate.fabric.plugins.module_utils.switch.module_common import make_driver


@pytest.mark.parametrize(
    "value,platform",
    [
        ("nvue", "nvue"),
        ("nvidia.nvue.nvue", "nvue"),
        ("cumulus", "nvue"),
        ("arista.eos.eos", "eos"),
        ("EOS", "eos"),
        ("sonic", "sonic"),
        ("dellemc.enterprise_sonic.sonic", "sonic"),
        ("dellemc.enterprise_sonic.enterprise_sonic", "sonic"),
    ],
)
def test_network_os_values_map_to_a_platform(value, platform):
    assert platform_of("leaf1", value) == platform


@pytest.mark.parametrize("value", ["", None, "cisco.ios.ios", "junos"])
def test_unknown_platform_names_the_switch_and_the_allowed(value):
    with pytest.raises(ValueError, match=r"switch leaf1: unknown platform .*allowed: cumulus, enterprise_sonic, eos"):
        platform_of("leaf1", value)


def params(**kw):
    p = dict(
        name="leaf1",
        platform="arista.eos.eos",
        host="127.0.1.3",
        port=22,
        username="admin",
        password="pw",
        private_key_file=None,
        known_hosts="~/.ssh/known_hosts",
        ssh_config_file=None,
        host_key_checking=True,
        connect_timeout=15,
        command_timeout=60,
        profile="linerate",
    )
    p.update(kw)
    return p


def test_make_driver_from_ansible_conventions(tmp_path):
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host 127.0.1.3\n  ProxyJump bastion\n")
    d = make_driver(params(ssh_config_file=str(cfg)))
    assert d.platform == "eos" and d.ssh_config_file == str(cfg) and d.host_key_checking is True


@pytest.mark.parametrize(
    "kw,msg",
    [
        ({"username": ""}, "switch leaf1: no login name: set ansible_user"),
        ({"password": None}, "switch leaf1: neither a password \\(ansible_password or switch_password\\)"),
    ],
)
def test_missing_login_is_named(kw, msg):
    with pytest.raises(ValueError, match=msg):
        make_driver(params(**kw))


def test_missing_ssh_config_file_is_refused_before_connecting(tmp_path):
    d = make_driver(params(ssh_config_file=str(tmp_path / "nope"), host_key_checking=False))
    d.open_connection = lambda p: pytest.fail("must not connect")
    with pytest.raises(SwitchError, match="switch leaf1: ssh_config_file .*nope does not exist"):
        d.connect()


def test_ssh_config_file_reaches_netmiko(tmp_path):
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host *\n  ProxyCommand relay %h %p\n")
    d = make_driver(params(ssh_config_file=str(cfg), host_key_checking=False))
    seen = {}

    def open_connection(p):
        seen.update(p)
        raise OSError("stop here")

    d.open_connection = open_connection
    with pytest.raises(SwitchError, match="switch leaf1: unreachable at 127.0.1.3:22"):
        d.connect()
    assert seen["ssh_config_file"] == str(cfg) and seen["device_type"] == "arista_eos"


# ---------------------------------------------------------------- what netmiko is handed, and its errors


class NoChannelConn:
    base_prompt = "leaf1"

    def check_enable_mode(self):  # netmiko's: the login landed in privileged exec
        return True

    def disconnect(self):
        pass


def driver(platform="eos", **kw):
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.drivers import driver_for

    args = dict(host="10.0.0.7", port="2222", username="admin", password="pw", connect_timeout=7)
    args.update(kw)
    return driver_for(platform, "leaf1", **args)


def connect_with(d, conn=None, exc=None):
    seen = []

    def open_connection(params):
        seen.append(dict(params))
        if exc is not None:
            raise exc
        return conn or NoChannelConn()

    d.open_connection = open_connection
    d.connect()
    return seen


@pytest.mark.parametrize("platform,device_type", [("nvue", "cumulus_linux"), ("sonic", "linux"), ("eos", "arista_eos")])
def test_connect_hands_netmiko_exactly_these_arguments_key_and_known_hosts(tmp_path, platform, device_type):
    kh = tmp_path / "known_hosts"
    kh.write_text("")
    d = driver(platform, key_file="/keys/id_ed25519", known_hosts=str(kh), host_key_checking=True)
    seen = connect_with(d)
    assert seen == [
        dict(
            device_type=device_type,
            host="10.0.0.7",
            port=2222,
            username="admin",
            password="pw",
            conn_timeout=7,
            auth_timeout=7,
            banner_timeout=7,
            read_timeout_override=None,
            allow_agent=False,
            use_keys=True,
            key_file="/keys/id_ed25519",
            ssh_strict=True,
            system_host_keys=False,
            alt_host_keys=True,
            alt_key_file=str(kh),
            fast_cli=True,
            session_log=None,
        )
    ]
    connect_with(d)  # already connected: no second session
    assert d.conn is not None


def test_connect_password_only_without_host_key_checking():
    d = driver("nvue", key_file="", known_hosts="~/kh", host_key_checking=False)
    (seen,) = connect_with(d)
    assert (seen["use_keys"], seen["key_file"], seen["allow_agent"]) == (False, None, False)
    assert (seen["ssh_strict"], seen["system_host_keys"], seen["alt_host_keys"]) == (False, False, False)
    assert seen["alt_key_file"] == os.path.expanduser("~/kh") and "ssh_config_file" not in seen


def test_connect_host_key_checking_without_known_hosts_uses_no_file():
    (seen,) = connect_with(driver(known_hosts=None, host_key_checking=True))
    assert (seen["ssh_strict"], seen["alt_host_keys"], seen["alt_key_file"]) == (True, False, "")


def test_missing_known_hosts_with_checking_is_refused_before_connecting(tmp_path):
    d = driver(known_hosts=str(tmp_path / "nope"), host_key_checking=True)
    d.open_connection = lambda p: pytest.fail("must not connect")
    with pytest.raises(SwitchError) as err:
        d.connect()
    assert str(err.value) == (f"switch leaf1: known_hosts file {tmp_path / 'nope'} does not exist (host key checking is on)")


def connect_error(exc, **kw):
    d = driver(host_key_checking=False, known_hosts="/kh", **kw)
    with pytest.raises(SwitchError) as err:
        connect_with(d, exc=exc)
    assert d.conn is None
    return err.value


def test_connect_errors_are_named_authentication():
    from netmiko.exceptions import NetmikoAuthenticationException

    err = connect_error(NetmikoAuthenticationException("Authentication to device failed."))
    assert type(err) is SwitchError and err.switch == "leaf1"
    assert str(err) == "switch leaf1: authentication failed for user 'admin' at 10.0.0.7:2222"


def test_connect_errors_are_named_host_key():
    err = connect_error(ValueError("Server '10.0.0.7' not found in known_hosts\n\n  last words here  \n"))
    assert type(err) is SwitchError
    assert str(err) == ("switch leaf1: SSH host key of 10.0.0.7:2222 is not in the known_hosts file /kh (or does not match it): last words here")
    err = connect_error(ValueError("first\nHost key for server 10.0.0.7 does not match!"))
    assert err.reason.endswith("(or does not match it): Host key for server 10.0.0.7 does not match!")


def test_connect_errors_are_named_unreachable():
    from netmiko.exceptions import NetmikoTimeoutException
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import Unreachable

    err = connect_error(NetmikoTimeoutException("TCP connection to device failed.\n\nCommon causes: ..."))
    assert type(err) is Unreachable
    assert str(err) == "switch leaf1: unreachable at 10.0.0.7:2222: TCP connection to device failed."
    err = connect_error(ConnectionRefusedError(111, "Connection refused"))
    assert type(err) is Unreachable
    assert str(err) == "switch leaf1: unreachable at 10.0.0.7:2222: ConnectionRefusedError: [Errno 111] Connection refused"
    err = connect_error(OSError())
    assert err.reason == "unreachable at 10.0.0.7:2222: OSError: OSError"


def test_switch_error_carries_its_fields():
    err = SwitchError("leaf1", "it broke", output="out", command="cmd", rolled_back=True, changed=True)
    assert (err.switch, err.reason, err.output, err.command, err.rolled_back, err.changed) == ("leaf1", "it broke", "out", "cmd", True, True)
    assert str(err) == "switch leaf1: it broke"
    plain = SwitchError("leaf1", "x")
    assert (plain.output, plain.command, plain.rolled_back, plain.changed) == (None, None, None, False)


class FakeConn:
    base_prompt = "leaf1"

    def __init__(self, out="output", exc=None, disconnect_exc=None):
        self.out, self.exc, self.disconnect_exc = out, exc, disconnect_exc
        self.calls, self.disconnected = [], False

    def send_command(self, command, **kw):
        self.calls.append((command, kw))
        if self.exc is not None:
            raise self.exc
        return self.out

    def disconnect(self):
        self.disconnected = True
        if self.disconnect_exc:
            raise self.disconnect_exc


def test_send_hands_netmiko_the_command_timeout_and_any_prompt():
    d = driver(command_timeout=45)
    d.conn = conn = FakeConn("42 lines")
    assert d.send("show version") == "42 lines"
    assert d.send("show tech", timeout=300) == "42 lines"
    expect = r"leaf1(\([^)\n]*\))?[$>#]\s*$"
    assert conn.calls == [
        ("show version", {"read_timeout": 45, "expect_string": expect, "strip_prompt": True, "strip_command": True}),
        ("show tech", {"read_timeout": 300, "expect_string": expect, "strip_prompt": True, "strip_command": True}),
    ]


@pytest.mark.parametrize(
    "prompt,matches",
    [
        ("leaf1#", True),
        ("leaf1>", True),
        ("leaf1$ ", True),
        ("leaf1(config-s-linerate_T1)#", True),
        ("leaf1(config)# \n", True),
        ("leaf1", False),
        ("leaf1#x", False),
        ("leaf1(a\nb)#", False),
    ],
)
def test_expect_string_is_any_prompt_of_this_switch(prompt, matches):
    import re

    d = driver()
    d.conn = FakeConn()
    assert bool(re.search(d.expect_string("x"), prompt)) is matches


def test_expect_string_escapes_the_prompt():
    import re

    d = driver()
    d.conn = FakeConn()
    d.conn.base_prompt = "sw.1"
    assert re.search(d.expect_string("x"), "sw.1#") and not re.search(d.expect_string("x"), "swx1#")


def test_send_timeout_is_command_timeout_and_drops_the_session():
    from netmiko.exceptions import ReadTimeout
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import CommandTimeout

    d = driver(command_timeout=45)
    d.conn = conn = FakeConn(exc=ReadTimeout("Pattern not detected"))
    with pytest.raises(CommandTimeout) as err:
        d.send("show tech")
    assert str(err.value) == ("switch leaf1: no answer within 45s (command_timeout) to 'show tech': the switch hung or is too slow")
    assert err.value.command == "show tech" and d.conn is None and conn.disconnected


@pytest.mark.parametrize(
    "exc,tail",
    [
        (OSError("Socket is closed\nmore"), "Socket is closed"),
        (EOFError(), "EOFError"),
    ],
)
def test_send_lost_session(exc, tail):
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SessionLost

    d = driver()
    d.conn = conn = FakeConn(exc=exc)
    with pytest.raises(SessionLost) as err:
        d.send("show version")
    assert str(err.value) == f"switch leaf1: SSH session to 10.0.0.7:2222 lost during 'show version': {tail}"
    assert err.value.command == "show version" and d.conn is None and conn.disconnected


def test_send_lost_session_paramiko_error_names_its_type():
    import paramiko
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SessionLost

    d = driver()
    d.conn = FakeConn(exc=paramiko.SSHException("No existing session"))
    with pytest.raises(SessionLost) as err:
        d.send("show version")
    assert err.value.reason == "SSH session to 10.0.0.7:2222 lost during 'show version': SSHException: No existing session"
    assert err.value.command == "show version" and d.conn is None


def test_send_other_errors_are_not_session_losses():
    d = driver()
    d.conn = conn = FakeConn(exc=KeyError("bug"))
    with pytest.raises(KeyError):
        d.send("show version")
    assert d.conn is conn and not conn.disconnected


def test_close_drops_a_session_that_cannot_be_closed():
    d = driver()
    d.conn = conn = FakeConn(disconnect_exc=OSError("Socket is closed"))
    d.close()
    assert d.conn is None and conn.disconnected
    d.close()  # nothing to close


def test_run_logs_and_checks_the_platform_error_patterns():
    d = driver("nvue")
    d.conn = FakeConn("Error: bad value\nmore")
    with pytest.raises(SwitchError) as err:
        d.run("nv set x y")
    assert str(err.value) == "switch leaf1: rejected command 'nv set x y': Error: bad value"
    assert (err.value.output, err.value.command) == ("Error: bad value\nmore", "nv set x y")
    assert d.run("nv config detach", check=False) == "Error: bad value\nmore"
    assert d.log == [("nv set x y", "Error: bad value\nmore"), ("nv config detach", "Error: bad value\nmore")]
    assert d.error_in("all fine\n  Error: indented is not an error") is None


# ---------------------------------------------------------------- a closed channel is noticed at once


class Transport:
    def __init__(self, active):
        self.active = active

    def is_active(self):
        return self.active


class Chan:
    def __init__(self, transport, closed=False, eof=False):
        self.transport, self.closed, self.eof_received = transport, closed, eof

    def get_transport(self):
        return self.transport


class ChanConn(NoChannelConn):
    def __init__(self, chan, outs):
        self.remote_conn, self.outs = chan, list(outs)

    def read_channel(self):
        return self.outs.pop(0)


@pytest.mark.parametrize(
    "chan,out,raises",
    [
        (Chan(Transport(True)), "", False),
        (Chan(Transport(True)), "prompt#", False),
        (Chan(Transport(False), closed=True), "last bytes", False),
        (Chan(Transport(True), closed=True), "", True),
        (Chan(Transport(True), eof=True), "", True),
        (Chan(Transport(False)), "", True),
        (Chan(None), "", True),
    ],
)
def test_connect_watches_the_channel(chan, out, raises):
    d = driver(host_key_checking=False)
    connect_with(d, conn=ChanConn(chan, [out]))
    if raises:
        with pytest.raises(EOFError, match="the switch closed the SSH session"):
            d.conn.read_channel()
    else:
        assert d.conn.read_channel() == out


def test_a_connection_without_a_paramiko_channel_is_left_alone():
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import _watch_channel

    conn = ChanConn(object(), [""])
    before = conn.read_channel
    _watch_channel(conn)
    assert conn.read_channel == before


# ---------------------------------------------------------------- the modules' connection arguments


def run_info_module(monkeypatch, capsys, args):
    """switch_info's main() with module_common's driver construction recorded (the real make_driver)."""
    import json
    from ansible.module_utils.testing import patch_module_args
    from switch_testlib import make
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import module_common
    from ansible_collections.linerate.fabric.plugins.modules import switch_info

    seen = []

    def driver_for(platform, name, **kw):
        seen.append(dict(kw, platform=platform, name=name))
        d, _ = make(platform, name)
        d.close = lambda: None
        d.oper = lambda ports: {}
        return d

    monkeypatch.setattr(module_common, "driver_for", driver_for)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            switch_info.main()
    return json.loads(capsys.readouterr().out), seen


def test_connection_arguments_types_defaults_and_alias(monkeypatch, capsys):
    res, seen = run_info_module(
        monkeypatch,
        capsys,
        {
            "name": "leaf1",
            "network_os": "nvidia.nvue.nvue",
            "host": "10.0.0.7",
            "port": "2222",
            "username": "admin",
            "password": "pw",
            "ssh_config_file": "~/ssh_cfg",
            "private_key_file": "~/.ssh/id",
            "host_key_checking": "no",
            "connect_timeout": "5",
            "fabric_ports": [7, "swp2"],
        },
    )
    assert not res.get("failed"), res
    assert seen == [
        dict(
            platform="nvue",
            name="leaf1",
            ssh_config_file=os.path.expanduser("~/ssh_cfg"),
            host="10.0.0.7",
            port=2222,
            username="admin",
            password="pw",
            secret=None,
            key_file=os.path.expanduser("~/.ssh/id"),
            known_hosts=os.path.expanduser("~/.ssh/known_hosts"),
            host_key_checking=False,
            connect_timeout=5,
            command_timeout=60,
            profile="linerate",
        )
    ]
    assert res["ports_missing"] == ["7", "swp2"]  # elements=str: a YAML number is a port name
    assert "'pw'" not in repr(res) and '"pw"' not in repr(res)  # no_log


def test_connection_argument_defaults(monkeypatch, capsys):
    res, seen = run_info_module(
        monkeypatch,
        capsys,
        {"name": "leaf1", "platform": "eos", "host": "10.0.0.7", "username": "admin", "password": "pw", "profile": "rdma", "command_timeout": "90"},
    )
    assert not res.get("failed"), res
    assert seen == [
        dict(
            platform="eos",
            name="leaf1",
            ssh_config_file=None,
            host="10.0.0.7",
            port=22,
            username="admin",
            password="pw",
            secret=None,
            key_file=None,
            known_hosts=os.path.expanduser("~/.ssh/known_hosts"),
            host_key_checking=True,
            connect_timeout=15,
            command_timeout=90,
            profile="rdma",
        )
    ]
    assert res["ports_missing"] == [] and res["problems"] == []


@pytest.mark.parametrize("missing", ["name", "platform", "host"])
def test_connection_arguments_required(monkeypatch, capsys, missing):
    args = {"name": "leaf1", "platform": "eos", "host": "10.0.0.7", "username": "admin", "password": "pw"}
    del args[missing]
    res, seen = run_info_module(monkeypatch, capsys, args)
    assert res["failed"] and f"missing required arguments: {missing}" in res["msg"] and seen == []


def test_command_log_summarises_whole_configs_only():
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.module_common import command_log

    d = driver()
    d.log = [
        ("show running-config", "a\nb\nc\n"),
        ("nv config show -o commands", "x"),
        ("show runningconfiguration all", ""),
        ("cat /etc/sonic/config_db.json", "{\n}"),
        ("show configuration sessions", "s1 pending"),
    ]
    assert command_log(d) == [
        {"command": "show running-config", "output": "<running configuration, 3 lines, not shown>"},
        {"command": "nv config show -o commands", "output": "<running configuration, 1 lines, not shown>"},
        {"command": "show runningconfiguration all", "output": "<running configuration, 0 lines, not shown>"},
        {"command": "cat /etc/sonic/config_db.json", "output": "<running configuration, 2 lines, not shown>"},
        {"command": "show configuration sessions", "output": "s1 pending"},
    ]


def test_unknown_platform_message_is_exact():
    with pytest.raises(ValueError) as err:
        platform_of("leaf1", "junos")
    assert str(err.value) == (
        "switch leaf1: unknown platform 'junos' (switch_platform or ansible_network_os; "
        "allowed: cumulus, enterprise_sonic, eos, nvue, sonic, also collection-qualified "
        "like arista.eos.eos)"
    )


def test_driver_for_builds_the_platform_class_or_names_the_switch():
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.drivers import driver_for

    for platform in ("nvue", "sonic", "eos"):
        d = driver_for(platform, "leaf1", host="10.0.0.7", profile="rdma")
        assert (d.platform, d.name, d.host, d.profile) == (platform, "leaf1", "10.0.0.7", "rdma")
    with pytest.raises(ValueError) as err:
        driver_for("junos", "leaf1")
    assert str(err.value) == "switch leaf1: unknown switch_platform 'junos' (allowed: eos, nvue, sonic)"
