"""The modules end to end with the device I/O replaced: arguments, check mode, changed, no_log."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from switch_testlib import fixture, make, render

from ansible_collections.linerate.fabric.plugins.module_utils.switch import module_common
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import Unreachable
from ansible_collections.linerate.fabric.plugins.modules import switch_config, switch_counters, switch_info, switch_lldp

PORTS = ["swp1", "swp2"]
ARGS = {
    "name": "leaf1",
    "platform": "nvue",
    "host": "127.0.1.1",
    "username": "admin",
    "password": "s3cret-pw",
    "known_hosts": "/nonexistent",
    "fabric_ports": PORTS,
}


# the lossless read-back every oper makes (switch/test_nvue.py): swp1 lossless on priority 3 with its PFC
# watchdog, swp2 (PFC off) neither
LOSSLESS = {
    "nv show interface swp1 qos buffer ingress-priority-group -o json": fixture("nvue_buffer_pg_lossless.json"),
    "nv show interface swp2 qos buffer ingress-priority-group -o json": fixture("nvue_buffer_pg_lossy.json"),
    "nv show interface swp1 qos pfc-watchdog -o json": fixture("nvue_pfc_watchdog_on.json"),
    "nv show interface swp2 qos pfc-watchdog -o json": fixture("nvue_pfc_watchdog_off.json"),
}


def run_module(mod, args, monkeypatch, capsys, answers, check=False):
    d, fake = make("nvue", "leaf1", dict(LOSSLESS, **answers))
    d.close = lambda: None
    # switch_config makes its own driver; the read-only modules through module_common.read_only_module
    monkeypatch.setattr(mod if hasattr(mod, "make_driver") else module_common, "make_driver", lambda p: d)
    extra = {"_ansible_check_mode": check, "_ansible_diff": True}
    with patch_module_args(dict(args, **extra)):
        with pytest.raises(SystemExit):
            mod.main()
    return json.loads(capsys.readouterr().out), fake


def test_switch_config_check_mode_reports_commands_and_diff_only(monkeypatch, capsys, tmp_path):
    args = dict(ARGS, config=render("nvue", PORTS), backup_dir=str(tmp_path))
    res, fake = run_module(switch_config, args, monkeypatch, capsys, {"nv config show -o commands": fixture("nvue_config_show_commands.txt")}, check=True)
    # check mode reads the config and the window lock (reported, never taken)
    assert res["changed"] is True and fake.sent == [
        "nv config show -o commands",
        "cat /var/lock/linerate.lock/holder 2>/dev/null ; stat -c lock-mtime=%Y /var/lock/linerate.lock 2>/dev/null ; date +switch-now=%s",
    ]
    assert "nv set interface swp2 qos pfc profile linerate" in res["commands"]
    assert "link mtu 9216" in res["diff"]["after"] and res["backup_path"] is None
    assert res["command_log"][0]["output"].startswith("<running configuration")
    assert "s3cret-pw" not in json.dumps(res) and not list(tmp_path.iterdir())


def test_switch_config_unchanged_when_at_intent(monkeypatch, capsys, tmp_path):
    text = render("nvue", PORTS)
    res, fake = run_module(switch_config, dict(ARGS, config=text, backup_dir=str(tmp_path)), monkeypatch, capsys, {"nv config show -o commands": text})
    assert res["changed"] is False and res["commands"] == [] and fake.sent == ["nv config show -o commands"]


def test_switch_config_failure_names_the_switch(monkeypatch, capsys, tmp_path):
    res, _ = run_module(
        switch_config,
        dict(ARGS, config=render("nvue", PORTS), backup_dir=str(tmp_path)),
        monkeypatch,
        capsys,
        {"nv config show -o commands": fixture("nvue_config_show_commands.txt"), "nv config diff": "- set:\n    system:\n      hostname: x"},
    )
    assert res["failed"] and res["msg"].startswith("switch leaf1: uncommitted configuration is pending")


def test_switch_info_reports_ports(monkeypatch, capsys):
    res, _ = run_module(
        switch_info,
        ARGS,
        monkeypatch,
        capsys,
        {
            "nv config show -o commands": fixture("nvue_config_show_commands.txt"),
            "nv show interface": fixture("nvue_show_interface.txt"),
            "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
            "nv show interface swp2 qos roce status": fixture("nvue_roce_status_off.txt"),
        },
    )
    assert res["changed"] is False and res["pending"] == []
    assert res["ports"] == {"swp1": {"up": True, "pfc": [3], "ecn": True}, "swp2": {"up": False, "pfc": [], "ecn": False}}
    assert res["ports_down"] == ["swp2"] and "running_config" not in res
    assert res["problems"] == ["swp2: link is down"]  # PFC and ECN are not judged unless asked


def test_switch_info_post_check_is_the_one_switch_config_runs(monkeypatch, capsys):
    answers = {
        "nv config show -o commands": fixture("nvue_config_show_commands.txt"),
        "nv show interface": fixture("nvue_show_interface.txt"),
        "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
        "nv show interface swp2 qos roce status": fixture("nvue_roce_status_off.txt"),
    }
    res, _ = run_module(switch_info, dict(ARGS, no_drop_priority=3, ecn=True), monkeypatch, capsys, answers)
    head = "no lossless headroom for the no-drop priority {} (lossless priorities with headroom: {}): it drops under incast"
    wd = "PFC watchdog off on the no-drop priority {} (on: {}): a pause storm would stall the fabric"
    assert res["problems"] == [
        "swp2: link is down",
        "swp2: PFC on priorities [] (want [3])",
        "swp2: ECN off (want on)",
        "swp2: " + head.format(3, []),
        "swp2: " + wd.format(3, []),
    ]
    res, _ = run_module(switch_info, dict(ARGS, no_drop_priority=4, ecn=False, require_ports_up=False), monkeypatch, capsys, answers)
    assert res["problems"] == [
        "swp1: PFC on priorities [3] (want [4])",
        "swp1: ECN on (want off)",
        "swp1: " + head.format(4, [3]),
        "swp1: " + wd.format(4, [3]),
        "swp2: PFC on priorities [] (want [4])",
        "swp2: " + head.format(4, []),
        "swp2: " + wd.format(4, []),
    ]


def test_switch_counters_reads_the_roce_class_and_names_what_nvue_lacks(monkeypatch, capsys):
    from ansible_collections.linerate.fabric.plugins.modules import switch_counters

    counters = fixture_counters("nvue_roce_counters_cl512.txt")
    res, fake = run_module(
        switch_counters,
        ARGS,
        monkeypatch,
        capsys,
        {
            "nv show interface": fixture("nvue_show_interface.txt"),
            "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
            "nv show interface swp2 qos roce status": fixture("nvue_roce_status_off.txt"),
            "nv show interface swp1 qos roce counters": counters,
            "nv show interface swp2 qos roce counters": counters,
            "nv show interface swp1 link stats": link_stats("nvue_link_stats_reference.txt"),
            "nv show interface swp2 link stats": link_stats("nvue_link_stats_described.txt"),
        },
    )
    assert res["changed"] is False and res["ports_missing"] == []
    assert res["errors_msg"] == ""
    assert res["errors"]["swp1"] == {"errors": {"in-errors": 0, "out-errors": 0}, "link_down": 6, "link_down_unit": "transitions", "missing": []}
    assert res["errors"]["swp2"]["missing"] == ["out-errors"]
    swp1 = res["ports"]["swp1"]
    assert swp1["ecn_marked"] == 693777677344 and swp1["drops"] == {"3": 663060754115}
    assert swp1["tx_pause"] == {"3": 0} and not swp1["per_priority"] and swp1["missing"]
    assert res["ports"]["swp2"]["tx_pause"] == {"roce": 0}  # PFC off: the RoCE class has no priority
    assert not [c for c in fake.sent if c.startswith("nv set") or "apply" in c]


def test_switch_counters_bad_output_fails_naming_the_switch(monkeypatch, capsys):
    from ansible_collections.linerate.fabric.plugins.modules import switch_counters

    res, _ = run_module(
        switch_counters,
        dict(ARGS, fabric_ports=["swp1"]),
        monkeypatch,
        capsys,
        {
            "nv show interface": fixture("nvue_show_interface.txt"),
            "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
            "nv show interface swp1 qos roce counters": "operational applied\nrx-stats\n",
        },
    )
    assert res["failed"] and res["msg"].startswith("leaf1: nv show qos roce counters: no table")


def test_switch_counters_unreadable_error_counters_keep_the_congestion_counters(monkeypatch, capsys):
    from ansible_collections.linerate.fabric.plugins.modules import switch_counters

    res, _ = run_module(
        switch_counters,
        dict(ARGS, fabric_ports=["swp1"]),
        monkeypatch,
        capsys,
        {
            "nv show interface": fixture("nvue_show_interface.txt"),
            "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
            "nv show interface swp1 qos roce counters": fixture_counters("nvue_roce_counters_cl512.txt"),
            "nv show interface swp1 link stats": "Error: The requested item does not exist.",
        },
    )
    assert not res.get("failed") and res["ports"]["swp1"]["ecn_marked"] == 693777677344
    assert res["errors"] == {} and "leaf1" in res["errors_msg"]
    assert "nv show interface swp1 link stats" in res["errors_msg"] and "does not exist" in res["errors_msg"]


def link_stats(name):
    from parser_fixtures import fixture as source_fixture

    return source_fixture("counters", name)


def fixture_counters(name):
    """A counters fixture as the switch printed it (without its ``#source:`` line)."""
    from parser_fixtures import fixture as source_fixture

    return source_fixture("counters", name)


def test_switch_info_config_returns_the_delta_switch_config_would_push(monkeypatch, capsys, tmp_path):
    """The pre-check's delta is the window's: same read, same commands, nothing sent beyond reads."""
    answers = {
        "nv config show -o commands": fixture("nvue_config_show_commands.txt"),
        "nv show interface": fixture("nvue_show_interface.txt"),
        "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
        "nv show interface swp2 qos roce status": fixture("nvue_roce_status_off.txt"),
    }
    text = render("nvue", PORTS)
    info, fake = run_module(switch_info, dict(ARGS, config=text), monkeypatch, capsys, answers)
    window, _ = run_module(switch_config, dict(ARGS, config=text, backup_dir=str(tmp_path)), monkeypatch, capsys, answers, check=True)
    assert info["commands"] and info["commands"] == window["commands"]
    assert not [c for c in fake.sent if c.startswith("nv set") or "apply" in c]
    at_intent, _ = run_module(switch_info, dict(ARGS, config=text), monkeypatch, capsys, dict(answers, **{"nv config show -o commands": text}))
    assert at_intent["commands"] == []
    plain, _ = run_module(switch_info, ARGS, monkeypatch, capsys, answers)
    assert "commands" not in plain


def test_switch_info_config_outside_the_managed_scope_fails(monkeypatch, capsys):
    answers = {
        "nv config show -o commands": fixture("nvue_config_show_commands.txt"),
        "nv show interface": fixture("nvue_show_interface.txt"),
        "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
        "nv show interface swp2 qos roce status": fixture("nvue_roce_status_off.txt"),
    }
    res, _ = run_module(switch_info, dict(ARGS, config="nv set system hostname evil\n"), monkeypatch, capsys, answers)
    assert res["failed"] and "outside the managed scope" in res["msg"]


# ---------------------------------------------------------------- platforms and connections by Ansible's conventions
# (issue 26): ansible_network_os short or fully qualified, names one platform everywhere; the switch plays run
# on the controller whatever ansible_connection the inventory gives; the EOS enable secret.
import os  # noqa: E402
import subprocess  # noqa: E402

import yaml  # noqa: E402

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.linerate.fabric.plugins.filter.switch_fabric import switch_platform  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.intent import cabling  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.switch import network_os  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.switch import drivers  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
NETWORK_OS = [
    ("nvue", "nvue"),
    ("cumulus", "nvue"),
    ("nvidia.nvue.nvue", "nvue"),
    ("nvidia.nvue.httpapi", "nvue"),
    ("eos", "eos"),
    ("arista.eos.eos", "eos"),
    ("Arista.EOS.eos ", "eos"),
    ("sonic", "sonic"),
    ("dellemc.enterprise_sonic.sonic", "sonic"),
]


@pytest.mark.parametrize("value,platform", NETWORK_OS)
def test_one_table_names_the_platform_for_the_role_the_drivers_and_the_validation(value, platform):
    assert switch_platform(value) == platform
    assert switch_platform(value, "leaf1", True) == platform
    assert drivers.platform_of("leaf1", value) == platform
    assert network_os.normalize(value) == platform
    assert cabling.NETWORK_OS_ALLOWED.startswith(" | ".join(network_os.ALIASES) + ", ")
    assert os.path.isfile(os.path.join(ROOT, "switch_configs", platform, "fabric.j2"))


@pytest.mark.parametrize("value", ["junos", "cisco.ios.ios", "nvidia.nvue.api", "", None, 7])
def test_a_value_naming_no_platform(value):
    assert switch_platform(value) == value  # unchanged: the module refuses it naming the switch
    with pytest.raises(AnsibleFilterError) as err:
        switch_platform(value, "leaf1", True)
    assert str(err.value) == (
        f"switch leaf1: ansible_network_os (or switch_platform) is {value!r}: allowed: "
        "cumulus, enterprise_sonic, eos, nvue, sonic, also collection-qualified like "
        "arista.eos.eos, dellemc.enterprise_sonic.sonic, nvidia.nvue.nvue or nvidia.nvue.httpapi"
    )


def _plays(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return [p for p in yaml.safe_load(f) if "hosts" in p]


SWITCH_PLAYBOOKS = ["playbooks/stages/switches.yml", "playbooks/switch_rollback.yml", "playbooks/stages/verify.yml", "playbooks/audit.yml"]


@pytest.mark.parametrize("rel", SWITCH_PLAYBOOKS)
def test_every_switch_play_sets_the_local_connection_as_a_play_var(rel):
    plays = [p for p in _plays(rel) if str(p["hosts"]).startswith("switches")]
    assert plays
    for p in plays:
        # a play var beats the inventory's ansible_connection; the keyword alone does not
        assert p["vars"]["ansible_connection"] == "local", p["name"]
        assert p["vars"]["ansible_python_interpreter"] == "{{ ansible_playbook_python }}"


def test_switch_plays_run_on_the_controller_and_name_the_platform_whatever_the_inventory_says(tmp_path):
    """ansible-playbook with the plays' own vars against switches the inventory gives ansible_connection
    network_cli / httpapi and FQCN ansible_network_os: ping runs locally (network_cli would try port 1 of
    127.0.0.1), and the role default names each switch's platform and its templates."""
    hosts = {
        name: {
            "ansible_host": "127.0.0.1",
            "ansible_port": 1,
            "ansible_network_os": value,
            "ansible_connection": "network_cli" if i % 2 else "ansible.netcommon.httpapi",
        }
        for i, (value, name) in enumerate(
            [
                ("nvidia.nvue.nvue", "leaf1"),
                ("arista.eos.eos", "leaf2"),
                ("dellemc.enterprise_sonic.sonic", "leaf3"),
                ("cumulus", "leaf4"),
                ("nvidia.nvue.httpapi", "leaf5"),
                ("eos", "spine1"),
            ]
        )
    }
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"switches": {"hosts": hosts}}}}))
    play = _plays("playbooks/stages/switches.yml")[0]
    test_play = [
        {
            "name": "as the switch plays run",
            "hosts": "switches",
            "gather_facts": False,
            "connection": play["connection"],
            "vars": dict(play["vars"], tdir=f"{ROOT}/switch_configs"),
            "tasks": [
                {"ansible.builtin.include_vars": {"file": f"{ROOT}/roles/switch_fabric/defaults/main.yml"}},
                {"ansible.builtin.ping": {}},
                {
                    "ansible.builtin.assert": {
                        "that": [
                            "(tdir ~ '/' ~ (switch_fabric_platform | linerate.fabric.switch_platform(inventory_hostname, true)) ~ '/fabric.j2') is file",
                            "switch_fabric_connection.platform == expected[inventory_hostname]",
                        ]
                    }
                },
            ],
        }
    ]
    test_play[0]["vars"]["expected"] = {"leaf1": "nvue", "leaf2": "eos", "leaf3": "sonic", "leaf4": "nvue", "leaf5": "nvue", "spine1": "eos"}
    (tmp_path / "play.yml").write_text(yaml.safe_dump(test_play, sort_keys=False))
    bin_dir = os.path.dirname(os.path.abspath(os.sys.executable))
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
        ANSIBLE_FACT_CACHING="memory",
    )
    r = subprocess.run(
        [os.path.join(bin_dir, "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "ok=3" in r.stdout and "unreachable=0" in r.stdout and "failed=1" not in r.stdout


class EnableConn:
    """netmiko's enable(): check_enable_mode() by the prompt, enable() answering Password: with the secret."""

    base_prompt = "leaf1"

    def __init__(self, privileged, refuse=False):
        self.privileged, self.refuse, self.calls = privileged, refuse, []

    def check_enable_mode(self):
        self.calls.append("check_enable_mode")
        return self.privileged

    def enable(self):
        self.calls.append("enable")
        if self.refuse:
            raise ValueError("Failed to enter enable mode. Please ensure you pass the 'secret' argument to ConnectHandler.")
        self.privileged = True

    def disconnect(self):
        pass


def eos_connect(conn, **kw):
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.module_common import make_driver

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
        host_key_checking=False,
        connect_timeout=15,
        command_timeout=60,
        profile="linerate",
    )
    p.update(kw)
    d = make_driver(p)
    seen = []
    d.open_connection = lambda params: seen.append(params) or conn
    d.connect()
    return d, seen


def test_eos_enable_secret_reaches_netmiko_and_an_unprivileged_login_enters_enable():
    conn = EnableConn(privileged=False)
    d, seen = eos_connect(conn, enable_secret="en-s3cret")
    assert seen[0]["secret"] == "en-s3cret" and conn.calls == ["check_enable_mode", "enable"]
    assert d.conn is conn


def test_eos_privileged_login_sends_no_enable_and_no_secret_when_none_is_set():
    conn = EnableConn(privileged=True)
    _d, seen = eos_connect(conn)
    assert "secret" not in seen[0] and conn.calls == ["check_enable_mode"]


@pytest.mark.parametrize(
    "secret,hint", [("wrong", "the enable secret (ansible_become_password) was refused"), (None, "no enable secret is set (ansible_become_password)")]
)
def test_eos_enable_refused_names_the_variable_never_the_secret(secret, hint):
    with pytest.raises(SwitchError) as err:
        eos_connect(EnableConn(privileged=False, refuse=True), enable_secret=secret)
    assert str(err.value) == (
        f"switch leaf1: could not enter privileged exec (enable): {hint}: Failed to enter "
        "enable mode. Please ensure you pass the 'secret' argument to ConnectHandler."
    )
    assert "wrong" not in str(err.value)


def test_enable_secret_is_no_log_in_every_switch_module():
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.module_common import CONNECTION_ARGS

    assert CONNECTION_ARGS["enable_secret"] == {"type": "str", "no_log": True}
    with open(os.path.join(ROOT, "roles/switch_fabric/defaults/main.yml"), encoding="utf-8") as f:
        defaults = yaml.safe_load(f)
    assert defaults["switch_fabric_enable_secret"] == "{{ ansible_become_password | default('') }}"
    assert defaults["switch_fabric_connection"]["enable_secret"] == "{{ switch_fabric_enable_secret | default(omit, true) }}"


# ---------------------------------------------------------------- offline states: rendered and parsed (issue 26)
def run_offline(args, monkeypatch, capsys):
    """switch_config with no switch: any connection attempt fails the test."""
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import base

    monkeypatch.setattr(base.Driver, "open_connection", lambda self, params: pytest.fail("must not connect"))
    monkeypatch.setattr(switch_config, "make_driver", lambda p: pytest.fail("must not build a connection"))
    with patch_module_args(dict(args, _ansible_check_mode=False)):
        with pytest.raises(SystemExit):
            switch_config.main()
    return json.loads(capsys.readouterr().out)


OFFLINE = {"name": "leaf1", "fabric_ports": PORTS}
EOS_PORTS = ["Ethernet1/1", "Ethernet2/1"]
SONIC_PORTS = ["Ethernet0", "Ethernet8"]


@pytest.mark.parametrize("platform,ports", [("nvidia.nvue.nvue", PORTS), ("arista.eos.eos", EOS_PORTS), ("dellemc.enterprise_sonic.sonic", SONIC_PORTS)])
def test_rendered_is_every_command_of_the_intent_without_a_switch(platform, ports, monkeypatch, capsys):
    short = switch_platform(platform)
    text = render(short, ports)
    res = run_offline(dict(OFFLINE, state="rendered", platform=platform, config=text, fabric_ports=ports), monkeypatch, capsys)
    assert res["changed"] is False and res["rendered"] == res["commands"] and res["rendered"]
    # the same commands a push onto an empty switch computes (window_checks.delta, the push's own code)
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.window_checks import delta

    d = drivers.driver_for(short, "leaf1")
    assert res["rendered"] == delta(d, text, ports, "{}" if short == "sonic" else "")
    assert set(res) - {"invocation"} == {"changed", "rendered", "commands"}


def test_rendered_nvue_commands_are_the_platforms_own(monkeypatch, capsys):
    res = run_offline(dict(OFFLINE, state="rendered", platform="nvue", config=render("nvue", PORTS)), monkeypatch, capsys)
    assert "nv set interface swp2 qos pfc profile linerate" in res["rendered"]
    assert all(c.startswith("nv set ") for c in res["rendered"])


def test_parsed_is_the_delta_against_a_saved_running_config(monkeypatch, capsys, tmp_path):
    saved = tmp_path / "leaf1.txt"
    saved.write_text(fixture("nvue_config_show_commands.txt"))
    args = dict(OFFLINE, state="parsed", platform="cumulus", config=render("nvue", PORTS), running_config=str(saved))
    res = run_offline(args, monkeypatch, capsys)
    # exactly what switch_config's check mode computes against the same running config read from a switch
    check, _fake = run_module(
        switch_config,
        dict(ARGS, config=render("nvue", PORTS), backup_dir=str(tmp_path)),
        monkeypatch,
        capsys,
        {"nv config show -o commands": fixture("nvue_config_show_commands.txt")},
        check=True,
    )
    assert res["changed"] is False and res["commands"] == check["commands"] and res["commands"]
    assert "nv set interface swp2 qos pfc profile linerate" in res["commands"]
    assert isinstance(res["parsed"], str) and "swp1" in res["parsed"]


def test_parsed_of_a_config_at_intent_is_no_commands(monkeypatch, capsys, tmp_path):
    text = render("nvue", PORTS)
    saved = tmp_path / "at_intent.txt"
    saved.write_text(text)
    res = run_offline(dict(OFFLINE, state="parsed", platform="nvue", config=text, running_config=str(saved)), monkeypatch, capsys)
    assert res["commands"] == [] and res["changed"] is False


@pytest.mark.parametrize(
    "extra,message",
    [
        ({"state": "parsed"}, "switch leaf1: state=parsed needs running_config (the path of a saved running configuration)"),
        (
            {"state": "parsed", "running_config": "/nonexistent/leaf1.txt"},
            "switch leaf1: running_config /nonexistent/leaf1.txt cannot be read: [Errno 2] No such file or directory: '/nonexistent/leaf1.txt'",
        ),
        ({"state": "rendered", "running_config": "/x"}, "switch leaf1: running_config is for state=parsed, not state=rendered"),
        (
            {"state": "rendered", "config": None, "backup_file": "/x"},
            "switch leaf1: state=rendered needs config (the rendered intent) and takes no backup_file or restore_backup",
        ),
        ({"state": "rendered", "platform": "junos"}, "switch leaf1: unknown platform 'junos'"),
        ({"state": "replaced"}, "switch leaf1: host is required to reach the switch (state=replaced); state=rendered or parsed needs none"),
    ],
)
def test_offline_states_refuse_what_they_cannot_do_naming_the_key(extra, message, monkeypatch, capsys):
    args = dict(OFFLINE, platform="nvue", config=render("nvue", PORTS))
    args.update(extra)
    args = {k: v for k, v in args.items() if v is not None}
    res = run_offline(args, monkeypatch, capsys)
    assert res["failed"] is True and res["msg"].startswith(message), res["msg"]


def test_parsed_refuses_an_empty_or_foreign_running_config(monkeypatch, capsys, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    res = run_offline(dict(OFFLINE, state="parsed", platform="nvue", config=render("nvue", PORTS), running_config=str(empty)), monkeypatch, capsys)
    assert res["failed"] and res["msg"] == f"switch leaf1: running_config {empty} is empty"
    eos = tmp_path / "eos.txt"
    eos.write_text(fixture("eos_running.txt"))
    res = run_offline(
        dict(OFFLINE, state="parsed", platform="sonic", config=render("sonic", SONIC_PORTS), fabric_ports=SONIC_PORTS, running_config=str(eos)),
        monkeypatch,
        capsys,
    )
    assert res["failed"] and res["msg"].endswith(f"(in running_config {eos})"), res["msg"]


# ---------------------------------------------------------------- the read-only skeleton (module_common.read_only_module)


def _lost(*_a, **_k):
    raise Unreachable("leaf1", "unreachable at 127.0.1.1:22: timed out")


@pytest.mark.parametrize("mod,unreachable", [(switch_info, True), (switch_counters, False)])
def test_read_only_modules_share_one_skeleton_and_keep_their_unreachable_rule(monkeypatch, capsys, mod, unreachable):
    """switch_info shows an unreachable switch as UNREACHABLE; switch_counters fails with the command, as before."""
    d, _fake = make("nvue", "leaf1", {})
    closed = []
    d.close = lambda: closed.append(True)
    d.send = _lost
    monkeypatch.setattr(module_common, "make_driver", lambda p: d)
    with patch_module_args(dict(ARGS)):
        with pytest.raises(SystemExit):
            mod.main()
    res = json.loads(capsys.readouterr().out)
    assert closed == [True] and res.get("changed", False) is False and res["switch"] == "leaf1"
    assert res["msg"] == "switch leaf1: unreachable at 127.0.1.1:22: timed out"
    if unreachable:
        assert res["unreachable"] is True and not res.get("failed")
    else:
        assert res["failed"] is True and "unreachable" not in res


@pytest.mark.parametrize("mod", [switch_info, switch_counters, switch_lldp])
def test_read_only_modules_refuse_a_switch_without_credentials_before_connecting(capsys, mod):
    with patch_module_args(dict(ARGS, password=None)):
        with pytest.raises(SystemExit):
            mod.main()
    res = json.loads(capsys.readouterr().out)
    assert res["failed"] is True and res["msg"].startswith("switch leaf1: neither a password")


def test_switch_info_reports_a_window_an_earlier_run_left_cut_off(monkeypatch, capsys, tmp_path):
    """The pre-check's read: the journal entry and the switch now, as a warning and earlier_window."""
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import journal

    running = fixture("nvue_config_show_commands.txt")
    backup = tmp_path / "leaf1" / "T1.nvue.cfg"
    backup.parent.mkdir()
    backup.write_text(running)
    journal.write(
        journal.journal_path(str(tmp_path), "leaf1"),
        {
            "switch": "leaf1",
            "run": "T1",
            "pid": 2**22 + 12345,
            "machine": None,
            "state": "cut-off",
            "step": "push",
            "backup_path": str(backup),
            "outcome": "switch leaf1: interrupted by SIGTERM during push; rolled back",
        },
    )
    seen = []  # the module's warning (in a module process it comes back with the result; in-process, here)
    monkeypatch.setattr(switch_info, "warn", seen.append)
    res, fake = run_module(
        switch_info,
        dict(ARGS, backup_dir=str(tmp_path), fabric_ports=[]),
        monkeypatch,
        capsys,
        {"nv config show -o commands": running, "nv config revision": "1  applied_and_saved\n"},
    )
    want = (
        f"switch leaf1: an earlier change window on this switch (run T1, pid {2**22 + 12345}) was cut off: "
        f"switch leaf1: interrupted by SIGTERM during push; rolled back. Now: the running config is "
        f"byte-identical to its backup {backup}, nothing pending"
    )
    assert seen == [want]
    assert res["earlier_window"]["clean"] is True and res["earlier_window"]["path"] == str(tmp_path / "leaf1" / "window.json")
    # read before anything else the pre-check reads
    assert fake.sent[:1] == ["nv config show -o commands"]
    plain, _ = run_module(switch_info, dict(ARGS, fabric_ports=[]), monkeypatch, capsys, {"nv config show -o commands": running})
    assert plain["earlier_window"] is None and seen == [want]  # no journal read: nothing more said
    assert plain["window_lock"] is None


def test_switch_info_names_the_holder_of_the_window_lock(monkeypatch, capsys):
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import lock

    holder = lock.Holder("ops", "ctl", 4242, "R1", 0, machine="0123456789abcdef0123456789abcdef", start=7)
    read = "cat /var/lock/linerate.lock/holder 2>/dev/null ; stat -c lock-mtime=%Y /var/lock/linerate.lock 2>/dev/null ; date +switch-now=%s"
    running = fixture("nvue_config_show_commands.txt")
    res, _ = run_module(
        switch_info,
        dict(ARGS, fabric_ports=[]),
        monkeypatch,
        capsys,
        {"nv config show -o commands": running, read: f"{holder.line()}\nlock-mtime=1000\nswitch-now=1030"},
    )
    assert res["window_lock"] == "ops@ctl (machine 0123456789ab, pid 4242, run R1, since 19700101T000000Z)"
    res, _ = run_module(
        switch_info, dict(ARGS, fabric_ports=[]), monkeypatch, capsys, {"nv config show -o commands": running, read: "lock-mtime=1000\nswitch-now=1030"}
    )
    assert res["window_lock"] == "a window that has not written its name yet (an empty lock, 30 s old by the switch's clock)"


def test_the_read_only_modules_document_what_the_shared_fragment_says():
    """switch_info, switch_counters and switch_lldp take fabric_ports, the notes and the attributes from one
    fragment (doc_fragments/switch_connection.py SWITCH_READ_ONLY), as ansible-doc renders them."""
    import os
    import subprocess
    from switch_testlib import ROOT

    names = [f"linerate.fabric.{m}" for m in ("switch_info", "switch_counters", "switch_lldp")]
    out = subprocess.run(
        [os.path.join(ROOT, ".venv", "bin", "ansible-doc"), "--json", *names],
        cwd=ROOT,
        env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg")),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    for name, entry in json.loads(out).items():
        doc = entry["doc"]
        assert doc["options"]["fabric_ports"]["type"] == "list" and doc["options"]["fabric_ports"]["default"] == [], name
        assert "Connects from the controller; run it with C(connection: local)." in doc["notes"], name
        assert doc["attributes"]["check_mode"] == {"description": "Read-only; runs the same in check mode.", "support": "full"}, name
