"""module_utils/common.py: the one "tool failed" message and the host layer's error."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.common import TOOL_OUTPUT_LIMIT, ToolFailure, fsync_dir, tool_failed

ARGV = ["mlnx_qos", "-i", "enp65s0f0np0"]


def test_the_message_names_the_command_its_rc_and_its_error():
    assert tool_failed(ARGV, 1, "", "Netlink error: Operation not permitted\n") == ("mlnx_qos -i enp65s0f0np0 exited 1: Netlink error: Operation not permitted")


def test_stderr_first_stdout_when_stderr_is_empty_nothing_when_both_are():
    assert tool_failed(["ibstat"], 2, "on stdout\n", "on stderr\n") == "ibstat exited 2: on stderr"
    assert tool_failed(["ibstat"], 2, "on stdout\n", "") == "ibstat exited 2: on stdout"
    assert tool_failed(["ibstat"], 2, "on stdout\n", None) == "ibstat exited 2: on stdout"
    assert tool_failed(["ibstat"], 2, "", "  \n") == "ibstat exited 2"
    assert tool_failed(["ibstat"], 2, None, None) == "ibstat exited 2"


def test_long_output_is_cut_to_its_first_or_with_tail_its_last_characters():
    err = "progress " * 100 + "-E- the error"
    head = tool_failed(["mlxconfig", "set"], 3, "", err)
    assert head == "mlxconfig set exited 3: " + err[:TOOL_OUTPUT_LIMIT]
    tail = tool_failed(["mlxconfig", "set"], 3, "", err, tail=True)
    assert tail == "mlxconfig set exited 3: " + err[-TOOL_OUTPUT_LIMIT:] and tail.endswith("-E- the error")
    assert tool_failed(["x"], 1, "", "abcdef", limit=3) == "x exited 1: abc"
    assert tool_failed(["x"], 1, "", "abcdef", limit=3, tail=True) == "x exited 1: def"


def test_what_leads_detail_replaces_the_output_and_hint_ends_it():
    assert tool_failed(["scontrol", "show", "node", "n1"], 1, "", "boom", what="n1") == ("n1: scontrol show node n1 exited 1: boom")
    long_detail = "d" * (TOOL_OUTPUT_LIMIT + 50)
    # a parser's reading of the tool's error is its own words: never cut
    assert tool_failed(["x"], 2, "out", "err", detail=long_detail) == "x exited 2: " + long_detail
    assert tool_failed(["modprobe", "m"], 1, "", "not found", hint=" - install it") == ("modprobe m exited 1: not found - install it")


def test_a_tool_that_exited_0_with_unreadable_output_has_no_rc():
    assert tool_failed(["ibv_devinfo", "-v"], 0, "junk", "", detail="no hca_id") == "ibv_devinfo -v: no hca_id"


def test_the_argv_is_joined_with_spaces_a_newline_written_escaped():
    assert tool_failed(["dpkg-query", "-W", "-f", "${Package}\n", "rdma-core"], 2, "", "e") == ("dpkg-query -W -f ${Package}\\n rdma-core exited 2: e")
    assert tool_failed(["cma_roce_tos", "-t", 106], 1, "", "e") == "cma_roce_tos -t 106 exited 1: e"


def test_exited_carries_what_fail_json_shows_beside_the_message():
    e = ToolFailure.exited(ARGV, 1, "the out", "the err", what="port 1", before={"trust": "pcp"})
    assert isinstance(e, ToolFailure) and str(e) == e.msg
    assert e.msg == "port 1: mlnx_qos -i enp65s0f0np0 exited 1: the err"
    assert e.kw == {"rc": 1, "stdout": "the out", "stderr": "the err", "cmd": ARGV, "before": {"trust": "pcp"}}
    assert e.kw["cmd"] is not ARGV  # a copy: a caller's later change to its argv does not change the failure
    with pytest.raises(ToolFailure, match=r"^ibstat exited 2: gone$"):
        raise ToolFailure.exited(["ibstat"], 2, "", "gone")


def _host_modules():
    import importlib
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2] / "plugins" / "module_utils" / "host"
    prefix = "ansible_collections.linerate.fabric.plugins.module_utils.host."
    return {p.stem: importlib.import_module(prefix + p.stem) for p in sorted(root.glob("*.py")) if p.stem != "__init__"}


def test_the_host_layer_has_one_error_under_one_name():
    # every exception a host/ module defines is a ToolFailure, and none binds ToolFailure (or one of its
    # own) under a second name: `Failure = ToolFailure` made one error three names before issue 39
    modules = _host_modules()
    assert {"breaker", "rollout", "roce", "connectx", "rdma"} <= set(modules)
    defined, aliases = {}, []
    for name, mod in modules.items():
        for attr, value in vars(mod).items():
            if isinstance(value, type) and issubclass(value, BaseException):
                if value.__module__ == mod.__name__:
                    defined[f"{name}.{attr}"] = value
                if attr != value.__name__:
                    aliases.append(f"{name}.{attr} = {value.__name__}")
    assert aliases == []
    assert sorted(defined) == ["breaker.StateError", "rollout.RolloutError"]
    assert all(issubclass(cls, ToolFailure) for cls in defined.values())
    assert not any(hasattr(mod, "Failure") or hasattr(mod, "ToolError") for mod in modules.values())


def test_fsync_dir_flushes_a_directory_and_fails_on_a_missing_one(tmp_path):
    (tmp_path / "f").write_text("x", encoding="utf-8")
    assert fsync_dir(str(tmp_path)) is None
    with pytest.raises(FileNotFoundError):
        fsync_dir(str(tmp_path / "gone"))
