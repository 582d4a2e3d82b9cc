"""ofed_driver_info (module_utils/host/ofed.py driver_info): the installed driver (modinfo -F version) against the
loaded one (<sysfs>/module/<name>[/version]); every branch of the verdict, read-only in check mode."""
import pytest

from ansible_collections.linerate.fabric.plugins.modules import ofed_driver_info
from module_harness import Tools, run_module

OFED = "24.10-1.1.4"
STACK = ["mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs", "rdma_cm"]


def sysfs(tmp_path, loaded, versions=None):
    """A /sys with <name>/ for each loaded module and <name>/version where the module declares one."""
    root = tmp_path / "sys"
    for name in loaded:
        d = root / "module" / name
        d.mkdir(parents=True)
        (d / "initstate").write_text("live\n")
        if (versions or {}).get(name):
            (d / "version").write_text(versions[name] + "\n")
    (root / "module").mkdir(parents=True, exist_ok=True)
    return str(root)


def tools(version=OFED + "\n", rc=0, err="", filename="/lib/modules/6.1.0-18-amd64/updates/mlx5_core.ko\n"):
    def modinfo(args):
        if args[:2] == ["-F", "version"]:
            return rc, version, err
        if args[:2] == ["-F", "filename"]:
            return 0, filename, ""
        raise AssertionError(f"unexpected modinfo {args}")
    return Tools({"modinfo": modinfo})


def run(capsys, root, t=None, check=False, **args):
    t = t or tools()
    res = run_module(ofed_driver_info.main, dict({"sysfs": root}, **args), t, capsys, check=check)
    return res, t


def test_the_installed_driver_running_needs_no_restart(tmp_path, capsys):
    root = sysfs(tmp_path, STACK + ["nvidia_peermem"], {"mlx5_core": OFED, "mlx5_ib": OFED})
    res, t = run(capsys, root)
    assert t.calls == [["modinfo", "-F", "version", "mlx5_core"]]
    assert res["changed"] is False and res["restart_needed"] is False and res["reasons"] == []
    assert res["installed_version"] == OFED and res["loaded_version"] == OFED
    assert res["loaded"] == STACK and res["missing"] == [] and res["dependents_loaded"] == ["nvidia_peermem"]
    assert res["msg"] == f"the loaded mlx5_core is the installed OFED {OFED}"


def test_another_loaded_version_waits_for_a_restart(tmp_path, capsys):
    root = sysfs(tmp_path, STACK, {"mlx5_core": "23.10-2.1.3"})
    res, _ = run(capsys, root)
    assert res["restart_needed"] is True and res["loaded_version"] == "23.10-2.1.3"
    assert res["reasons"] == [f"the loaded mlx5_core is 23.10-2.1.3, the installed one is {OFED}"]
    assert res["dependents_loaded"] == []


def test_the_inbox_build_loaded_while_ofed_is_installed_waits_for_a_restart(tmp_path, capsys):
    # what an install interrupted before its restart leaves: udev loaded the inbox mlx5 stack at boot
    root = sysfs(tmp_path, ["mlx5_core", "ib_core", "mlx5_ib"])
    res, _ = run(capsys, root, check=True)
    assert res["restart_needed"] is True and res["loaded_version"] is None and res["changed"] is False
    assert res["reasons"] == [
        f"the loaded mlx5_core is the kernel's inbox build (no {root}/module/mlx5_core/version), "
        f"the installed one is OFED {OFED}",
        "not loaded: ib_uverbs, rdma_cm"]
    assert res["missing"] == ["ib_uverbs", "rdma_cm"]
    assert res["msg"].startswith("the installed driver waits for a restart: the loaded mlx5_core is the kernel's")


def test_a_driver_not_loaded_at_all_waits_for_a_restart(tmp_path, capsys):
    root = sysfs(tmp_path, [])
    res, _ = run(capsys, root)
    assert res["restart_needed"] is True and res["loaded"] == [] and res["loaded_version"] is None
    assert res["reasons"] == [f"mlx5_core is not loaded (no {root}/module/mlx5_core)",
                              "not loaded: mlx5_ib, ib_core, ib_uverbs, rdma_cm"]


def test_one_missing_module_of_the_stack_waits_for_a_restart(tmp_path, capsys):
    root = sysfs(tmp_path, ["mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs"], {"mlx5_core": OFED})
    res, _ = run(capsys, root)
    assert res["restart_needed"] is True and res["reasons"] == ["not loaded: rdma_cm"]
    res, _ = run(capsys, root, modules=["mlx5_ib", "ib_uverbs"])
    assert res["restart_needed"] is False and res["loaded"] == ["mlx5_core", "mlx5_ib", "ib_uverbs"]


def test_an_inbox_module_file_fails_naming_it_and_a_restart_would_not_help(tmp_path, capsys):
    root = sysfs(tmp_path, ["mlx5_core"])
    res, t = run(capsys, root, t=tools(version="", filename="/lib/modules/6.1.0-18-amd64/kernel/drivers/net/"
                                                            "ethernet/mellanox/mlx5/core/mlx5_core.ko\n"))
    assert res["failed"] and t.calls == [["modinfo", "-F", "version", "mlx5_core"],
                                         ["modinfo", "-F", "filename", "mlx5_core"]]
    assert res["msg"].startswith(
        "the mlx5_core that modprobe loads for the running kernel (/lib/modules/6.1.0-18-amd64/kernel/drivers/net/"
        "ethernet/mellanox/mlx5/core/mlx5_core.ko) declares no version: it is the kernel's inbox build, not OFED's")
    assert "a driver restart would load the inbox driver again; nothing was changed." in res["msg"]


def test_no_module_file_fails_with_modinfos_error(tmp_path, capsys):
    res, _ = run(capsys, sysfs(tmp_path, []), t=tools(version="", rc=1, err="modinfo: ERROR: Module mlx5_core not found.\n"))
    assert res["failed"] and res["rc"] == 1 and res["msg"].startswith(
        "modinfo finds no mlx5_core for the running kernel (modinfo: ERROR: Module mlx5_core not found.): "
        "the OFED kernel modules are not installed for it")


@pytest.mark.parametrize("key,value", [("module", "../../etc"), ("modules", ["mlx5_ib", "a/b"]),
                                       ("dependents", ["nvidia peermem"])])
def test_a_bad_module_name_is_refused_before_anything_is_read(tmp_path, capsys, key, value):
    res, t = run(capsys, sysfs(tmp_path, []), **{key: value})
    bad = value if isinstance(value, str) else value[-1]
    assert res["failed"] and res["msg"] == (f"{key}: {bad!r} is not allowed (allowed: kernel module names, letters, "
                                            "digits, '_' and '-', for example mlx5_core)")
    assert t.calls == []


def test_dashed_names_are_read_as_the_kernel_keeps_them(tmp_path, capsys):
    root = sysfs(tmp_path, STACK + ["nvidia_peermem"], {"mlx5_core": OFED})
    res, _ = run(capsys, root, dependents=["nvidia-peermem"])
    assert res["dependents_loaded"] == ["nvidia-peermem"]
