"""SONiC's CONFIG_DB delta (switch/sonic_delta.py): the fields linerate manages, and the commands a
difference becomes (SONiC's CLI for MTU, speed and PFC; sonic-db-cli for the rest), field by field."""

from ansible_collections.linerate.fabric.plugins.module_utils.switch import sonic_delta


def test_scope_field_by_field():
    scope = sonic_delta.sonic_scope("linerate", ["Ethernet0"])
    inside = [
        ("PORT", "Ethernet0", "mtu"),
        ("PORT", "Ethernet0", "speed"),
        ("PORT_QOS_MAP", "Ethernet0", "pfc_enable"),
        ("PORT_QOS_MAP", "Ethernet0", "dscp_to_tc_map"),
        ("DSCP_TO_TC_MAP", "LINERATE", "26"),
        ("WRED_PROFILE", "LINERATE_LOSSLESS", "ecn"),
        ("QUEUE", "Ethernet0|3", "wred_profile"),
    ]
    outside = [
        ("PORT", "Ethernet0", "admin_status"),
        ("PORT", "Ethernet4", "mtu"),
        ("PORT_QOS_MAP", "Ethernet4", "pfc_enable"),
        ("PORT_QOS_MAP", "Ethernet4", "dscp_to_tc_map"),
        ("PORT_QOS_MAP", "Ethernet0", "tc_to_queue_map"),
        ("DSCP_TO_TC_MAP", "AZURE", "26"),
        ("WRED_PROFILE", "AZURE_LOSSLESS", "ecn"),
        ("QUEUE", "Ethernet4|3", "wred_profile"),
        ("QUEUE", "Ethernet0|3", "scheduler"),
        ("DEVICE_METADATA", "localhost", "hostname"),
    ]
    assert [scope(*k) for k in inside] == [True] * len(inside)
    assert [scope(*k) for k in outside] == [False] * len(outside)


def test_removals_pfc_off_per_priority_and_hdel_for_other_fields():
    have = {
        "PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "4,3", "dscp_to_tc_map": "AZURE"}},
        "QUEUE": {"Ethernet0|3": {"wred_profile": "AZURE_LOSSLESS"}},
        "PORT": {"Ethernet0": {"mtu": "9100", "admin_status": "up"}},
    }
    scope = sonic_delta.sonic_scope("linerate", ["Ethernet0"])
    assert sonic_delta.sonic_commands({}, have, scope) == [
        "sudo config interface pfc priority Ethernet0 3 off",
        "sudo config interface pfc priority Ethernet0 4 off",
        "sudo sonic-db-cli CONFIG_DB hdel 'PORT_QOS_MAP|Ethernet0' dscp_to_tc_map",
        "sudo sonic-db-cli CONFIG_DB hdel 'QUEUE|Ethernet0|3' wred_profile",
        "sudo sonic-db-cli CONFIG_DB hdel 'PORT|Ethernet0' mtu",
    ]


def test_sets_use_the_cli_for_mtu_speed_and_pfc():
    scope = sonic_delta.sonic_scope("linerate", ["Ethernet0", "Ethernet8"])
    have = {"PORT": {"Ethernet0": {"mtu": "9100", "speed": "100000"}}, "PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "3,4"}, "Ethernet8": {"pfc_enable": "3"}}}
    want = {"PORT": {"Ethernet0": {"mtu": "9216", "speed": "400000"}}, "PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "3,6"}, "Ethernet8": {"pfc_enable": "4,3"}}}
    assert sonic_delta.sonic_commands(want, have, scope) == [
        "sudo config interface mtu Ethernet0 9216",
        "sudo config interface speed Ethernet0 400000",
        "sudo config interface pfc priority Ethernet0 4 off",
        "sudo config interface pfc priority Ethernet0 6 on",
        # an order the CLI would not write: the field as given
        "sudo sonic-db-cli CONFIG_DB hset 'PORT_QOS_MAP|Ethernet8' pfc_enable 4,3",
    ]
