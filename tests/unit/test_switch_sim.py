"""The switch simulators' own semantics: confirm/commit timers, paging, errors in the platform's words."""

import asyncio

import pytest

from switch_testlib import SimSwitch


def _sim(tmp_path, monkeypatch, platform, ports):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    return SimSwitch(tmp_path, platform, ports)


def test_nvue_unconfirmed_apply_rolls_back_when_the_timer_fires(tmp_path, monkeypatch):
    sim = _sim(tmp_path, monkeypatch, "nvue", ["swp1"])

    async def scenario():
        sim.sw.loop = asyncio.get_running_loop()
        assert sim("nv set interface swp1 link mtu 9000") == ""
        assert "rev_id: 2" in sim("nv config apply --confirm 1s -y")
        assert "link mtu 9000" in sim("nv config show -o commands")
        await asyncio.sleep(1.3)

    asyncio.run(scenario())
    assert "link mtu" not in sim("nv config show -o commands")
    assert "rolled_back" in sim("nv config revision")
    assert sim("nv config confirm -y").startswith("Error:")


def test_eos_commit_timer_expiry_restores_the_running_config(tmp_path, monkeypatch):
    sim = _sim(tmp_path, monkeypatch, "eos", ["Ethernet1/1"])
    before = sim("show running-config")

    async def scenario():
        sim.sw.loop = asyncio.get_running_loop()
        for c in ("configure session s1", "interface Ethernet1/1", "mtu 9000", "commit timer 00:00:01"):
            assert sim(c) == ""
        assert "mtu 9000" in sim("show running-config")
        assert "pendingCommitTimer" in sim("show configuration sessions")
        await asyncio.sleep(1.3)

    asyncio.run(scenario())
    assert sim("show running-config") == before


def test_eos_errors_and_mode_fallback(tmp_path, monkeypatch):
    sim = _sim(tmp_path, monkeypatch, "eos", ["Ethernet1/1", "Ethernet2/1"])
    assert sim("show bogus") == "% Invalid input (at token 1: 'bogus')"
    sim("configure session s2")
    sim("interface Ethernet1/1")
    assert sim("mtu 99999") == "% Invalid input (at token 1: '99999')"
    assert sim.sw.prompt(sim.ctx) == "sw(config-s-s2-if-Et1/1)#"
    assert sim("interface Ethernet2/1") == ""  # a parent-mode command from interface mode
    assert sim.sw.prompt(sim.ctx) == "sw(config-s-s2-if-Et2/1)#"
    assert "+   mtu" not in sim("show session-config diffs")
    assert sim("mtu 9216") == "% Invalid input (at token 1: '9216')"  # 7050x4: at most 9214
    sim("mtu 9214")
    assert "+   mtu 9214" in sim("show session-config diffs")
    assert sim("abort") == "" and sim.sw.sessions == {}


def test_sonic_errors_in_sonic_words(tmp_path, monkeypatch):
    sim = _sim(tmp_path, monkeypatch, "sonic", ["Ethernet0"])
    assert sim("config interface mtu Ethernet0 9216") == "Root privileges are required for this operation"
    out = sim("sudo config interface mtu Ethernet0 10")
    assert out.endswith('Error: Invalid value for "<interface_mtu>": 10 is not in the valid range of 68 to 9216.')
    assert sim("sudo config interface mtu Ethernet4 9216").startswith("Error: Interface name is invalid")
    assert sim("show pfc priority Ethernet1234") == "Cannot find interface Ethernet1234"
    assert sim("sudo config bogus").endswith('Error: No such command "bogus".')
    assert sim("frobnicate") == "-bash: frobnicate: command not found"


def test_eos_pages_long_output_until_terminal_length_0(tmp_path, monkeypatch):
    from sim_server import CliSession

    sim = _sim(tmp_path, monkeypatch, "eos", [f"Ethernet{i}/1" for i in range(1, 9)])

    class Chan:
        def __init__(self):
            self.out = ""

        def write(self, s):
            self.out += s

        def exit(self, code):
            self.out += f"<exit {code}>"

    s = CliSession(sim.sw, "admin")
    s.chan = Chan()
    s.data_received("show running-config\n", None)
    assert s.chan.out.endswith(" --More-- ") and s.more
    s.data_received(" ", None)
    s.data_received(" ", None)
    assert s.more is None and s.chan.out.rstrip().endswith("sw#")
    s.chan.out = ""
    s.data_received("terminal length 0\r\n", None)
    assert "Pagination disabled." in s.chan.out
    s.chan.out = ""
    s.data_received("show running-config\n", None)
    assert "--More--" not in s.chan.out and s.chan.out.endswith("end\r\nsw#")


