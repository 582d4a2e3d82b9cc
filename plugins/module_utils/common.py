"""Shared pieces of linerate's module_utils (stdlib only)."""

from __future__ import annotations

import json
import os
import re
from typing import Any, Callable, Optional, Sequence, TypeVar, overload

_T = TypeVar("_T")


# How much of a failed tool's output its message quotes (the whole output is in stdout/stderr beside it).
TOOL_OUTPUT_LIMIT = 400


def tool_failed(
    argv: Sequence[Any],
    rc: Optional[int],
    out: Optional[str] = "",
    err: Optional[str] = "",
    what: Optional[str] = None,
    detail: Optional[str] = None,
    tail: bool = False,
    limit: int = TOOL_OUTPUT_LIMIT,
    hint: str = "",
) -> str:
    """The one message for a tool that failed: ``[<what>: ]<argv> exited <rc>[: <why>][<hint>]``.

    ``why`` is ``detail`` (what a parser read from the tool's own error) or else what the tool printed:
    its stderr, or its stdout when stderr is empty, stripped and cut to ``limit`` characters - its first
    ones, or with ``tail`` its last (tools that print progress before the error: ``mlxconfig set``,
    ``apt-get``). A tool that exited 0 but printed what cannot be read gives ``<argv>: <why>``.
    ``hint`` (the remedy, with its own leading separator) ends the message. The argv is joined with
    spaces, a newline in an argument (``dpkg-query -f``'s format) written ``\\n``."""
    text = (detail if detail is not None else (err or out or "")).strip()
    if detail is None and len(text) > limit:
        text = text[-limit:] if tail else text[:limit]
    head = " ".join(str(a) for a in argv).replace("\n", "\\n") + ("" if rc == 0 else f" exited {rc}")
    return (f"{what}: " if what else "") + head + (f": {text}" if text else "") + hint


class ToolFailure(Exception):
    """The one error of the host layer (module_utils/host/ and the host modules): a tool failed, or the
    host or an input is not in a state the module can work with. ``msg`` plus what ``fail_json``
    should show beside it (``rc``, ``stdout``, ``stderr``, ``cmd``, ...) in ``kw``; a module ends
    with ``module.fail_json(msg=e.msg, **e.kw)`` (``exit_module``). The layer's more particular
    errors derive from it (``breaker.StateError``, ``rollout.RolloutError``)."""

    def __init__(self, msg: str, **kw: Any) -> None:
        super().__init__(msg)
        self.msg = msg
        self.kw = kw

    @classmethod
    def exited(
        cls,
        argv: Sequence[Any],
        rc: Optional[int],
        out: Optional[str] = "",
        err: Optional[str] = "",
        what: Optional[str] = None,
        detail: Optional[str] = None,
        tail: bool = False,
        limit: int = TOOL_OUTPUT_LIMIT,
        hint: str = "",
        **kw: Any,
    ) -> ToolFailure:
        """The failure of ``argv``: ``tool_failed``'s message with ``rc``, ``stdout``, ``stderr`` and
        ``cmd`` beside it (and ``kw``: the result so far, ...), for ``raise ToolFailure.exited(...)``."""
        return cls(
            tool_failed(argv, rc, out, err, what=what, detail=detail, tail=tail, limit=limit, hint=hint), rc=rc, stdout=out, stderr=err, cmd=list(argv), **kw
        )


# ANSI SGR/CSI escape sequences (``ESC [ ... m`` and the like): nvidia-smi underlines the header of
# ``topo -m`` with ESC[4m ... ESC[0m even when its output goes to a file (seen on driver 580.159.04).
ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


@overload
def strip_ansi(text: str) -> str: ...


@overload
def strip_ansi(text: _T) -> _T: ...


def strip_ansi(text: Any) -> Any:
    """``text`` without terminal escape sequences; anything that is not a string is returned unchanged."""
    return ANSI_ESCAPE.sub("", text) if isinstance(text, str) else text


