"""module_utils/host/ofed.py through its two modules.

ofed_preflight: the repository read in a private apt state through the shared Runner (locale C), the pinned
versions resolved, the kernel build found or its absence named.

ofed_driver_info (driver_info): the installed driver (modinfo -F version) against the loaded one
(<sysfs>/module/<name>[/version]); every branch of the verdict, read-only in check mode."""

import os

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.host import ofed
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import apt as apt
from ansible_collections.linerate.fabric.plugins.modules import ofed_driver_info, ofed_preflight
from module_harness import FIXTURES, Tools, run_module

MADISON = open(os.path.join(FIXTURES, "apt_madison", "doca_flat_repo.txt")).read()
ARGS = {
    "repo_line": "deb [trusted=yes] file:/srv/linerate-apt ./",
    "version": "24.10-1.1.4",
    "packages": {"mlnx-ofed-all": "24.10-1.1.4", "doca-ofed": ""},
    "kernel": "5.15.0-125-generic",
}


def tools(update=(0, "Get:1 file:/srv/linerate-apt ./ InRelease\n", ""), dpkg="mlnx-ofed-all 24.10-1.1.4.0 hi \n", audit=(0, "", "")):
    return Tools(
        {"apt-get": lambda args: update, "apt-cache": lambda args: (0, MADISON, ""), "dpkg-query": lambda args: (0, dpkg, ""), "dpkg": lambda args: audit}
    )


def test_resolves_the_pins_and_the_kernel_build_and_names_what_would_change(capsys):
    t = tools()
    res = run_module(ofed_preflight.main, ARGS, t, capsys, check=True)
    assert res["versions"] == {
        "mlnx-ofed-all": "24.10-1.1.4.0",
        "doca-ofed": "2.9.1-0.4.5",
        "mlnx-ofed-kernel-modules": "24.10.OFED.24.10.1.1.4.1.kver.5.15.0-125-generic",
    }
    assert res["kernels"] == ["5.15.0-122-generic", "5.15.0-125-generic"] and res["changed"] is False
    assert res["pending"] == {"doca-ofed": "2.9.1-0.4.5", "mlnx-ofed-kernel-modules": "24.10.OFED.24.10.1.1.4.1.kver.5.15.0-125-generic"}
    assert res["installed"] == {"mlnx-ofed-all": "24.10-1.1.4.0", "doca-ofed": None, "mlnx-ofed-kernel-modules": None}
    audit, update, madison, dpkg = t.calls
    assert audit == ["dpkg", "--audit"]
    assert update[0] == "apt-get" and update[-2:] == ["update", "-q"] and "Debug::NoLocking=1" in update
    assert update[1:3] == ["-o", update[2]] and update[2].startswith("Dir::Etc::SourceList=/")
    assert madison[0] == "apt-cache" and madison[-4:] == ["madison", "mlnx-ofed-all", "doca-ofed", "mlnx-ofed-kernel-modules"]
    assert dpkg == ["dpkg-query", "-W", "-f=${Package} ${Version} ${db:Status-Abbrev}\n", "mlnx-ofed-all", "doca-ofed", "mlnx-ofed-kernel-modules"]
    assert not os.path.exists(update[2].split("=", 1)[1]), "the private apt state is removed"


def test_no_build_for_the_running_kernel_fails_naming_it_before_dpkg(capsys):
    t = tools()
    res = run_module(ofed_preflight.main, dict(ARGS, kernel="6.8.0-31-generic"), t, capsys)
    assert res["failed"] and res["msg"] == (
        "mlnx-ofed-kernel-modules: no driver build of OFED 24.10-1.1.4 for the running kernel 6.8.0-31-generic "
        "(builds exist for: 5.15.0-122-generic, 5.15.0-125-generic); install a matching kernel or pin an OFED "
        "release built for this one. Nothing was changed."
    )
    assert res["kernels"] == ["5.15.0-122-generic", "5.15.0-125-generic"] and [c[0] for c in t.calls] == ["dpkg", "apt-get", "apt-cache"]