# ------------------------------------------------ SONiC: CONFIG_DB against the YANG constraints
def test_sonic_factory_config_db_is_valid(tmp_path, monkeypatch):
    import sonic_yang

    sim = _sim(tmp_path, monkeypatch, "sonic", ["Ethernet0", "Ethernet8"])
    assert sonic_yang.validate(sim.sw.db) == []


def test_sonic_db_cli_writes_a_bad_name_and_the_next_checkpoint_refuses_it(tmp_path, monkeypatch):
    """sonic-db-cli writes anything (it is redis); config checkpoint validates the running config."""
    sim = _sim(tmp_path, monkeypatch, "sonic", ["Ethernet0"])
    assert sim("sudo sonic-db-cli CONFIG_DB hset 'DSCP_TO_TC_MAP|my map' 26 3") == "1"
    assert sim.sw.db["DSCP_TO_TC_MAP"]["my map"] == {"26": "3"}
    out = sim("sudo config checkpoint cp1")
    assert "Config Rollback: Config checkpoint failed due to Running configs on the device are not valid." in out
    assert out.endswith("Error: Running configs on the device are not valid.")
    assert sim.sw.checkpoints == {}
    assert sim("sudo sonic-db-cli CONFIG_DB hdel 'DSCP_TO_TC_MAP|my map' 26") == "1"
    assert sim("sudo config checkpoint cp1").endswith("Checkpoint created successfully.\n")


def test_sonic_rollback_refuses_an_invalid_checkpoint(tmp_path, monkeypatch):
    sim = _sim(tmp_path, monkeypatch, "sonic", ["Ethernet0"])
    sim("sudo config checkpoint cp1")
    sim.sw.checkpoints["cp1"]["PORT"]["Ethernet0"]["mtu"] = "9300"  # a checkpoint file edited by hand
    sim("sudo config interface mtu Ethernet0 9000")
    out = sim("sudo config rollback cp1")
    assert out.endswith("Error: The given target config is not valid")
    assert sim.sw.db["PORT"]["Ethernet0"]["mtu"] == "9000"  # nothing replaced


@pytest.mark.parametrize(
    "table, key, fields, why",
    [
        # invented forms the models refuse
        ("DSCP_TO_TC_MAP", "linerate.v2", {"26": "3"}, "key name 'linerate.v2': does not match the pattern"),
        ("DSCP_TO_TC_MAP", "A" * 33, {"26": "3"}, "length 33 outside 1..32"),
        ("DSCP_TO_TC_MAP", "RDMA", {"64": "3"}, "dscp '64': does not match the pattern"),
        ("DSCP_TO_TC_MAP", "RDMA", {"26": "16"}, "tc of 26: '16': out of range 0..15"),
        ("WRED_PROFILE", "RDMA", {"ecn": "ecn_on"}, "ecn: 'ecn_on': not one of ecn_none"),
        (
            "WRED_PROFILE",
            "RDMA",
            {"green_min_threshold": "2000", "green_max_threshold": "1000"},
            "green_max_threshold: '1000': below green_min_threshold 2000 (must)",
        ),
        ("WRED_PROFILE", "RDMA", {"green_drop_probability": "101"}, "out of range 0..100"),
        ("WRED_PROFILE", "RDMA", {"wred_green_enable": "yes"}, "not one of true | false"),
        ("WRED_PROFILE", "RDMA", {"green_threshold": "1"}, "green_threshold: not a leaf of the model"),
        ("QUEUE", "Ethernet0|3", {"wred_profile": "NOPE"}, "no WRED_PROFILE entry named 'NOPE' (leafref)"),
        ("QUEUE", "Ethernet99|3", {}, "key ifname 'Ethernet99'"),
        ("QUEUE", "Ethernet0", {}, "key has 1 part(s), the model 2"),
        ("PORT_QOS_MAP", "Ethernet0", {"pfc_enable": "3,8"}, "does not match the pattern ([0-7](,[0-7])*)?"),
        ("PORT_QOS_MAP", "Ethernet0", {"dscp_to_tc_map": "NOPE"}, "no DSCP_TO_TC_MAP entry named 'NOPE'"),
        ("PORT_QOS_MAP", "Ethernet0", {"tc_to_pg_map": "NOPE"}, "no TC_TO_PRIORITY_GROUP_MAP entry"),
        ("CABLE_LENGTH", "AZURE", {"Ethernet0": "5"}, "length of Ethernet0: '5': does not match the pattern [0-9]+m"),
        ("BUFFER_PG", "Ethernet0|3-4", {"profile": "pg_lossless_400000_5m_profile"}, "no BUFFER_PROFILE entry"),
        ("BUFFER_PG", "Ethernet0|8", {"profile": "NULL"}, "key pg_num '8'"),
        ("PFC_WD", "Ethernet0", {"detection_time": "50"}, "out of range 100..5000"),
        ("PFC_WD", "GLOBAL", {"action": "drop"}, "action: not allowed on this key (must)"),
    ],
)
def test_sonic_yang_refuses_invented_forms(tmp_path, monkeypatch, table, key, fields, why):
    import sonic_yang

    sim = _sim(tmp_path, monkeypatch, "sonic", ["Ethernet0"])
    db = sim.sw.db
    db.setdefault(table, {})[key] = fields
    problems = sonic_yang.validate(db)
    assert len(problems) == 1 and why in problems[0], problems
    assert problems[0].startswith(f"{table}|{key}: ") and problems[0].endswith(")")


