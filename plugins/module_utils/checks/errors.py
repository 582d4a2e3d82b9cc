"""The one error of the checks layer (checks/, report/): ``CheckError``.

What stops a check, its report or the report's files derives from it, each naming what was wrong and
what to do: ``thresholds.NotPublished`` (a fabric without the validation's derived values),
``Unreadable`` (a check's inputs could not be read), ``sched_topology.TopologyRefused`` (the
observed cabling cannot be the scheduler's topology), ``report/files.py ReportWriteError`` (the report
could not be written, nothing kept). A ``ValueError``, as each of them was: a caller that catches
ValueError (the filters) still does. A probe (probes/) runs inside a module on a node and fails it
the host layer's way, ``common.ToolFailure``.
"""


class CheckError(ValueError):
    """What stops a check, its report or the report's files; the message says what and why."""


class Unreadable(CheckError):
    """A check's inputs could not be read: the report fails with this message."""
