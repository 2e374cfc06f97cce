"""Kubeflow MPI Operator's metrics, counted from the statuses the controller writes.

Served with jobcore's own on the controller's `/metrics` (`jobcore.REGISTRY`), under Kubeflow's
names, so its dashboards and alerts keep working.
"""

from __future__ import annotations

import contextlib

from prometheus_client import Counter
from prometheus_client import Gauge

from jobcore import REGISTRY
from jobcore import Object
from jobcore.jobs import INVALID_SPEC
from jobcore.jobs import JobStatus
from jobkinds.kubeflow.status import EVICTED

JOBS_CREATED = Counter(
    "mpi_operator_jobs_created_total", "Counts number of MPI jobs created", registry=REGISTRY
)
JOBS_SUCCESSFUL = Counter(
    "mpi_operator_jobs_successful_total",
    "Counts number of MPI jobs successful",
    registry=REGISTRY,
)
JOBS_FAILED = Counter(
    "mpi_operator_jobs_failed_total", "Counts number of MPI jobs failed", registry=REGISTRY
)
JOB_INFO = Gauge(
    "mpi_operator_job_info",
    "Information about MPIJob",
    ["launcher", "namespace"],
    registry=REGISTRY,
)


def announce(obj: Object, previous: JobStatus, status: JobStatus) -> None:
    """Count the transition from `previous` to the `status` just written.

    Created: the job's first status after a valid spec. Successful and failed: the phase
    becoming Succeeded or Failed, but not for a refused spec nor evicted workers (Kubeflow
    counts no failure for those). `job_info`
    names the launcher's batch Job from then on, until the job is deleted (`forget`).
    """
    meta = obj["metadata"]
    if status.condition("Initialized") is None:
        return
    if previous.condition("Initialized") is None:
        JOBS_CREATED.inc()
    JOB_INFO.labels(f"{meta['name']}-launcher", meta.get("namespace") or "").set(1)
    if status.phase == previous.phase:
        return
    failed = status.condition("Failed")
    if status.phase == "Succeeded":
        JOBS_SUCCESSFUL.inc()
    elif status.phase == "Failed" and failed and failed.reason not in (INVALID_SPEC, EVICTED):
        JOBS_FAILED.inc()


def forget(obj: Object) -> None:
    """Drop a deleted job's `job_info` series (Kubeflow keeps it for ever), if it has one."""
    meta = obj["metadata"]
    with contextlib.suppress(KeyError):
        JOB_INFO.remove(f"{meta['name']}-launcher", meta.get("namespace") or "")
