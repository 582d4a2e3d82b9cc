"""The switch simulators' own semantics: confirm/commit timers, paging, errors in the platform's words."""
import asyncio

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
    assert sim("interface Ethernet2/1") == ""          # a parent-mode command from interface mode
    assert sim.sw.prompt(sim.ctx) == "sw(config-s-s2-if-Et2/1)#"
    assert "+   mtu" not in sim("show session-config diffs")
    sim("mtu 9216")
    assert "+   mtu 9216" in sim("show session-config diffs")
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
