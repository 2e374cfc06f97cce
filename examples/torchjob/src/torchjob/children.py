"""TorchJob's children: a headless Service, then the master and worker Pods with their env.

The Service gives the master a stable DNS name, `<job>-master-0.<job>.<namespace>.svc`, which
every Pod gets as MASTER_ADDR. The env also holds torchrun's own variables (`PET_*`, read by
torchrun as defaults of `--nnodes`, `--node_rank`, `--master_addr`, `--master_port`), so the
user's `torchrun ... train.py` runs unchanged; a program started without torchrun reads
MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK (one process per Pod).
"""

from __future__ import annotations

from typing import Any

from jobcore import Object
from jobcore.jobs import Job
from jobcore.jobs import PodTemplateSpec
from torchjob.spec import CONTAINER
from torchjob.spec import TorchJobSpec

MASTER = "master"
WORKER = "worker"
MASTER_PORT = 29500
ENV_NAMES = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
    "PET_NNODES",
    "PET_NODE_RANK",
)
"""The variables the job sets in every `pytorch` container; a template may not set them."""


def master_name(job: Job[TorchJobSpec]) -> str:
    return f"{job.name}-master-0"


def worker_name(job: Job[TorchJobSpec], index: int) -> str:
    return f"{job.name}-worker-{index}"


def master_addr(job: Job[TorchJobSpec]) -> str:
    """The master's DNS name through the headless Service."""
    return f"{master_name(job)}.{job.name}.{job.namespace}.svc"


def world_size(job: Job[TorchJobSpec]) -> int:
    return 1 + job.spec.worker.replicas


def env(job: Job[TorchJobSpec], rank: int) -> list[dict[str, Any]]:
    values = {
        "MASTER_ADDR": master_addr(job),
        "MASTER_PORT": str(MASTER_PORT),
        "WORLD_SIZE": str(world_size(job)),
        "RANK": str(rank),
    }
    values |= {
        "PET_MASTER_ADDR": values["MASTER_ADDR"],
        "PET_MASTER_PORT": values["MASTER_PORT"],
        "PET_NNODES": values["WORLD_SIZE"],
        "PET_NODE_RANK": values["RANK"],
    }
    return [{"name": name, "value": value} for name, value in values.items()]


def service(job: Job[TorchJobSpec]) -> Object:
    """Headless, publishing Pods before they are Ready: workers resolve the master at once."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": job.name, "labels": job.labels()},
        "spec": {
            "clusterIP": "None",
            "selector": job.labels(),
            "publishNotReadyAddresses": True,
            "ports": [{"name": "c10d", "port": MASTER_PORT, "targetPort": MASTER_PORT}],
        },
    }


def pod(
    job: Job[TorchJobSpec], template: PodTemplateSpec, replica_type: str, index: int, rank: int
) -> Object:
    """A Pod from `template`, named so that the Service resolves it, with the env added.

    The containers' commands are the user's. restartPolicy is Never: a restarted rank cannot
    rejoin a running group, so `spec.runPolicy` restarts the whole job instead.
    """
    name = master_name(job) if replica_type == MASTER else worker_name(job, index)
    meta = template.metadata
    labels = {**((meta and meta.labels) or {}), **job.labels(replica_type, index)}
    metadata: dict[str, Any] = {"name": name, "labels": labels}
    if meta and meta.annotations:
        metadata["annotations"] = dict(meta.annotations)
    spec = template.pod_spec()
    spec.update(hostname=name, subdomain=job.name, restartPolicy="Never")
    for container in spec["containers"]:
        if container["name"] == CONTAINER:
            container["env"] = [*env(job, rank), *container.get("env", ())]
            # The failure message quotes the log's last line when the program writes no
            # termination message.
            container.setdefault("terminationMessagePolicy", "FallbackToLogsOnError")
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def children(job: Job[TorchJobSpec]) -> list[Object]:
    """Every child at once: torchrun's rendezvous waits for the ranks, so no Pod need wait."""
    worker = job.spec.worker
    return [
        service(job),
        pod(job, job.spec.master.template, MASTER, 0, rank=0),
        *(pod(job, worker.template, WORKER, i, rank=i + 1) for i in range(worker.replicas)),
    ]