def test_sonic_yang_accepts_real_but_rare_forms(tmp_path, monkeypatch):
    """Forms the models allow that the fabric template does not write."""
    import sonic_yang

    sim = _sim(tmp_path, monkeypatch, "sonic", ["Ethernet0"])
    db = sim.sw.db
    db["DSCP_TO_TC_MAP"]["a-b_C9"] = {"0": "15", "63": "0"}  # tc up to 15, dscp 0 and 63
    db["DSCP_TO_TC_MAP"]["X" * 32] = {"9": "1"}  # 32 characters
    db["WRED_PROFILE"]["w"] = {"ecn": "ecn_green_yellow", "green_min_threshold": "5", "green_max_threshold": "5"}
    db["QUEUE"] = {"Ethernet0|3-4": {"wred_profile": "w"}, "CPU|0": {}}  # a qindex range; the CPU port
    db["PORT_QOS_MAP"] = {"global": {"dscp_to_tc_map": "a-b_C9"}, "Ethernet0": {"pfc_enable": ""}}
    db["BUFFER_POOL"] = {"ingress_lossless_pool": {"size": "1"}}  # not modelled: not checked
    db["BUFFER_PROFILE"] = {"pg_lossless_400000_5m_profile": {"pool": "ingress_lossless_pool", "size": "1", "dynamic_th": "-8", "xon": "0", "xoff": "1"}}
    db["BUFFER_PG"] = {"Ethernet0|3-4": {"profile": "pg_lossless_400000_5m_profile"}, "Ethernet0|0": {"profile": "NULL"}}
    db["CABLE_LENGTH"] = {"AZURE": {"Ethernet0": "300m"}}
    db["PFC_WD"] = {"GLOBAL": {"POLL_INTERVAL": "200"}, "Ethernet0": {"action": "alert", "detection_time": "200", "restoration_time": "60000"}}
    assert sonic_yang.validate(db) == []


def test_sonic_yang_every_constraint_names_its_source_line():
    import sonic_yang

    c = sonic_yang.CONSTRAINTS
    assert c["_source"]["commit"] and "Apache-2.0" in c["_source"]["licence"]
    for table, model in c["tables"].items():
        assert model["file"].startswith("sonic-") and model["file"].endswith(".yang"), table
        specs = model["keys"] + list(model.get("fields", {}).values()) + list(model.get("map", {}).values())
        assert specs and all(isinstance(s["line"], int) and s["line"] > 0 for s in specs), table
    assert sonic_yang.object_name_ok("LINERATE_LOSSLESS") and not sonic_yang.object_name_ok("_x")


# ------------------------------------------------ EOS: the platform family's own limits
def _eos(tmp_path, monkeypatch, family=None):
    sim = _sim(tmp_path, monkeypatch, "eos", ["Ethernet1/1"])
    if family:
        sim.sw.spec["eos_family"] = family
    for c in ("configure session s", "interface Ethernet1/1"):
        assert sim(c) == ""
    return sim


