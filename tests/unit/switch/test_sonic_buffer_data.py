"""The generated SONiC SKU table (switch/sonic_buffer_data.py): each row names its file, commit and line; the
lab's JSON and the collection's module are one generator run; the generator reads the real lookup format."""

import json
import os

from switch_testlib import ROOT

from ansible_collections.linerate.fabric.plugins.module_utils.switch.sonic_buffer_data import PLATFORM_BUFFERS, SOURCE_COMMIT

SN5600, TH5 = "ACS-SN5600", "Arista-7060X6-64PE-B-P32O64"


def test_each_row_names_its_file_commit_and_line():
    ent = PLATFORM_BUFFERS[TH5]
    assert ent["asic"] == "Tomahawk 5" and ent["lookup"]["commit"] == SOURCE_COMMIT
    assert ent["lookup"]["path"] == ("device/arista/x86_64-arista_7060x6_64pe_b/Arista-7060X6-64PE-B-P32O64/pg_profile_lookup.ini")
    assert ent["rows"][(800000, "5m")]["line"] == 8 and ent["rows"][(400000, "5m")]["line"] == 3
    assert PLATFORM_BUFFERS[SN5600]["asic"] == "Spectrum-4" and PLATFORM_BUFFERS["ACS-MSN4700"]["asic"] == "Spectrum-3"


def test_the_lab_and_the_collection_read_the_same_generated_table():
    with open(os.path.join(ROOT, "lab", "switchsim", "sonic_buffer_defaults.json"), encoding="utf-8") as f:
        lab = json.load(f)
    assert lab["commit"] == SOURCE_COMMIT and sorted(lab["skus"]) == sorted(PLATFORM_BUFFERS)
    for sku, ent in PLATFORM_BUFFERS.items():
        flat = {(int(s), c): r for s, cables in lab["skus"][sku]["rows"].items() for c, r in cables.items()}
        assert flat == ent["rows"], sku


def test_the_collections_table_is_what_the_generator_writes_each_file_once():
    """sonic_buffer_data.py is render_py of the lab's table (the same run wrote both): a lookup file several
    SKUs share (a symbolic link in sonic-buildimage) is written once and every SKU names it."""
    import importlib.util
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import sonic_buffer_data

    spec = importlib.util.spec_from_file_location("gen", os.path.join(ROOT, "scripts", "sonic_buffer_defaults.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with open(os.path.join(ROOT, "lab", "switchsim", "sonic_buffer_defaults.json"), encoding="utf-8") as f:
        lab = json.load(f)
    with open(sonic_buffer_data.__file__, encoding="utf-8") as f:
        assert gen.render_py(lab["skus"], lab["commit"]) == f.read()
    shared = PLATFORM_BUFFERS["ACS-MSN4600C"]["lookup"]
    assert shared["resolved"] == PLATFORM_BUFFERS["ACS-MSN4700"]["lookup"]["path"] != shared["path"]
    assert PLATFORM_BUFFERS["ACS-MSN4600C"]["rows"] is PLATFORM_BUFFERS["ACS-MSN4700"]["rows"]
    assert len(sonic_buffer_data.LOOKUP_FILES) < len(sonic_buffer_data.SKUS) == len(PLATFORM_BUFFERS)


def test_the_generators_parser_reads_the_real_lookup_format():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen", os.path.join(ROOT, "scripts", "sonic_buffer_defaults.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    # the header and two rows of each layout as the files print them (ACS-SN5600: six columns; the
    # 7060X6 P32O64: seven, xon_offset last)
    text = (
        "## Copyright\n#  PG lossless profiles.\n# speed cable  size   xon    xoff   threshold\n"
        " 400000    5m 250880  19456  231424        0\n"
        "800000  5m   8636    0    724662  0         3556\n"
    )
    assert gen.lookup_rows(text) == {
        "400000": {"5m": {"size": 250880, "xon": 19456, "xoff": 231424, "threshold": 0, "line": 4}},
        "800000": {"5m": {"size": 8636, "xon": 0, "xoff": 724662, "threshold": 0, "line": 5, "xon_offset": 3556}},
    }
