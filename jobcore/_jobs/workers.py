"""A job's worker pods by name: their names, their DNS names and the headless Service behind them.

Worker `i` of a job is the pod `<job>-worker-<i>`; with `hostname` and `subdomain: <job>` set
it is `<job>-worker-<i>.<job>.<namespace>.svc.<cluster domain>` through the Service named
after the job. A kind's workers reach each other by these names, whatever they run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobcore._jobs.kind import Job
from jobcore._runtime.resources import Object

WORKER = "worker"


def worker_name(job: Job[Any], index: int) -> str:
    return f"{job.name}-worker-{index}"


def worker_host(job: Job[Any], index: int) -> str:
    """A worker's DNS name through the headless Service, fully qualified in the cluster's
    domain (`--cluster-domain`): one lookup, whatever the pod's DNS search list."""
    return f"{worker_name(job, index)}.{job.service_domain()}"


def child_meta(job: Job[Any], name: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": job.namespace, "labels": dict(labels)}


def headless_service(job: Job[Any], ports: Mapping[str, int]) -> Object:
    """The Service named after the job that gives its workers their DNS names (`worker_host`),
    with `ports` (name -> port); headless, publishing workers before they are Ready so their
    names resolve early."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": child_meta(job, job.name, job.labels()),
        "spec": {
            "clusterIP": "None",
            "selector": job.labels(WORKER),
            "publishNotReadyAddresses": True,
            "ports": [
                {"name": name, "port": port, "targetPort": port} for name, port in ports.items()
            ],
        },
    }
