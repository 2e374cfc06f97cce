"""The job layer's Prometheus metrics, served with the runtime's from `REGISTRY`."""

from __future__ import annotations

import contextlib

from prometheus_client import Counter
from prometheus_client import Gauge

from jobcore._runtime.metrics import REGISTRY


def _jobs_counter(name: str, documentation: str) -> Counter:
    """A counter of jobs by kind and namespace."""
    return Counter(name, documentation, ("kind", "namespace"), registry=REGISTRY)


jobs_created_total = _jobs_counter(
    "jobcore_jobs_created_total", "Jobs whose children were first created, by kind and namespace."
)
jobs_succeeded_total = _jobs_counter(
    "jobcore_jobs_succeeded_total", "Jobs that reached the Succeeded phase."
)
jobs_failed_total = _jobs_counter(
    "jobcore_jobs_failed_total", "Jobs that reached the Failed phase (invalid specs not counted)."
)
jobs_restarted_total = _jobs_counter(
    "jobcore_jobs_restarted_total",
    "Times a failed job was torn down and recreated under runPolicy.backoffLimit.",
)
job_info = Gauge(
    "jobcore_job_info",
    "1 for every job the controller knows; the series goes away with the job.",
    ("kind", "namespace", "name"),
    registry=REGISTRY,
)


def remove_job_info(kind: str, namespace: str, name: str) -> None:
    """Drop a deleted job's info series, if it has one."""
    with contextlib.suppress(KeyError):
        job_info.remove(kind, namespace, name)
