"""Platform driver details whole (mutation testing of the switch group): what NVUE, SONiC and EOS read
back per platform (sizes, QoS counters, PFC watchdog storms), the refusals of their parsers, what each
platform's output counts as an error, and recovery's verdict when it never ran."""

import pytest

from parser_fixtures import fixture as source_fixture
from switch_testlib import make

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch import eos, nvue_show, sonic_delta
from ansible_collections.linerate.fabric.plugins.module_utils.switch import window as switch_window


# ---------------------------------------------------------------- NVUE


def test_nvue_sizes_in_bytes():
    assert [nvue_show._bytes(v) for v in ("1 GB", "2 MB", "18.98 KB", "0 Bytes", 7, "x", True, float("inf"))] == [
        1024**3,
        2 * 1024**2,
        19436,
        0,
        7,
        None,
        None,
        None,
    ]


@pytest.mark.parametrize(
    "parse,text,message",
    [
        (
            nvue_show.parse_ingress_priority_groups,
            '{"a": {}}',
            "nvue: nv show interface <swp> qos buffer ingress-priority-group -o json: 'a' is not a priority group row",
        ),
        (
            nvue_show.parse_interface_summary,
            "Interface   Admin State\n---------   -----------\nswp1        up\n",
            "nvue: line 1: no Interface and State columns in the header: 'Interface   Admin State'",
        ),
    ],
)
def test_nvue_refusals_exact(parse, text, message):
    with pytest.raises(ParseError) as err:
        parse(text)
    assert str(err.value) == message


def test_nvue_a_table_that_ends_at_its_rule_has_no_interface():
    assert nvue_show.parse_interface_summary("Interface  State\n---------  -----") == {}


# ---------------------------------------------------------------- SONiC


def test_sonic_ecn_marks_of_a_port_the_queue_counters_omit_are_unproven_not_zero():
    d, _ = make(
        "sonic",
        answers={
            "show pfc counters": source_fixture("counters", "sonic_pfc_counters_unittest.txt"),
            "show queue counters": source_fixture("counters", "sonic_queue_counters_ecn_hld.txt"),
        },
    )
    e0 = d.qos_counters(["Ethernet0"])["Ethernet0"]
    assert (e0["ecn_marked"], e0["drops"], e0["missing"]) == (None, None, ["queue drops", "ECN-marked packets", "CNPs sent"])


def test_sonic_pfcwd_storms_per_queue():
    table = (
        "     QUEUE       STATUS    STORM DETECTED/RESTORED    TX OK/DROP    RX OK/DROP    TX LAST OK/DROP"
        "    RX LAST OK/DROP\n"
        "-----------  ---------  -------------------------  ------------  ------------  -----------------"
        "  -----------------\n"
        "Ethernet0:3    stormed                        3/2           0/0           0/0                0/0"
        "                0/0\n"
        "Ethernet0:4  operational                  1,024/1,024           0/0           0/0                0/0"
        "                0/0\n"
    )
    d, _ = make("sonic", answers={"show pfcwd stats": table})
    assert d.pfcwd_storms(["Ethernet0"]) == {"Ethernet0": {"3": {"detected": 3, "stormed": True}, "4": {"detected": 1024, "stormed": False}}}


def test_sonic_starts_the_watchdog_only_where_it_differs_on_every_port():
    wd = {"action": "drop", "detection_time": "200", "restoration_time": "200"}
    want = {"PFC_WD": {"Ethernet0": dict(wd), "Ethernet8": dict(wd)}}
    assert sonic_delta.sonic_commands(want, {"PFC_WD": {"Ethernet0": dict(wd)}}, lambda *a: True) == [
        "sudo config pfcwd start --action drop ports Ethernet8 detection-time 200 --restoration-time 200"
    ]


@pytest.mark.parametrize("output", ["Error 5: the table is locked", "Config Rollback: rollback linerate-T1 failed"])
def test_sonic_counts_these_answers_as_errors(output):
    assert make("sonic")[0].error_in("ok\n" + output + "\n") == output


# ---------------------------------------------------------------- EOS


def test_eos_discard_leaves_config_mode_whatever_end_answers():
    d, fake = make("eos", answers={"end": "% Not in config mode"})
    assert d.discard() is None and fake.sent == ["end"]


def test_eos_an_empty_interface_block_outside_the_fabric_ports_is_out_of_scope():
    tree = {"interface Ethernet9/1": ("interface Ethernet9/1", {})}
    assert eos.eos_out_of_scope(tree, lambda path, key: True, {"interface Ethernet1/1"}) == ["interface Ethernet9/1"]


# ---------------------------------------------------------------- recovery


def test_a_recovery_that_never_ran_says_unknown():
    assert switch_window.recover(None, "backup", attempts=0) == (False, "unknown")


def test_eos_discard_aborts_its_own_session_while_it_is_pending():
    listing = (
        "  Name                           State                User       Terminal\n"
        "  ------------------------------ -------------------- ---------- --------\n"
        "* linerate-T1                    pending              admin      vty\n"
    )
    d, fake = make("eos", answers={"show configuration sessions": listing})
    d._session = "linerate-T1"
    d.discard()
    assert fake.sent == ["end", "show configuration sessions", "configure session linerate-T1 abort"]
    assert d._session is None


def test_eos_watchdog_counters_refuse_a_queue_that_is_not_one():
    with pytest.raises(ParseError) as err:
        eos.parse_pfcwd_counters('{"interfaces": {"Ethernet1/1": {"txQueues": {"3": 5}}}}')
    assert str(err.value) == ("eos: show priority-flow-control counters watchdog | json: 'Ethernet1/1' queue '3' is not {stuckCount, recoveryCount}")


def test_the_lossless_read_back_names_what_a_platform_does_not_read():
    from switch.test_window import Book

    d = Book("mtu 1500\n", oper={"p1": {"pfc": [3], "headroom": None, "pfcwd": None}})
    d.pfcwd_storms = lambda ports: None
    assert d.lossless(["p1", "p2"]) == {
        "p1": {
            "pfc": [3],
            "headroom": None,
            "pfcwd": None,
            "storms": None,
            "missing": ["lossless headroom", "PFC watchdog state", "PFC watchdog storm counters"],
        }
    }


def test_eos_a_changed_watchdog_port_action_is_one_command_not_a_removal_and_an_addition():
    d, _ = make("eos")
    have = d.parse("interface Ethernet1/1\n   mtu 9214\n   priority-flow-control pause watchdog port action errdisable\n!\nend\n")
    want = d.parse("interface Ethernet1/1\n   mtu 9214\n   priority-flow-control pause watchdog port action drop\n!\nend\n")
    assert d.commands(want, have, d.managed_scope(want, ["Ethernet1/1"])) == [
        "interface Ethernet1/1",
        "priority-flow-control pause watchdog port action drop",
        "exit",
    ]