def exit_module(module: Any, compute: Callable[[], dict[str, Any]]) -> None:
    """End an Ansible module with ``compute()``'s result: a ToolFailure fails it with its
    message and fields, the result's ``warnings`` become the module's warnings, and its
    ``diff`` is returned only under --diff. The one ending of every host module."""
    try:
        result = compute()
    except ToolFailure as e:
        if not module._diff:
            e.kw.pop("diff", None)
        module.fail_json(msg=e.msg, **e.kw)
    for note in result.pop("warnings", None) or []:
        module.warn(note)
    if not module._diff:
        result.pop("diff", None)
    module.exit_json(**result)


def exit_measurement(module: Any, **result: Any) -> None:
    """End a measurement module (ib_write_bw, nccl_tests, nccl_tune): it never changes the host, so
    ``changed`` is False; in check mode, where it ran nothing, ``skipped_run`` says so."""
    if module.check_mode:
        result["skipped_run"] = True
    module.exit_json(changed=False, **result)


def preview_in_check_mode(module: Any, preview: Callable[[], dict[str, Any]]) -> None:
    """A measurement's check mode: nothing runs, the module ends with ``preview()`` (what it would
    run) through ``exit_measurement``. Outside check mode it returns and the run goes on."""
    if module.check_mode:
        exit_measurement(module, **preview())


def duplicate_port(ports: Sequence[dict[str, Any]], key: str) -> Optional[str]:
    """The error for the first of ``ports`` whose ``key`` (its netdev) repeats an earlier port's, or None:
    one port listed twice would be configured twice in one execution."""
    seen: dict[Any, int] = {}
    for i, port in enumerate(ports):
        if port[key] in seen:
            return f"ports[{i}].{key}: {port[key]!r} is already ports[{seen[port[key]]}]"
        seen[port[key]] = i
    return None


def each_port(
    ports: Sequence[dict[str, Any]],
    apply: Callable[[dict[str, Any]], dict[str, Any]],
    ident: Callable[[dict[str, Any]], dict[str, Any]],
    label: Callable[[dict[str, Any]], str],
) -> dict[str, Any]:
    """One module execution over several ports, as a loop over them would be.

    ``apply(port)`` configures one port and returns its result (``changed``,
    ``commands`` and, optionally, ``diff``); a ToolFailure fails only that
    port: the others are still applied. Returns ``{changed, commands, ports[,
    diff]}``: ``ports`` one result per port, in order, each starting with
    ``ident(port)`` (the fields naming the port; a failed port: those,
    ``failed``, ``msg`` and the failure's fields), ``changed`` any port's,
    ``commands`` every port's and ``diff`` the list of the ports' diffs.
    When a port failed, raises ToolFailure with that result and a message
    naming each failed port (``label(port)``) with its error.
    """
    results: list[dict[str, Any]] = []
    diffs: list[Any] = []
    failures: list[str] = []
    for port in ports:
        try:
            result = {**ident(port), **apply(port)}
        except ToolFailure as e:
            result = {**ident(port), **e.kw, "failed": True, "msg": e.msg}
            failures.append(f"{label(port)}: {e.msg}")
        diff = result.pop("diff", None)
        if diff:
            diffs.append(diff)
        results.append(result)
    combined: dict[str, Any] = {
        "changed": any(r.get("changed") for r in results),
        "commands": [c for r in results for c in r.get("commands") or []],
        "ports": results,
    }
    if diffs:
        combined["diff"] = diffs
    if failures:
        raise ToolFailure(f"{len(failures)} of {len(results)} ports failed (the others were done): " + "; ".join(failures), **combined)
    return combined


# A shell prompt with the command typed after it, as published captures show it (``root@host:/#
# show_gids``, ``[root@host ~]# ibstat``, ``bash-5.1# mlxconfig q``, ``$ ib_write_bw ...``): the
# capture's, not the tool's. Parsers whose tool prints ``# `` lines of its own must not use it.
SHELL_PROMPT_RE = re.compile(r"^(?:\[[^\]]*\]|[\w.@:~/()-]+)?\s?[#$](?:\s|$)")


class ParseError(ValueError):
    """A tool printed an error, or output that is not the format it should be.

    Parsers raise this instead of returning an empty success: a missing
    device, an unloaded driver or a permission error must stop the caller.
    """

    def __init__(self, tool: str, message: str, text: Optional[str] = None) -> None:
        self.tool = tool
        self.text = text
        super().__init__(f"{tool}: {message}")