@pytest.mark.parametrize("family, mtu_ok, mtu_bad", [("7050x4", "9214", "9216"), ("7280r3", "9214", "9215")])
def test_eos_mtu_limit_of_the_family(tmp_path, monkeypatch, family, mtu_ok, mtu_bad):
    sim = _eos(tmp_path, monkeypatch, family)
    assert sim(f"mtu {mtu_bad}") == f"% Invalid input (at token 1: '{mtu_bad}')"
    assert sim("mtu 68") == "" and sim(f"mtu {mtu_ok}") == ""
    assert sim("mtu 67") == "% Invalid input (at token 1: '67')"


@pytest.mark.parametrize(
    "family, ok, bad",
    [
        # a bare multi-lane speed is not an EOS form; lane counts follow the SerDes lane rate
        ("7050x4", ["400g-8", "200g-4", "100g-2", "100g-4", "50g-1", "25g", "10g", "auto"], ["400g", "100g", "400g-4", "100g-1", "800g-8", "400gfull", "1g"]),
        ("7060x6", ["800g-8", "400g-4", "400g-8", "100g-1"], ["800g", "800g-4"]),
        # Tomahawk 4: 50G lanes, no 800G port
        ("7060x5", ["400g-8", "200g-4", "100g-2"], ["800g-8", "400g-4", "100g-1"]),
        ("7050x3", ["100g-4", "40g", "25g"], ["100g-2", "400g-8"]),
    ],
)
def test_eos_speed_forms_of_the_family(tmp_path, monkeypatch, family, ok, bad):
    sim = _eos(tmp_path, monkeypatch, family)
    for form in ok:
        assert sim(f"speed {form}") == "", form
    for form in bad:
        assert sim(f"speed {form}") == f"% Invalid input (at token 1: '{form}')", form


def test_eos_queue_keyword_of_the_family(tmp_path, monkeypatch):
    sim = _eos(tmp_path, monkeypatch, "7280r3")
    assert sim("tx-queue 3") == "% Invalid input (at token 0: 'tx-queue')"
    assert sim("uc-tx-queue 3") == "" and sim.sw.prompt(sim.ctx) == "sw(config-s-s-if-Et1/1-txq-3)#"
    assert sim("random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes") == ""
    assert sim("commit") == ""
    run = sim("show running-config")
    assert "   uc-tx-queue 3\n      random-detect ecn minimum-threshold 150 kbytes" in run
    assert "   tx-queue" not in run
    (tmp_path / "b").mkdir()
    sim2 = _eos(tmp_path / "b", monkeypatch, "7050x4")
    assert sim2("uc-tx-queue 3") == "% Invalid input (at token 0: 'uc-tx-queue')"
    assert sim2("tx-queue 3") == ""


def test_eos_lane_qualified_speed_reads_back_as_its_rate(tmp_path, monkeypatch):
    sim = _eos(tmp_path, monkeypatch)
    sim("speed 100g-2")
    assert sim("commit") == ""
    assert "   speed 100g-2" in sim("show running-config")
    assert sim.sw.port_config()["Ethernet1/1"]["speed_gbps"] == 100
    assert "100G" in sim("show interfaces status").splitlines()[1]


# --- NVUE: the command gate from the NVUE command reference (lab/switchsim/nvue_reference.json) ---


def _nvue(tmp_path, monkeypatch, release=None):
    sim = _sim(tmp_path, monkeypatch, "nvue", ["swp1"])
    if release:
        sim.sw.spec["nvue_release"] = release
    return sim


