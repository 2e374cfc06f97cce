"""A kind's optional hooks: what it may change in how the job layer treats its jobs.

A kind declares them as one class attribute, `hooks = KindHooks(...)`; a kind without one gets
`NO_HOOKS`, the defaults. `hooks_of` is the one place the job layer reads them, so a hook is
either in `KindHooks`, typed, or not a hook at all (`kind_problems` reports an attribute that
looks like a misspelt one).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import fields
from typing import Any

from jobcore._jobs.kind import FROM_SPEC
from jobcore._jobs.kind import JobPolicy
from jobcore._jobs.models import JobStatus
from jobcore._jobs.statuspart import T9K_STATUS
from jobcore._jobs.statuspart import StatusPart
from jobcore._runtime.events import EventRecorder
from jobcore._runtime.resources import Object

HOOKS_ATTRIBUTE = "hooks"
"""The kind's attribute that holds its `KindHooks`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KindHooks:
    """The optional parts of a kind, each with the default a kind without it gets."""

    status_part: StatusPart = T9K_STATUS
    """How the status is stored: its model, printer columns and translation (see
    `StatusPart`); T9k's `JobStatus` as it is by default."""
    policy: Callable[[Any], JobPolicy] | None = None
    """`policy(spec)`: the run policy, run mode and gang settings the job layer obeys, for a
    spec that says them otherwise than `JobSpec`'s fields; called with each spec parsed.

    A job whose spec no longer parses is still cleaned up as its `runPolicy` says, so `policy`
    also gets a partial spec (`run_policy_of` in `_jobs/parse.py`): the spec model's field
    aliased `runPolicy`, validated alone, in `spec_model.model_construct(...)`, so no other
    field is set or checked: read only the fields in `spec.model_fields_set`. A model without
    such a field, or a `runPolicy` that is invalid too, gets the default `RunPolicy()` with no
    call."""
    manages: Callable[[Object], bool] | None = None
    """`manages(obj)`: False for a job another controller owns; it is neither cached nor
    reconciled (but for MultiKueue's, whose Workload jobcore keeps when it queues the kind).
    By default, a job whose `spec.managedBy` is unset or jobcore's."""
    announce: Callable[[EventRecorder, Object, JobStatus, JobStatus], None] | None = None
    """`announce(recorder, obj, previous, status)`: called after each status write, after
    jobcore's own Events and metrics, for the kind's own."""
    forget: Callable[[Object], None] | None = None
    """`forget(obj)`: called with each job once it is deleted, to drop its metric series."""
    min_counts: Callable[[Any], Mapping[str, int]] | None = None
    """`min_counts(job)`: the fewest pods of a replica type Kueue may admit the job with
    (partial admission; the kind then runs with what Kueue admitted). All of them by default."""
    kueue: bool = True
    """Whether jobcore's Kueue integration queues the kind's labelled jobs; False for a kind
    Kueue integrates itself (Kubeflow's MPIJob), so that no job gets two Workloads."""
    controller_name: str | None = None
    """The controller's name in logs, metrics and Events; the plural by default (two kinds of
    one plural need one each)."""


NO_HOOKS = KindHooks()
HOOK_NAMES = frozenset(hook.name for hook in fields(KindHooks))


def hooks_of(kind: object) -> KindHooks:
    """The kind's `hooks`, or `NO_HOOKS`; TypeError for a `hooks` that is not a KindHooks."""
    hooks = getattr(kind, HOOKS_ATTRIBUTE, NO_HOOKS)
    if not isinstance(hooks, KindHooks):
        raise TypeError(f"{type(kind).__name__}.hooks is a {type(hooks).__name__}, not KindHooks")
    return hooks


def policy_of(kind: object, spec: Any) -> JobPolicy:
    """The kind's `policy(spec)` if it has one; else what `Job` derives from a `JobSpec`."""
    policy = hooks_of(kind).policy
    return policy(spec) if policy is not None else FROM_SPEC
