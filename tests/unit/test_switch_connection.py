"""Switch connections by Ansible's conventions: ansible_network_os values, login checks, ssh_config_file."""
import pytest

import switch_testlib  # noqa: F401  (puts the collection on sys.path)

from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.drivers import platform_of
from ansible_collections.linerate.fabric.plugins.module_utils.switch.module_common import make_driver


@pytest.mark.parametrize("value,platform", [
    ("nvue", "nvue"), ("nvidia.nvue.nvue", "nvue"), ("cumulus", "nvue"), ("arista.eos.eos", "eos"),
    ("EOS", "eos"), ("sonic", "sonic"), ("dellemc.enterprise_sonic.sonic", "sonic"),
    ("dellemc.enterprise_sonic.enterprise_sonic", "sonic")])
def test_network_os_values_map_to_a_platform(value, platform):
    assert platform_of("leaf1", value) == platform


@pytest.mark.parametrize("value", ["", None, "cisco.ios.ios", "junos"])
def test_unknown_platform_names_the_switch_and_the_allowed(value):
    with pytest.raises(ValueError, match=r"switch leaf1: unknown platform .*allowed: cumulus, enterprise_sonic, eos"):
        platform_of("leaf1", value)


def params(**kw):
    p = dict(name="leaf1", platform="arista.eos.eos", host="127.0.1.3", port=22, username="admin", password="pw",
             private_key_file=None, known_hosts="~/.ssh/known_hosts", ssh_config_file=None, host_key_checking=True,
             connect_timeout=15, command_timeout=60, profile="linerate")
    p.update(kw)
    return p


def test_make_driver_from_ansible_conventions(tmp_path):
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host 127.0.1.3\n  ProxyJump bastion\n")
    d = make_driver(params(ssh_config_file=str(cfg)))
    assert d.platform == "eos" and d.ssh_config_file == str(cfg) and d.host_key_checking is True


@pytest.mark.parametrize("kw,msg", [
    ({"username": ""}, "switch leaf1: no login name: set ansible_user"),
    ({"password": None}, "switch leaf1: neither a password \\(ansible_password or switch_password\\)"),
])
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
