"""Shared pieces of linerate's module_utils (stdlib only)."""

import json
import re


class ToolFailure(Exception):
    """The one error of the host modules' logic: a tool failed, or the host is
    not in a state the module can work with. ``msg`` plus what ``fail_json``
    should show beside it (``rc``, ``stdout``, ``stderr``, ``cmd``, ...) in ``kw``;
    a module ends with ``module.fail_json(msg=e.msg, **e.kw)``."""

    def __init__(self, msg, **kw):
        super().__init__(msg)
        self.msg = msg
        self.kw = kw


def exit_module(module, compute):
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


def duplicate_port(ports, key):
    """The error for the first of ``ports`` whose ``key`` (its netdev) repeats an earlier port's, or None:
    one port listed twice would be configured twice in one execution."""
    seen = {}
    for i, port in enumerate(ports):
        if port[key] in seen:
            return f"ports[{i}].{key}: {port[key]!r} is already ports[{seen[port[key]]}]"
        seen[port[key]] = i
    return None


def each_port(ports, apply, ident, label):
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
    results, diffs, failures = [], [], []
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
    combined = {"changed": any(r.get("changed") for r in results),
                "commands": [c for r in results for c in r.get("commands") or []],
                "ports": results}
    if diffs:
        combined["diff"] = diffs
    if failures:
        raise ToolFailure(f"{len(failures)} of {len(results)} ports failed (the others were done): "
                          + "; ".join(failures), **combined)
    return combined


class ParseError(ValueError):
    """A tool printed an error, or output that is not the format it should be.

    Parsers raise this instead of returning an empty success: a missing
    device, an unloaded driver or a permission error must stop the caller.
    """

    def __init__(self, tool, message, text=None):
        self.tool = tool
        self.text = text
        super().__init__(f"{tool}: {message}")


def eos_json(tool, doc, key, kind=dict):
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


def column_spans(header, rule=None, words=False):
    """Where the columns of an aligned text table are: ``[(name, start)]``.

    With the dashed ``rule`` line under the header (``-----  -----…``), each
    run of dashes is one column; without it, a column starts at a header
    word preceded by two or more spaces (so ``Remote Host`` is one column),
    or, with ``words``, at every header word (EOS: ``Duplex Speed``).
    Column names are the header text over each span, stripped.
    """
    if words:
        starts = [m.start() for m in re.finditer(r"\S+", header)]
    elif rule:
        starts = [m.start() for m in re.finditer(r"[-\u2026=]+", rule)]
    else:
        starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", header)]
    spans = []
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else None
        spans.append((header[start:end].strip(), start))
    return spans


def split_columns(line, spans):
    """Cells of ``line`` by the header's ``spans``: ``{name: text}``, or None.

    A blank cell is ``""``. A row whose text runs across a column boundary
    (a non-blank character on both sides of where the next column starts)
    does not fit the header and gives None: the caller reports it rather
    than guessing which cell is which.
    """
    cells = {}
    for index, (name, start) in enumerate(spans):
        end = spans[index + 1][1] if index + 1 < len(spans) else None
        if end is not None and 0 < end < len(line) and not line[end - 1].isspace() and not line[end].isspace():
            return None
        cells[name] = line[start:end].strip() if start < len(line) else ""
    return cells