def test_a_missing_pin_is_named_with_what_the_repository_has():
    versions, _kernels, problems = ofed.resolve(apt.parse_madison(MADISON), {"mlnx-ofed-all": "24.07-0.6.1"}, "24.10-1.1.4", "", "x")
    assert versions == {} and problems == ["mlnx-ofed-all: no version 24.07-0.6.1 in the repository (it has: 24.10-1.1.4.0, 24.10-0.7.0.0)"]


def test_an_unreadable_repository_fails_with_apts_error(capsys):
    res = run_module(
        ofed_preflight.main, ARGS, tools(update=(0, "Err:1 file:/srv/linerate-apt ./ Release\n", "E: The repository does not have a Release file.\n")), capsys
    )
    assert res["failed"] and res["msg"] == (
        "the OFED repository could not be read (deb [trusted=yes] "
        "file:/srv/linerate-apt ./): apt-get update -q: "
        "E: The repository does not have a Release file."
    )


def test_version_matches_pins_not_prefixes():
    assert ofed.version_matches("24.10-1.1.4.0", "24.10-1.1.4")
    assert ofed.version_matches("24.10-1.1.4-1", "24.10-1.1.4")
    assert ofed.version_matches("24.10.OFED.24.10.1.1.4.1.kver.6.1.0-18-amd64", "24.10-1.1.4")
    assert not ofed.version_matches("24.10-1.1.40", "24.10-1.1.4")
    assert ofed.version_matches("anything", "")
    assert ofed.kernel_of("24.10.OFED.24.10.1.1.4.1.kver.6.1.0-18-amd64") == "6.1.0-18-amd64"
    assert ofed.kernel_of("24.10-1.1.4.0") is None


def test_madison_rows_and_no_text():
    assert apt.parse_madison("N: Unable to locate package x\n  a | 1.0 | src ./ Packages\n a | 0.9 | src\n") == {"a": ["1.0", "0.9"]}
    try:
        apt.parse_madison(None)
    except ofed.ParseError as e:
        assert str(e) == "apt-cache madison: no output text (NoneType)"
    else:
        raise AssertionError("None is not apt-cache output")


# dpkg --audit's report of a package left unconfigured (dpkg src/main/enquiry.c, audit problems:
# "The following packages have been unpacked but not yet configured. ...")
AUDIT = (
    "The following packages have been unpacked but not yet configured.\n"
    "They must be configured using dpkg --configure or the configure\n"
    "menu option in dselect for them to work:\n"
    " mlnx-ofed-kernel-utils Userspace tools to restart and tune mlnx-ofed kernel modules\n"
)


def test_an_interrupted_dpkg_journal_fails_first_with_the_repair(capsys, tmp_path):
    (tmp_path / "updates").mkdir()
    (tmp_path / "updates" / "0001").write_text("")
    (tmp_path / "updates" / "tmp.i").write_text("")  # not a journal entry
    t = tools()
    res = run_module(ofed_preflight.main, dict(ARGS, dpkg_admindir=str(tmp_path)), t, capsys)
    assert t.calls == [["dpkg", f"--admindir={tmp_path}", "--audit"]], "nothing read or changed after it"
    assert res["failed"] and res["dpkg_problems"] == [f"dpkg was interrupted: {tmp_path}/updates holds 1 unapplied journal entry (0001)"]
    assert res["msg"] == (
        f"the node's package system is in an interrupted state: dpkg was interrupted: {tmp_path}/"
        "updates holds 1 unapplied journal entry (0001). Repair it on the node with "
        "`dpkg --configure -a` (then `apt-get -f install` if apt still reports broken packages) "
        "and run again; no package task ran."
    )


