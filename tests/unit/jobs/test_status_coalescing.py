"""Which status changes wait for the next write slot: the pods' progress only."""

from __future__ import annotations

from jobcore._jobs.writer import progress_only

RUNNING = {"phase": "Running", "conditions": [{"type": "Running", "status": "True"}]}


def test_progress_alone_waits() -> None:
    old = {**RUNNING, "tasks": [{"type": "worker", "status": []}], "ready": "0/3"}
    new = {**RUNNING, "tasks": [{"type": "worker", "status": [{"phase": "Running"}]}]}
    assert progress_only({**new, "ready": "1/3", "aggregate": {"running": 1}}, old)


def test_a_condition_message_alone_waits() -> None:
    waiting = {"type": "Running", "status": "False", "reason": "WorkersNotReady"}
    old = {"phase": "Pending", "conditions": [{**waiting, "message": "Waiting for 8 of 8"}]}
    new = {"phase": "Pending", "conditions": [{**waiting, "message": "Waiting for 7 of 8"}]}
    assert progress_only(new, old)
    assert not progress_only({**new, "conditions": [{**waiting, "reason": "Other"}]}, old)


def test_a_phase_or_condition_change_is_written_at_once() -> None:
    assert not progress_only({**RUNNING, "phase": "Succeeded"}, RUNNING)
    changed = {**RUNNING, "conditions": [{"type": "Running", "status": "False"}]}
    assert not progress_only(changed, RUNNING)
    assert not progress_only({**RUNNING, "restarts": 1}, RUNNING)
