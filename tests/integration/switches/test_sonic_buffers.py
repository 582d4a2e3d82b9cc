"""Integration: a 400G SONiC leaf gets its own platform's lossless headroom, in the buffer model the switch
is in, over real SSH to the lab's SONiC simulator (switches.yml, the lab's inventory values).

The simulator is the SKU and buffer model of its fabric.json entry (lab/switchsim/sim_sonic.py); the rows
expected are those of sonic-buildimage 086b03bd70f9 the collection vendors
(plugins/module_utils/switch/sonic_buffer_data.py).
"""

import json
import os

import pytest

from conftest import recap
import switch_lab as base  # the switch simulators' Lab (tests/integration/switches/switch_lab.py)

from ansible_collections.linerate.fabric.plugins.module_utils.switch.sonic import parse_config_db
from ansible_collections.linerate.fabric.plugins.module_utils.switch.sonic_buffer_data import PLATFORM_BUFFERS

CASES = [("ACS-SN5600", "traditional"), ("Arista-7060X6-64PE-B-P32O64", "dynamic")]


class BufferLab(base.Lab):
    """The switch simulators with leaf2 (SONiC) as ``hwsku`` in ``buffer_model``."""

    def __init__(self, tmp, hwsku, model):
        write = base.gen.write

        def write_leaf2(state, nodes=2, port=22, base_addr="127.0.1."):
            m, uplinks = base.gen.topology(nodes=nodes, base=base_addr, port=port)
            m["switches"]["leaf2"].update(hwsku=hwsku, buffer_model=model)
            os.makedirs(state, exist_ok=True)
            with open(os.path.join(state, "fabric.json"), "w", encoding="utf-8") as f:
                json.dump(m, f, indent=1, sort_keys=True)
            return m, uplinks

        base.gen.write = write_leaf2
        try:
            super().__init__(tmp)
        finally:
            base.gen.write = write


@pytest.fixture(scope="module", params=CASES, ids=[f"{s}-{m}" for s, m in CASES])
def buffer_lab(request, tmp_path_factory):
    sku, model = request.param
    lab = BufferLab(str(tmp_path_factory.mktemp("bufferlab")), sku, model)
    yield lab, sku, model
    lab.stop()


@pytest.mark.matrix
def test_a_400g_sonic_leaf_gets_its_platforms_headroom_in_its_buffer_model(buffer_lab):
    lab, sku, model = buffer_lab
    args = ("--limit", "leaf2", "-e", f"switch_sonic_hwsku={sku}")
    rc, out = lab.play("switches.yml", *args)
    assert rc == 0, out
    assert recap(out)["leaf2"]["changed"] == 1, out
    db = parse_config_db(lab.running("leaf2"))
    assert db["DEVICE_METADATA"]["localhost"]["hwsku"] == sku and db["CABLE_LENGTH"]["AZURE"]["Ethernet0"] == "5m"
    row = PLATFORM_BUFFERS[sku]["rows"][(400000, "5m")]
    if model == "traditional":
        assert db["BUFFER_PG"]["Ethernet0|3"] == {"profile": "pg_lossless_400000_5m_profile"}
        prof = db["BUFFER_PROFILE"]["pg_lossless_400000_5m_profile"]
        assert (prof["size"], prof["xon"], prof["xoff"]) == (str(row["size"]), str(row["xon"]), str(row["xoff"]))
    else:  # no headroom sizes: buffermgrd computes them (the post-check read them from APPL_DB)
        assert db["BUFFER_PG"]["Ethernet0|3"] == {"profile": "NULL"}
        assert not [p for p in db.get("BUFFER_PROFILE", {}) if p.startswith("pg_lossless")]
    rc, out = lab.play("switches.yml", *args)
    assert rc == 0 and recap(out)["leaf2"]["changed"] == 0, out
