"""checks/errors.py: one error for the checks layer (issue 39 item 3), every error of checks/ and report/
under it, each still a ValueError for the callers that catch that."""

import importlib
import inspect
import pathlib

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.checks import sched_topology, thresholds
from ansible_collections.linerate.fabric.plugins.module_utils.checks.errors import CheckError, Unreadable
from ansible_collections.linerate.fabric.plugins.module_utils.report import files

MODULE_UTILS = pathlib.Path(__file__).resolve().parents[3] / "plugins" / "module_utils"
PREFIX = "ansible_collections.linerate.fabric.plugins.module_utils"


def _layer_errors():
    """(module, class) of every exception class defined in a module of checks/ or report/."""
    for package in ("checks", "report"):
        for path in sorted((MODULE_UTILS / package).glob("*.py")):
            module = importlib.import_module(f"{PREFIX}.{package}.{path.stem}")
            for _name, cls in inspect.getmembers(module, inspect.isclass):
                if issubclass(cls, BaseException) and cls.__module__ == module.__name__:
                    yield module.__name__, cls


def test_the_layers_errors_are_check_errors_and_value_errors():
    found = {cls.__name__ for _m, cls in _layer_errors()}
    assert found >= {"CheckError", "NotPublished", "Unreadable", "TopologyRefused", "ReportWriteError"}
    assert [f"{m}.{cls.__name__}" for m, cls in _layer_errors() if not issubclass(cls, CheckError)] == []
    assert issubclass(CheckError, ValueError)


def test_the_finder_sees_an_error_outside_the_base():
    # the check above would pass on anything if the finder found nothing
    names = {cls.__name__: cls for _m, cls in _layer_errors()}
    assert names["ReportWriteError"].__mro__[1] is CheckError


@pytest.mark.parametrize(
    "raise_it, kind, text",
    [
        (lambda: thresholds.derived({"name": "lab"}), thresholds.NotPublished, "pass fabric_effective"),
        (lambda: (_ for _ in ()).throw(files.ReportWriteError("/r/x", "cannot be written")), files.ReportWriteError, "/r/x: cannot be written"),
    ],
)
def test_one_except_catches_each_and_keeps_its_message(raise_it, kind, text):
    with pytest.raises(CheckError, match=text) as err:
        raise_it()
    assert type(err.value) is kind


def test_refusals_of_the_registry_and_the_topology_are_check_errors():
    assert issubclass(Unreadable, CheckError) and issubclass(sched_topology.TopologyRefused, CheckError)
    with pytest.raises(CheckError, match="has findings open"):
        sched_topology.render({}, [{"code": "CABLE_MISWIRED", "check": "cabling", "severity": "error", "message": "leaf1 swp1"}], ["node1"])
