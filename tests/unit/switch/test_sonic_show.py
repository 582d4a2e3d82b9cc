"""SONiC's show-command parsers (switch/sonic_show.py) on published outputs: column tables by header
positions, misaligned rows, the errors SONiC prints."""

import pytest

from switch_testlib import fixture

from ansible_collections.linerate.fabric.plugins.module_utils.switch import sonic, sonic_show


def test_oper_parsers():
    st = sonic_show.parse_interfaces_status(fixture("sonic_interfaces_status.txt"))
    assert st["Ethernet0"]["up"] is True and st["Ethernet8"]["up"] is False and st["Ethernet0"]["mtu"] == 9216
    assert sonic_show.parse_pfc_priority(fixture("sonic_pfc_priority.txt")) == {"Ethernet0": [3], "Ethernet8": [3, 4]}
    ecn = sonic_show.parse_show_ecn(fixture("sonic_show_ecn.txt"))
    assert ecn["LINERATE_LOSSLESS"]["green_min_threshold"] == "153600"
    with pytest.raises(ValueError):
        sonic_show.parse_pfc_priority("Cannot find interface Ethernet1234")


def test_real_docs_outputs_read_first_table_and_misaligned_rows():
    # Command Reference: two commands in one capture; only the first table's
    # ports, not the second prompt and header as rows
    assert sonic_show.parse_pfc_priority(fixture("real_sonic_pfc_priority_docs.txt")) == {
        port: [3, 4] for port in ("Ethernet0", "Ethernet2", "Ethernet8", "Ethernet10", "Ethernet16")
    }
    # rows printed one character left of their rule: MTU 9100 is MTU, not Speed "100G   9"
    st = sonic_show.parse_interfaces_status(fixture("real_sonic_interfaces_status_docs.txt"))
    assert sorted(st) == ["Ethernet0", "Ethernet4", "Ethernet8"]
    assert st["Ethernet8"] == {"up": False, "admin_up": False, "mtu": 9100, "speed": "100G"}
    assert st["Ethernet0"]["admin_up"] is True


def test_real_unittest_outputs_pfc_priority_and_ecn():
    assert sonic_show.parse_pfc_priority(fixture("real_sonic_pfc_priority_all_unittest.txt")) == {"Ethernet0": [3, 4], "Ethernet4": [3, 4]}
    assert sonic_show.parse_pfc_priority(fixture("real_sonic_pfc_priority_after_config_on.txt")) == {"Ethernet0": [3, 4, 5]}
    ecn = sonic_show.parse_show_ecn(fixture("real_sonic_show_ecn_one_profile_msft.txt"))
    assert list(ecn) == ["AZURE_LOSSLESS"] and len(ecn["AZURE_LOSSLESS"]) == 13
    assert (ecn["AZURE_LOSSLESS"]["ecn"], ecn["AZURE_LOSSLESS"]["green_min_threshold"], ecn["AZURE_LOSSLESS"]["wred_red_enable"]) == (
        "ecn_all",
        "1048576",
        "true",
    )


def test_parse_table_cells_of_several_words():
    text = (
        "Name    Description              Type\n"
        "------  -----------------------  ------\n"
        "a       two  runs                x\n"
        "b                                y z\n"
    )
    assert sonic_show.parse_table(text) == [{"Name": "a", "Description": "two runs", "Type": "x"}, {"Name": "b", "Description": "", "Type": "y z"}]


def test_pfc_priority_error_names_sonic():
    with pytest.raises(sonic.ParseError) as err:
        sonic_show.parse_pfc_priority("Cannot find interface Ethernet1234\n")
    assert str(err.value) == "sonic: Cannot find interface Ethernet1234" and err.value.tool == "sonic"


def test_show_ecn_profiles_and_status_fields():
    text = (
        "Profile: **AZURE_LOSSLESS**\n-----  ---\necn    ecn_all\nwred_green_enable   true\n"
        "not a field line here\n\nProfile: LINERATE_LOSSLESS\n-----  ---\necn    ecn_none\n"
    )
    assert sonic_show.parse_show_ecn("ecn ecn_all\n" + text) == {
        "AZURE_LOSSLESS": {
            "ecn": "ecn_all",
            "wred_green_enable": "true",
            "warnings": ["line 6: not a 'field  value' row: 'not a field line here'"],
        },  # issue 38
        "LINERATE_LOSSLESS": {"ecn": "ecn_none"},
    }
    status = (
        "  Interface  Speed    MTU  Oper  Admin\n"
        "-----------  -----  -----  ----  -----\n"
        "  Ethernet0   400G   9216    up   down\n"
        "  Ethernet4   100G    N/A  down     up\n"
    )
    assert sonic_show.parse_interfaces_status(status) == {
        "Ethernet0": {"up": True, "admin_up": False, "mtu": 9216, "speed": "400G"},
        "Ethernet4": {"up": False, "admin_up": True, "mtu": None, "speed": "100G"},
    }