def test_packages_dpkg_audit_lists_fail_first(capsys, tmp_path):
    (tmp_path / "updates").mkdir()
    t = tools(audit=(1, AUDIT, ""))
    res = run_module(ofed_preflight.main, dict(ARGS, dpkg_admindir=str(tmp_path)), t, capsys)
    assert res["failed"] and len(t.calls) == 1
    assert res["dpkg_problems"] == [
        "dpkg --audit: The following packages have been unpacked but not yet configured. / "
        "They must be configured using dpkg --configure or the configure / menu option "
        "in dselect for them to work: /  mlnx-ofed-kernel-utils Userspace tools to "
        "restart and tune mlnx-ofed kernel modules"
    ]
    assert "`dpkg --configure -a`" in res["msg"]


def test_a_clean_admindir_goes_on(capsys, tmp_path):
    (tmp_path / "updates").mkdir()
    t = tools()
    res = run_module(ofed_preflight.main, dict(ARGS, dpkg_admindir=str(tmp_path)), t, capsys, check=True)
    assert not res.get("failed") and [c[0] for c in t.calls] == ["dpkg", "apt-get", "apt-cache", "dpkg-query"]


def test_a_failing_dpkg_audit_fails_naming_it(capsys):
    res = run_module(ofed_preflight.main, ARGS, tools(audit=(2, "", "dpkg: error: cannot access archive\n")), capsys)
    assert res["failed"] and res["msg"] == "dpkg --audit exited 2: dpkg: error: cannot access archive"


# ---------------------------------------------------------------- ofed_driver_info

OFED = "24.10-1.1.4"
STACK = ["mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs", "rdma_cm"]


def driver_sysfs(tmp_path, loaded, versions=None):
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


def driver_tools(version=OFED + "\n", rc=0, err="", filename="/lib/modules/6.1.0-18-amd64/updates/mlx5_core.ko\n"):
    def modinfo(args):
        if args[:2] == ["-F", "version"]:
            return rc, version, err
        if args[:2] == ["-F", "filename"]:
            return 0, filename, ""
        raise AssertionError(f"unexpected modinfo {args}")

    return Tools({"modinfo": modinfo})


def run_driver_info(capsys, root, t=None, check=False, **args):
    t = t or driver_tools()
    res = run_module(ofed_driver_info.main, dict({"sysfs": root}, **args), t, capsys, check=check)
    return res, t


def test_the_installed_driver_running_needs_no_restart(tmp_path, capsys):
    root = driver_sysfs(tmp_path, STACK + ["nvidia_peermem"], {"mlx5_core": OFED, "mlx5_ib": OFED})
    res, t = run_driver_info(capsys, root)
    assert t.calls == [["modinfo", "-F", "version", "mlx5_core"]]
    assert res["changed"] is False and res["restart_needed"] is False and res["reasons"] == []
    assert res["installed_version"] == OFED and res["loaded_version"] == OFED
    assert res["loaded"] == STACK and res["missing"] == [] and res["dependents_loaded"] == ["nvidia_peermem"]
    assert res["msg"] == f"the loaded mlx5_core is the installed OFED {OFED}"


def test_another_loaded_version_waits_for_a_restart(tmp_path, capsys):
    root = driver_sysfs(tmp_path, STACK, {"mlx5_core": "23.10-2.1.3"})
    res, _ = run_driver_info(capsys, root)
    assert res["restart_needed"] is True and res["loaded_version"] == "23.10-2.1.3"
    assert res["reasons"] == [f"the loaded mlx5_core is 23.10-2.1.3, the installed one is {OFED}"]
    assert res["dependents_loaded"] == []


def test_the_inbox_build_loaded_while_ofed_is_installed_waits_for_a_restart(tmp_path, capsys):
    # what an install interrupted before its restart leaves: udev loaded the inbox mlx5 stack at boot
    root = driver_sysfs(tmp_path, ["mlx5_core", "ib_core", "mlx5_ib"])
    res, _ = run_driver_info(capsys, root, check=True)
    assert res["restart_needed"] is True and res["loaded_version"] is None and res["changed"] is False
    assert res["reasons"] == [
        f"the loaded mlx5_core is the kernel's inbox build (no {root}/module/mlx5_core/version), the installed one is OFED {OFED}",
        "not loaded: ib_uverbs, rdma_cm",
    ]
    assert res["missing"] == ["ib_uverbs", "rdma_cm"]
    assert res["msg"].startswith("the installed driver waits for a restart: the loaded mlx5_core is the kernel's")


