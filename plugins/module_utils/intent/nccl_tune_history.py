"""The tuned file's history and its rollback (docs/tuning.md): every tuned file a sweep wrote that
differs from the one before is kept in a history document beside it (``plan_write``); rollback puts
back the file from before the newest sweep, idempotent: a second rollback changes nothing
(``plan_rollback``). Pure functions, stdlib only; module nccl_tuned_file writes what they plan.
"""

import json

HISTORY_VERSION = 1


def read_history(text):
    """The history document's entries ``[{"n", "document": text|None}]`` (empty text: none); ValueError
    when it is not a history document."""
    if text is None or not str(text).strip():
        return []
    doc = json.loads(text)
    if not isinstance(doc, dict) or doc.get("version") != HISTORY_VERSION or not isinstance(doc.get("entries"), list):
        raise ValueError(f"not a version {HISTORY_VERSION} tuned-file history")
    for e in doc["entries"]:
        if not isinstance(e, dict) or not isinstance(e.get("n"), int) or not isinstance(e.get("document"), (str, type(None))):
            raise ValueError("a history entry is not {n, document}")
    return list(doc["entries"])


def history_text(entries):
    return json.dumps({"version": HISTORY_VERSION, "entries": entries}, indent=2, sort_keys=True) + "\n"


def plan_write(current, new, entries, keep=20, at=None):
    """A sweep writes ``new``: ``(tuned text, history entries, changed)``. Unchanged text changes nothing;
    else the first write records the file it replaces (``current``, None when absent), then ``new``;
    at most ``keep`` entries stay (the oldest go)."""
    if current == new:
        return current, entries, False
    entries = list(entries)
    n = entries[-1]["n"] if entries else 0
    if not entries or entries[-1]["document"] != current:
        n += 1
        entries.append({"n": n, "document": current, "at": at, "by": "before"})
    entries.append({"n": n + 1, "document": new, "at": at, "by": "sweep"})
    return new, entries[-max(2, keep) :], True


def plan_rollback(current, entries, to=None):
    """Roll back: ``(tuned text or None (remove the file), changed, why)``. Without ``to``: the file
    from before the newest sweep's (entries[-2]); a second rollback finds the same target and changes
    nothing. ``to``: the entry numbered so. ValueError when there is nothing to roll back to."""
    if to is None:
        if len(entries) < 2:
            raise ValueError(f"nothing to roll back to: the history holds {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} (a sweep writes two)")
        target = entries[-2]
    else:
        target = next((e for e in entries if e["n"] == int(to)), None)
        if target is None:
            raise ValueError(f"rollback_to {to}: no such history entry (allowed: {', '.join(str(e['n']) for e in entries) or 'none'})")
    return target["document"], target["document"] != current, f"history entry {target['n']}"