def eos_json(tool: str, doc: Any, key: str, kind: type = dict) -> Any:
    """``doc[key]`` of an EOS ``<command> | json`` answer (text or parsed), checked to be a ``kind``.

    ParseError (naming ``tool``) for what is not JSON, not an object, an eAPI
    error answer (``errors`` / ``error``), or no ``key`` of that kind.
    """
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except ValueError as e:
            raise ParseError(tool, f"not JSON: {e}", doc) from None
    if not isinstance(doc, dict):
        raise ParseError(tool, "not a JSON object", None)
    if "errors" in doc or "error" in doc:
        raise ParseError(tool, str(doc.get("errors") or doc.get("error")), None)
    value = doc.get(key)
    if not isinstance(value, kind):
        raise ParseError(tool, f"no {key}" + (" list" if kind is list else ""), None)
    return value


def column_spans(header: str, rule: Optional[str] = None, words: bool = False) -> list[tuple[str, int, int]]:
    """Where the columns of an aligned text table are: ``[(name, start, end)]``.

    With the dashed ``rule`` line under the header (``-----  -----…``), each
    run of dashes is one column; without it, a column starts at a header
    word preceded by two or more spaces (so ``Remote Host`` is one column),
    or, with ``words``, at every header word (EOS: ``Duplex Speed``).
    ``start`` is where the column's header text (or dash run) begins, ``end``
    where it ends: a left-aligned cell starts at or after ``start``, a
    right-aligned one (EOS numbers, ``unconf`` under ``Speed``) ends at ``end``.
    Column names are the header text from each start to the next, stripped.
    """
    if words:
        found = list(re.finditer(r"\S+", header))
    elif rule:
        found = list(re.finditer(r"[-\u2026=]+", rule))
    else:
        found = list(re.finditer(r"\S+(?: \S+)*", header))
    spans: list[tuple[str, int, int]] = []
    for index, m in enumerate(found):
        nxt = found[index + 1].start() if index + 1 < len(found) else None
        spans.append((header[m.start() : nxt].strip(), m.start(), m.end()))
    return spans


def _span(span: Sequence[Any]) -> tuple[str, int, int]:
    """``(name, start, end)``; a ``(name, start)`` pair (older callers) ends where it starts."""
    return (span[0], span[1], span[2] if len(span) > 2 else span[1])


def split_columns(line: str, spans: Sequence[Sequence[Any]]) -> Optional[dict[str, str]]:
    """Cells of ``line`` by the header's ``spans``: ``{name: text}``, or None.

    Each whitespace-delimited word of the row goes to one column, in order:
    the column whose span (from its start to the next column's start) the
    word starts in, when it ends before the next column starts (left-aligned
    text, and text under a right-aligned header); else the column whose
    header it ends with (a right-aligned cell wider than its header word
    starts before it: EOS numbers, ``unconf`` under ``Speed``). A cell is the
    row's text from its first word to its last; a blank cell is ``""``.

    A word that runs into the next column's header without ending with any
    header, or that would go to a column left of the word before it, does
    not fit the header and gives None: the caller reports the row rather
    than guessing which cell is which.
    """
    cols = [_span(s) for s in spans]
    if not cols:
        return None
    placed: list[list[tuple[int, int]]] = [[] for _col in cols]
    last = 0
    for m in re.finditer(r"\S+", line):
        begin, end = m.start(), m.end()
        k = 0
        while k + 1 < len(cols) and cols[k + 1][1] <= begin:
            k += 1
        nxt = cols[k + 1][1] if k + 1 < len(cols) else None
        if nxt is None or end <= nxt:
            col = k
        else:
            right = next((j for j in range(k + 1, len(cols)) if cols[j][2] == end), None)
            if right is None:
                return None
            col = right
        if col < last:
            return None
        last = col
        placed[col].append((begin, end))
    return {name: (line[placed[i][0][0] : placed[i][-1][1]] if placed[i] else "") for i, (name, _start, _end) in enumerate(cols)}


def fsync_dir(d: str) -> None:
    """Flush directory ``d`` itself to disk (the entries a rename or a new file made in it), as a durable
    write needs after the file's own fsync: the reports (report/files.py) and the switch backups."""
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
