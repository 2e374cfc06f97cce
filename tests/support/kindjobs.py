"""Plain jobs of the three launcher kinds (MPIJob, HorovodJob, ColossalAIJob), for the tests that
need a job of a kind, not a particular spec, and for those that run the same test on each."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from jobcore import Client
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import JobKind
from jobcore.jobs import parse_time
from jobcore.testing import eventually
from jobcore.testing import job_manifest
from jobcore.testing import job_status
from jobkinds.colossalaijob import ColossalAIJobKind
from jobkinds.horovodjob import HorovodJobKind
from jobkinds.mpijob import MPIJobKind


def _template(container: str, image: str) -> Object:
    return {"spec": {"containers": [{"name": container, "image": image}]}}


@dataclass(frozen=True)
class LauncherKind:
    """A launcher kind, its plain job's spec and the names of its two containers."""

    kind: JobKind[Any]
    spec: Object
    """The plain job's spec; `job` sets its `worker.replicas`."""
    launcher: str
    """The launcher pod's main container."""
    worker: str
    """A worker pod's main container."""
    host_line: str
    """A worker's line in the plain job's hostfile, from its `host` name."""

    @property
    def resource(self) -> Resource:
        return self.kind.resource

    def job(self, namespace: str, name: str, *, replicas: int = 2, **spec: Any) -> Object:
        """The plain job of `replicas` workers, to create; `spec` adds or replaces fields."""
        plain = {**self.spec, "worker": {**self.spec["worker"], "replicas": replicas}}
        return job_manifest(self.kind, plain | spec, name=name, namespace=namespace, uid=None)


MPIJOB = LauncherKind(
    MPIJobKind(),
    {"worker": {"cmd": ["./train"], "template": _template("mpi-worker", "mpi:latest")}},
    launcher="mpi-launcher",
    worker="mpi-worker",
    host_line="{host} slots=1",
)
HOROVODJOB = LauncherKind(
    HorovodJobKind(),
    {
        "worker": {
            "slotsPerWorker": 2,
            "cmd": ["python", "train.py"],
            "template": _template("worker", "horovod"),
        }
    },
    launcher="launcher",
    worker="worker",
    host_line="{host} slots=2",
)
COLOSSALAIJOB = LauncherKind(
    ColossalAIJobKind(),
    {
        "launcher": {"image": "colossalai:latest", "workingDir": "/workspace"},
        "worker": {
            "procPerWorker": 2,
            "command": ["train.py", "--epochs", "1"],
            "torchArgs": ["--max_restarts=0"],
            "template": _template("worker", "c:latest"),
        },
    },
    launcher="launcher",
    worker="worker",
    host_line="{host}",
)
LAUNCHER_KINDS = (MPIJOB, HOROVODJOB, COLOSSALAIJOB)


def later(timestamp: str, seconds: int) -> str:
    """The API timestamp `seconds` after `timestamp`: when a retry's pods come back."""
    moment = parse_time(timestamp)
    assert moment is not None, timestamp
    return (moment + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def seconds_between(start: str, end: str) -> float:
    """Seconds from the API timestamp `start` to `end`."""
    first, last = parse_time(start), parse_time(end)
    assert first is not None and last is not None
    return (last - first).total_seconds()


async def retried(client: Client, resource: Resource, namespace: str, name: str, delay: int) -> Any:
    """The job's status once it records a retry of `delay` seconds."""

    async def recorded() -> bool:
        status = await job_status(client, resource, namespace, name)
        return bool(status.get("retryDelaySeconds") == delay)

    await eventually(recorded, timeout=30, interval=0.05)
    return await job_status(client, resource, namespace, name)
