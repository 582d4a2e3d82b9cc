"""Report writers: JSON, Markdown, JUnit XML and the PNG heat map."""
import json
import os
import struct
import zlib
from xml.etree import ElementTree as ET

from ansible_collections.linerate.fabric.plugins.module_utils import report, verify

from test_verify_diagnosis import CABLING, rounds_tests
from test_verify_plans import FABRIC


def make_report():
    found, evaluated = verify.rdma_findings(rounds_tests("node3"), FABRIC, CABLING)
    checks = {"ports": {"passed": True, "detail": "8/8", "cases": [{"name": "node1 mlx5_0", "ok": True}]},
              "ib_write_bw": {"passed": False, "threshold_gbps": 360.0, "detail": "3/6", "tests": evaluated,
                              "matrix": verify.bandwidth_matrix(evaluated),
                              "cases": [{"name": f"t{i}", "ok": t["ok"], "code": t["code"], "message": "low"}
                                        for i, t in enumerate(evaluated)]}}
    return report.build_report(found, verify.summarize(found), checks, dict(FABRIC, name="lab"))


def decode_png(data):
    """Minimal PNG decoder (8-bit RGB, filter 0) - enough to prove the file is valid."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        assert zlib.crc32(kind + body) & 0xffffffff == crc
        chunks.setdefault(kind, b"")
        chunks[kind] += body
        pos += 12 + length
    w, h, depth, ctype = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    raw = zlib.decompress(chunks[b"IDAT"])
    assert (depth, ctype) == (8, 2) and len(raw) == h * (1 + 3 * w)
    rows = [raw[y * (1 + 3 * w) + 1:(y + 1) * (1 + 3 * w)] for y in range(h)]
    return w, h, rows


def test_json_has_stable_codes_and_locations(tmp_path):
    doc = make_report()
    files = report.write_reports(doc, str(tmp_path))
    data = json.load(open(files["json"]))
    assert data["schema_version"] == 1 and data["summary"]["passed"] is False
    f = data["findings"][0]
    assert (f["code"], f["node"], f["device"], f["switch"], f["switch_port"]) == \
        ("RDMA_BW_LOW", "node3", "mlx5_0", "leaf1", "swp3")
    assert os.path.islink(tmp_path / "latest") and os.readlink(tmp_path / "latest") == os.path.basename(files["dir"])
    # a second report gets its own directory and moves latest
    files2 = report.write_reports(doc, str(tmp_path))
    assert files2["dir"] != files["dir"] and os.readlink(tmp_path / "latest") == os.path.basename(files2["dir"])


def test_markdown_summary(tmp_path):
    md = report.to_markdown(make_report())
    assert md.startswith("# Fabric verification: FAILED")
    assert "| RDMA_BW_LOW | pfc | node3 | mlx5_0 | leaf1 | swp3 |" in md
    assert "### ib_write_bw mlx5_0" in md and "FAIL 150.0" in md


def test_junit_xml_shape():
    root = ET.fromstring(report.to_junit(make_report()).split("\n", 1)[1])
    assert root.tag == "testsuites" and root.get("tests") == "7" and root.get("failures") == "3"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"ports", "ib_write_bw"}
    for s in suites.values():
        assert int(s.get("tests")) == len(s.findall("testcase"))
        assert int(s.get("failures")) == len(s.findall("testcase/failure"))
        for tc in s.findall("testcase"):
            assert tc.get("classname").startswith("linerate.verify.") and tc.get("name")
    assert {f.get("type") for f in suites["ib_write_bw"].findall("testcase/failure")} == {"RDMA_BW_LOW"}


def test_png_heat_map_decodes_and_marks_failing_links():
    doc = make_report()
    w, h, rows = decode_png(report.heatmap_png(doc))
    assert w > 200 and h > 200
    dark_red = bytes((160, 0, 0))
    assert any(dark_red in row for row in rows)  # failing cells are framed and crossed
    healthy = make_report()
    for c in healthy["checks"]["ib_write_bw"]["matrix"]["mlx5_0"]["cells"].values():
        c.update(ok=True, gbps=385.0)
    _, _, rows = decode_png(report.heatmap_png(healthy))
    assert not any(dark_red in row for row in rows)


def test_empty_report_still_renders():
    doc = report.build_report([], verify.summarize([]), {}, dict(FABRIC, name="lab"))
    decode_png(report.heatmap_png(doc))
    assert "PASSED" in report.to_markdown(doc)
    ET.fromstring(report.to_junit(doc).split("\n", 1)[1])


def test_summary_printer(tmp_path, capsys):
    files = report.write_reports(make_report(), str(tmp_path))
    assert report.main([str(tmp_path / "latest")]) == 1
    assert "Fabric verification: FAILED" in capsys.readouterr().out
    assert report.main([str(tmp_path / "nothing")]) == 2
    assert os.path.exists(files["markdown"])
