"""intent/nccl_tune_history.py: the tuned file's history and its rollback (module nccl_tuned_file runs them:
tests/unit/intent/test_nccl_tune.py)."""

import pytest

from intent.test_nccl_tune import proposed

from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tuned
from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tune_history as nth


def test_history_records_what_a_sweep_replaced_and_rollback_puts_back_the_previous_file_idempotently():
    a, b = nccl_tuned.tuned_document([], {"n": 1}), nccl_tuned.tuned_document(proposed(), {"n": 2})
    text, entries, changed = nth.plan_write(None, a, [], at="t1")
    assert changed and text == a and [(e["n"], e["document"], e["by"]) for e in entries] == [(1, None, "before"), (2, a, "sweep")]
    assert nth.plan_write(a, a, entries) == (a, entries, False)  # the same result: nothing changes
    text, entries, changed = nth.plan_write(a, b, entries, at="t2")
    assert changed and [e["n"] for e in entries] == [1, 2, 3]  # a is already the newest entry
    assert nth.plan_rollback(b, entries) == (a, True, "history entry 2")
    assert nth.plan_rollback(a, entries) == (a, False, "history entry 2")  # a second rollback changes nothing
    assert nth.plan_rollback(b, entries, to=1) == (None, True, "history entry 1")  # before any sweep: no file
    with pytest.raises(ValueError, match="nothing to roll back to"):
        nth.plan_rollback(a, entries[:1])
    with pytest.raises(ValueError, match=r"rollback_to 9: no such history entry \(allowed: 1, 2, 3\)"):
        nth.plan_rollback(a, entries, to=9)
    # a file changed by hand since the last sweep is recorded before the new one replaces it
    _t, more, _c = nth.plan_write("hand-edited", a, entries)
    assert [e["document"] for e in more[-2:]] == ["hand-edited", a]
    _t, kept, _c = nth.plan_write(None, b, [{"n": i, "document": str(i)} for i in range(1, 30)], keep=5)
    assert [e["n"] for e in kept] == [26, 27, 28, 29, 30, 31][-5:]