@pytest.mark.parametrize(
    "release, line, error",
    [
        # invented verbs and paths
        ("5.17", "nv config confirm -y", "Error: Invalid command: nv config confirm"),
        ("5.17", "nv set qos roce lossless-pool on", "Error: Invalid command"),
        ("5.17", "nv set qos congestion-control linerate traffic-class 3 ecn-mode enabled", "Error: Invalid command"),
        ("5.17", "nv unset qos congestion-control linerate traffic-class 3 ecn-mode", "Error: Invalid command"),
        # the other release's form
        ("5.17", "nv set qos congestion-control linerate traffic-class 3 ecn enable", "is not one of ['enabled', 'disabled']"),
        ("5.14", "nv set qos congestion-control linerate traffic-class 3 ecn enabled", "is not one of ['enable', 'disable']"),
        ("5.17", "nv set qos roce enable on", "Error: Invalid command"),
        ("5.14", "nv set qos roce state enabled", "Error: Invalid command"),
        ("5.11", "nv set qos roce mode lossless-single-ipool", "is not one of ['lossy', 'lossless']"),
        # thresholds are bytes: no unit suffix
        ("5.17", "nv set qos congestion-control linerate traffic-class 3 min-threshold 150KB", "150KB"),
        ("5.17", "nv set qos congestion-control linerate traffic-class 3 max-threshold 1.5MB", "1.5MB"),
        # ranges and enums
        ("5.17", "nv set qos congestion-control linerate traffic-class 3 probability 0", "less than the minimum of 1"),
        ("5.17", "nv set qos congestion-control linerate traffic-class 8 ecn enabled", "Error: Invalid command"),
        ("5.17", "nv set qos mapping linerate dscp 64 switch-priority 3", "Error: Invalid command"),
        ("5.17", "nv set qos egress-scheduler linerate traffic-class 6 mode priority", "is not one of ['dwrr', 'strict']"),
        ("5.17", "nv set interface swp1 qos pfc-watchdog state on", "is not one of ['enable', 'disable']"),
        ("5.17", "nv set interface swp1 link mtu 9217", "greater than the maximum of 9216"),
    ],
)
def test_nvue_gate_refuses_invented_and_other_release_forms(tmp_path, monkeypatch, release, line, error):
    sim = _nvue(tmp_path, monkeypatch, release)
    out = sim(line)
    assert out.startswith("Error:") and error in out
    assert sim("nv config diff") == ""  # nothing was staged


@pytest.mark.parametrize(
    "release, line",
    [
        ("5.17", "nv set qos congestion-control linerate traffic-class 3 ecn enabled"),
        ("5.9", "nv set qos congestion-control linerate traffic-class 3 ecn enable"),
        ("5.17", "nv set qos congestion-control linerate traffic-class 3 min-threshold 40000"),
        ("5.17", "nv set qos congestion-control linerate traffic-class 0 red disabled"),
        ("5.17", "nv set qos mapping linerate trust port"),
        ("5.17", "nv set qos mapping linerate dscp 63 switch-priority 7"),
        ("5.17", "nv set qos pfc linerate switch-priority 3,4"),
        ("5.17", "nv set qos pfc linerate cable-length 100000"),
        ("5.17", "nv set qos egress-scheduler linerate traffic-class 6 mode strict"),
        ("5.17", "nv set qos pfc-watchdog robustness 5"),
        ("5.17", "nv set qos roce state enabled"),
        ("5.14", "nv set qos roce enable on"),
        ("5.12", "nv set qos roce mode lossless-single-ipool"),
        ("5.17", "nv set interface swp1 qos pfc-watchdog state enable"),
        ("5.17", "nv set interface swp1 qos egress-scheduler profile linerate"),
    ],
)
def test_nvue_gate_accepts_real_but_rare_forms(tmp_path, monkeypatch, release, line):
    sim = _nvue(tmp_path, monkeypatch, release)
    assert sim(line) == ""
    assert sim("nv config diff") != ""


def test_nvue_thresholds_print_back_as_written(tmp_path, monkeypatch):
    """The post-check compares `nv config show -o commands` with the intent: bytes go in, bytes come back."""
    sim = _nvue(tmp_path, monkeypatch)
    for line in (
        "nv set qos congestion-control linerate traffic-class 3 ecn enabled",
        "nv set qos congestion-control linerate traffic-class 3 min-threshold 153600",
        "nv set qos congestion-control linerate traffic-class 3 max-threshold 1536000",
        "nv set interface swp1 qos congestion-control profile linerate",
    ):
        assert sim(line) == ""
    assert "applied" in sim("nv config apply -y")
    shown = sim("nv config show -o commands")
    assert "nv set qos congestion-control linerate traffic-class 3 min-threshold 153600" in shown
    assert "ecn, absolute" in sim("nv show interface swp1 qos roce status")


def test_nvue_unknown_release_is_refused_naming_the_allowed_ones():
    import sim_nvue

    with pytest.raises(ValueError, match=r"'5\.8'.*5\.9, 5\.10"):
        sim_nvue.grammar("5.8")
