"""Run external tools the one way linerate modules do.

``Runner(module)(argv)`` maps ``argv[0]`` (a tool name) to the binary found
with ``module.get_bin_path`` (``/usr/sbin`` and ``/sbin`` included), runs it
as an argv list (never through a shell) with the locale pinned to C, and
returns ``(rc, stdout, stderr)``; ``env`` adds variables (the locale stays C).
A tool that is missing fails the module with its name, unless it is listed in
``optional``: then ``OSError`` is raised for the caller to handle.

``Runner.start(argv)`` starts the same command in the background (a
``subprocess.Popen``, for tools that run in parallel or under a deadline);
``finish(proc, deadline)`` collects it and kills it at the deadline.

``read_tool(run, argv, parser)`` runs a reading tool and returns what its
parser reads, or raises the one ``ToolFailure`` (``common.tool_failed``).
"""

import os
import subprocess
import time

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure

C_LOCALE = {"LANG": "C", "LC_ALL": "C"}
SBIN_DIRS = ["/usr/sbin", "/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"]


class Runner:
    def __init__(self, module, optional=()):
        self.module = module
        self.optional = set(optional)
        self.bins = {}

    def which(self, tool):
        if tool not in self.bins:
            self.bins[tool] = self.module.get_bin_path(tool, required=False, opt_dirs=SBIN_DIRS)
        return self.bins[tool]

    def path(self, tool, argv=None):
        """The binary of ``tool``; a missing one fails the module (``OSError`` when optional)."""
        path = self.which(tool)
        if path is None:
            if tool in self.optional:
                raise OSError(f"{tool} not found")
            self.module.fail_json(msg=f"{tool}: command not found (looked in PATH and {', '.join(SBIN_DIRS)}); is its package installed?", cmd=argv or [tool])
        return path

    def __call__(self, argv, env=None, data=None):
        """Run ``argv``; ``data`` is written to its standard input (no newline added)."""
        path = self.path(argv[0], argv)
        if data is None:
            return self.module.run_command([path, *argv[1:]], environ_update=dict(env or {}, **C_LOCALE))
        return self.module.run_command([path, *argv[1:]], environ_update=dict(env or {}, **C_LOCALE), data=data, binary_data=True)

    def start(self, argv, merge_stderr=False):
        """Start ``argv`` without waiting: a Popen with text stdout/stderr (stderr into stdout with ``merge_stderr``)."""
        path = self.path(argv[0], argv)
        return subprocess.Popen(
            [path, *argv[1:]],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            text=True,
            env=dict(os.environ, **C_LOCALE),
        )


def finish(proc, deadline):
    """Wait for ``proc`` until ``deadline`` (time.monotonic()): ``(rc, stdout, stderr, killed)``.

    At the deadline the process is killed and what it printed so far is kept; ``rc`` is then None.
    """
    try:
        out, err = proc.communicate(timeout=max(1, deadline - time.monotonic()))
        return proc.returncode, out, err, False
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return None, out, err, True


def read_tool(run, argv, parser, empty_out_reads_err=False, tail=False):
    """``parser``'s reading of what ``argv`` printed, through ``run(argv) -> (rc, stdout, stderr)``.

    A tool that exited non-zero has its stdout and stderr read together, so that a parser that knows the
    tool's own error words (``-E-``, ``Failed to get IB devices list``) names them; the tool failed either
    way: ``ToolFailure`` with the parser's reading as the message's detail, or the tool's output when the
    parser found nothing to say. A parser's ``ValueError`` (``ParseError``) on the output of a tool that
    exited 0 is a ``ToolFailure`` too (``<argv>: <why>``): an output that is not the tool's format is never
    an empty success. With ``empty_out_reads_err`` a tool that exited 0 with nothing on stdout has its
    stderr read: a tool that says what is wrong on stderr but exits 0 is still read by what it said. ``tail``
    quotes the end of a failed tool's output, not its start (``common.tool_failed``)."""
    rc, out, err = run(argv)
    if rc != 0:
        text = out + "\n" + err
    else:
        text = err if empty_out_reads_err and not out.strip() else out
    try:
        parsed = parser(text)
    except ValueError as e:
        raise ToolFailure.exited(argv, rc, out, err, detail=str(e)) from None
    if rc != 0:
        raise ToolFailure.exited(argv, rc, out, err, tail=tail)
    return parsed