def test_a_driver_not_loaded_at_all_waits_for_a_restart(tmp_path, capsys):
    root = driver_sysfs(tmp_path, [])
    res, _ = run_driver_info(capsys, root)
    assert res["restart_needed"] is True and res["loaded"] == [] and res["loaded_version"] is None
    assert res["reasons"] == [f"mlx5_core is not loaded (no {root}/module/mlx5_core)", "not loaded: mlx5_ib, ib_core, ib_uverbs, rdma_cm"]


def test_one_missing_module_of_the_stack_waits_for_a_restart(tmp_path, capsys):
    root = driver_sysfs(tmp_path, ["mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs"], {"mlx5_core": OFED})
    res, _ = run_driver_info(capsys, root)
    assert res["restart_needed"] is True and res["reasons"] == ["not loaded: rdma_cm"]
    res, _ = run_driver_info(capsys, root, modules=["mlx5_ib", "ib_uverbs"])
    assert res["restart_needed"] is False and res["loaded"] == ["mlx5_core", "mlx5_ib", "ib_uverbs"]


def test_an_inbox_module_file_fails_naming_it_and_a_restart_would_not_help(tmp_path, capsys):
    root = driver_sysfs(tmp_path, ["mlx5_core"])
    res, t = run_driver_info(
        capsys, root, t=driver_tools(version="", filename="/lib/modules/6.1.0-18-amd64/kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko\n")
    )
    assert res["failed"] and t.calls == [["modinfo", "-F", "version", "mlx5_core"], ["modinfo", "-F", "filename", "mlx5_core"]]
    assert res["msg"].startswith(
        "the mlx5_core that modprobe loads for the running kernel (/lib/modules/6.1.0-18-amd64/kernel/drivers/net/"
        "ethernet/mellanox/mlx5/core/mlx5_core.ko) declares no version: it is the kernel's inbox build, not OFED's"
    )
    assert "a driver restart would load the inbox driver again; nothing was changed." in res["msg"]


def test_no_module_file_fails_with_modinfos_error(tmp_path, capsys):
    res, _ = run_driver_info(capsys, driver_sysfs(tmp_path, []), t=driver_tools(version="", rc=1, err="modinfo: ERROR: Module mlx5_core not found.\n"))
    assert (
        res["failed"]
        and res["rc"] == 1
        and res["msg"].startswith(
            "modinfo finds no mlx5_core for the running kernel (modinfo: ERROR: Module mlx5_core not found.): the OFED kernel modules are not installed for it"
        )
    )


@pytest.mark.parametrize("key,value", [("module", "../../etc"), ("modules", ["mlx5_ib", "a/b"]), ("dependents", ["nvidia peermem"])])
def test_a_bad_module_name_is_refused_before_anything_is_read(tmp_path, capsys, key, value):
    res, t = run_driver_info(capsys, driver_sysfs(tmp_path, []), **{key: value})
    bad = value if isinstance(value, str) else value[-1]
    assert res["failed"] and res["msg"] == (
        f"{key}: {bad!r} is not allowed (allowed: kernel module names, letters, digits, '_' and '-', for example mlx5_core)"
    )
    assert t.calls == []


def test_dashed_names_are_read_as_the_kernel_keeps_them(tmp_path, capsys):
    root = driver_sysfs(tmp_path, STACK + ["nvidia_peermem"], {"mlx5_core": OFED})
    res, _ = run_driver_info(capsys, root, dependents=["nvidia-peermem"])
    assert res["dependents_loaded"] == ["nvidia-peermem"]
