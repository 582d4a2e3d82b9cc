"""dpkg's package state: a held package is installed (the drift check must not
promise an install that would not happen), half-installed and config-only
ones are not, and what dpkg would not print is an error naming the line."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.parsers import dpkg
from ansible_collections.linerate.fabric.plugins.module_utils.host import ofed
from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure

# dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\n' on a node the
# mofed role converged (it holds what it pins), with one package removed but
# configured, one unpacked only and one reinstall-required.
CONVERGED = (
    "mlnx-ofed-all 24.10-1.1.4.0 hi \n"
    "doca-ofed 24.10-1.1.4.0 ii \n"
    "mlnx-tools 24.10-0.2410068 hi \n"
    "mft 4.30.0-139 iU \n"
    "rdma-core 2410mlnx54-1.2410068 rc \n"
    "ibverbs-utils 2410mlnx54-1.2410068 iHR\n"
    "libibverbs1 2410mlnx54-1.2410068 it \n"
    "openmpi  un \n"
)


@pytest.mark.parametrize(
    "abbrev,installed,held",
    [
        ("ii ", True, False),
        ("hi ", True, True),
        ("ri ", True, False),
        ("it ", True, False),
        ("iW ", True, False),
        ("iU ", False, False),
        ("iF ", False, False),
        ("rc ", False, False),
        ("un ", False, False),
        ("pn ", False, False),
        ("hH ", False, True),
        ("iiR", True, False),
    ],
)
def test_status_abbrev(abbrev, installed, held):
    st = dpkg.status_from_abbrev(abbrev)
    assert (st["installed"], st["held"]) == (installed, held)


def test_held_and_trigger_pending_packages_are_installed():
    assert dpkg.installed_versions(CONVERGED) == {
        "mlnx-ofed-all": "24.10-1.1.4.0",
        "doca-ofed": "24.10-1.1.4.0",
        "mlnx-tools": "24.10-0.2410068",
        "libibverbs1": "2410mlnx54-1.2410068",
    }


def test_states_read_in_full():
    got = dpkg.parse_dpkg_query(CONVERGED)
    assert got["ibverbs-utils"] == {
        "selection": "install",
        "state": "half-installed",
        "installed": False,
        "held": False,
        "reinstall_required": True,
        "version": "2410mlnx54-1.2410068",
    }
    assert got["openmpi"]["version"] is None and got["openmpi"]["state"] == "not-installed"


@pytest.mark.parametrize("text", ["mlnx-ofed-all\n", "mlnx-ofed-all 24.10\n", "x 1.0 zz \n", "x 1.0 iX \n", "x 1.0 iiQ\n"])
def test_what_dpkg_does_not_print_is_named(text):
    with pytest.raises(dpkg.ParseError, match="line 1"):
        dpkg.parse_dpkg_query(text)


class Dpkg:
    """dpkg-query as the shared Runner calls it: argv with the tool name first."""

    def __init__(self, out):
        self.out, self.argv = out, None

    def __call__(self, argv):
        self.argv = argv
        return 0, self.out, ""


def test_preflight_counts_the_roles_own_hold_as_installed():
    run = Dpkg(CONVERGED)
    got = ofed.installed_versions(run, ["mlnx-ofed-all", "mft"])
    assert run.argv == ["dpkg-query", "-W", "-f=${Package} ${Version} ${db:Status-Abbrev}\n", "mlnx-ofed-all", "mft"]
    assert got["mlnx-ofed-all"] == "24.10-1.1.4.0" and "mft" not in got


def test_preflight_fails_on_output_dpkg_would_not_print():
    with pytest.raises(ToolFailure) as e:
        ofed.installed_versions(Dpkg("garbage\n"), ["x"])
    assert e.value.msg.startswith("dpkg-query printed what dpkg does not: dpkg-query: line 1")
    assert e.value.kw == {"rc": 0, "stdout": "garbage\n", "stderr": ""}
