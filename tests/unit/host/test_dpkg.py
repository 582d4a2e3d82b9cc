"""dpkg_hold: one dpkg-query for every package, one dpkg --set-selections for those not held,
unknown packages held too, check mode, and a failing dpkg named."""

import json

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.linerate.fabric.plugins.modules import dpkg_hold


class Dpkg:
    """dpkg's selections: ``state`` {name: abbrev}; dpkg-query and dpkg --set-selections as they answer."""

    def __init__(self, state, set_rc=0):
        self.state, self.set_rc, self.stdin = dict(state), set_rc, []

    def query(self, args):
        assert args[:3] == ["-W", "-f", "${Package} ${Version} ${db:Status-Abbrev}\n"]
        out, err = "", ""
        for name in args[3:]:
            if name in self.state:
                out += f"{name} 24.10.OFED.24.10.1.1.4.1 {self.state[name]}\n"
            else:
                err += f"dpkg-query: no packages found matching {name}\n"
        return (1 if err else 0), out, err


def run(capsys, dpkg, names, check=False, diff=False):
    calls = []

    def run_command(self, argv, **kw):
        calls.append((argv, kw.get("data")))
        tool = argv[0].rsplit("/", 1)[-1]
        if tool == "dpkg-query":
            return dpkg.query(argv[1:])
        assert argv[1:] == ["--set-selections"]
        if dpkg.set_rc:
            return dpkg.set_rc, "", "dpkg: error: unable to access the dpkg database directory /var/lib/dpkg\n"
        for line in kw["data"].splitlines():
            name, _ = line.split()
            dpkg.state[name] = "h" + dpkg.state.get(name, "un ")[1:]
        return 0, "", ""

    margs = {"names": names, "_ansible_check_mode": check, "_ansible_diff": diff}
    with patch_module_args(margs), pytest.MonkeyPatch.context() as mp:
        mp.setattr(basic.AnsibleModule, "run_command", run_command)
        mp.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None: f"/usr/bin/{name}")
        with pytest.raises(SystemExit):
            dpkg_hold.main()
    return json.loads(capsys.readouterr().out), calls


def test_holds_only_what_is_not_held_in_one_write(capsys):
    dpkg = Dpkg({"rdma-core": "ii ", "mlnx-tools": "hi ", "perftest": "ii "})
    result, calls = run(capsys, dpkg, ["rdma-core", "mlnx-tools", "perftest", "rdma-core"])
    assert result["changed"] is True
    assert result["held"] == ["rdma-core", "perftest"]
    assert result["before"] == {"rdma-core": "install", "mlnx-tools": "hold", "perftest": "install"}
    assert len(calls) == 2
    assert calls[0][0][1:4] == ["-W", "-f", "${Package} ${Version} ${db:Status-Abbrev}\n"]
    assert calls[0][0][4:] == ["rdma-core", "mlnx-tools", "perftest"]
    assert calls[1] == (["/usr/bin/dpkg", "--set-selections"], "rdma-core hold\nperftest hold\n")
    assert dpkg.state == {"rdma-core": "hi ", "mlnx-tools": "hi ", "perftest": "hi "}
    again, calls = run(capsys, dpkg, ["rdma-core", "mlnx-tools", "perftest"])
    assert again["changed"] is False and again["held"] == [] and len(calls) == 1


def test_unknown_package_is_held_too(capsys):
    dpkg = Dpkg({"rdma-core": "hi "})
    result, calls = run(capsys, dpkg, ["rdma-core", "doca-extra"])
    assert result["before"] == {"rdma-core": "hold", "doca-extra": "not present"}
    assert result["held"] == ["doca-extra"]
    assert calls[1][1] == "doca-extra hold\n"


def test_check_mode_writes_nothing_and_diff_shows_selections(capsys):
    dpkg = Dpkg({"rdma-core": "ii "})
    result, calls = run(capsys, dpkg, ["rdma-core"], check=True, diff=True)
    assert result["changed"] is True and result["commands"] == [["dpkg", "--set-selections"]]
    assert len(calls) == 1 and dpkg.state == {"rdma-core": "ii "}
    assert result["diff"] == {"before": "rdma-core install\n", "after": "rdma-core hold\n"}


def test_failing_set_selections_fails_with_dpkgs_words(capsys):
    result, _ = run(capsys, Dpkg({"rdma-core": "ii "}, set_rc=2), ["rdma-core"])
    assert result["failed"] is True
    assert result["msg"] == ("dpkg --set-selections exited 2: dpkg: error: unable to access the dpkg database directory /var/lib/dpkg")


def test_query_error_that_is_not_unknown_package_fails(capsys):
    class Broken(Dpkg):
        def query(self, args):
            return 2, "", "dpkg-query: error: parsing file '/var/lib/dpkg/status' near line 4\n"

    result, calls = run(capsys, Broken({}), ["rdma-core"])
    assert result["failed"] is True and "parsing file '/var/lib/dpkg/status'" in result["msg"]
    assert len(calls) == 1


def test_empty_list_does_nothing(capsys):
    result, calls = run(capsys, Dpkg({}), [])
    assert result["changed"] is False and calls == []
