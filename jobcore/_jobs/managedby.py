"""Who runs a job: `spec.managedBy`, as Kubernetes' Job and Kueue's MultiKueue read it.

A job whose `spec.managedBy` names another controller is that controller's: jobcore creates
no pods for it and writes none of its status. Kueue's MultiKueue is the case that matters:
on its manager cluster it sets `kueue.x-k8s.io/multikueue`, runs a copy of the job in a
worker cluster and copies the copy's status back. A kind that says who runs its jobs
elsewhere (Kubeflow's `runPolicy.managedBy`) gives its own `KindHooks.manages` instead.
"""

from __future__ import annotations

from collections.abc import Callable

from jobcore._runtime.resources import Object

JOBCORE = "batch.tensorstack.dev/jobcore"
"""`spec.managedBy` of the jobs jobcore runs (as does an unset one)."""
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
"""`spec.managedBy` of the jobs Kueue's MultiKueue runs in another cluster."""


def managed_by(obj: Object) -> str | None:
    """The job's `spec.managedBy`, if it is a non-empty string."""
    spec = obj.get("spec")
    value = spec.get("managedBy") if isinstance(spec, dict) else None
    return value if isinstance(value, str) and value else None


def jobcore_runs(obj: Object) -> bool:
    """Whether jobcore runs the job: its `spec.managedBy` is unset or jobcore's."""
    return managed_by(obj) in (None, JOBCORE)


def cached_jobs(runs: Callable[[Object], bool], queued: bool) -> Callable[[Object], bool]:
    """The jobs a kind's controller caches: those it runs and, when it queues jobs with Kueue,
    those MultiKueue runs elsewhere, whose Workload it keeps here (see `Queueing.dispatched`)."""
    if not queued:
        return runs
    return lambda obj: runs(obj) or managed_by(obj) == MULTIKUEUE
