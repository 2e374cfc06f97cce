"""The job kinds the MPI benchmarks drive: each one's jobs, how its status reads, and the
children a plain client creates in the controller's place.

bench_scale's `--kind` picks one of `KINDS`; the rest of the benchmark is the same code for
every kind, so that two kinds' figures differ by the kinds alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import uuid
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jobcore import BATCH_JOBS
from jobcore import PODS
from jobcore import Object
from jobcore import Resource
from jobcore._jobs.plan import adopt
from jobcore.jobs import JobKind
from jobcore.jobs import Observed
from jobcore.jobs import parse_job
from jobcore.testing import job_manifest
from jobkinds import kubeflow
from jobkinds import mpijob as t9k

IMAGE = "mpi:latest"
COMMAND = "./train"


@dataclass(frozen=True)
class ClientDefaults:
    """An upstream operator's API client limits (client-go's token bucket), which bound how
    fast it can send any number of requests."""

    operator: str
    qps: float
    burst: int

    def shortest_seconds(self, requests: float) -> float:
        """The least time `requests` take through the bucket: the burst at once, the rest at
        `qps`."""
        return max(requests - self.burst, 0.0) / self.qps


@dataclass(frozen=True)
class BenchKind:
    """A job kind as the benchmarks drive it."""

    name: str
    """The kind's entry-point name, which `jobcore run --kinds` takes."""
    title: str
    """The jobs as the printed figures name them."""
    kind: JobKind[Any]
    manifest: Callable[[str, str, int], Object]
    """A job to create, of (namespace, name, workers); the same program and size for each kind."""
    worker_template: Callable[[Object], Object]
    """The worker pod template of a job from `manifest`."""
    state: Callable[[Object], str]
    """A job's state read from its status: Running, Succeeded, Failed, or "" for any other."""
    upstream: ClientDefaults | None = None
    """The client limits of the operator the kind stands in for, if the figures compare."""

    @property
    def needs_job_controller(self) -> bool:
        """Whether Kubernetes' Job controller (in kube-controller-manager, with the garbage
        collector) must run: the kind's launcher is a batch/v1 Job, whose pod it creates."""
        return BATCH_JOBS in self.kind.child_resources


def t9k_mpijob(namespace: str, name: str, workers: int) -> Object:
    template = {"spec": {"containers": [{"name": "mpi-worker", "image": IMAGE}]}}
    worker = {"replicas": workers, "extraMPIArgs": ["-N", "1"], "cmd": [COMMAND]}
    spec = {"worker": {**worker, "template": template}}
    return job_manifest(MPIJOB.kind, spec, name=name, namespace=namespace, uid=None)


def kubeflow_mpijob(namespace: str, name: str, workers: int) -> Object:
    """Kubeflow's MPIJob of the same size: the launcher runs mpirun; the workers name no
    command, so the kind gives them sshd, as Kubeflow's examples run."""
    launcher = {"name": "mpi-launcher", "image": IMAGE, "command": ["mpirun", COMMAND]}
    replicas = {
        "Launcher": {"replicas": 1, "template": {"spec": {"containers": [launcher]}}},
        "Worker": {
            "replicas": workers,
            "template": {"spec": {"containers": [{"name": "mpi-worker", "image": IMAGE}]}},
        },
    }
    spec = {"slotsPerWorker": 1, "mpiReplicaSpecs": replicas}
    return job_manifest(KUBEFLOW_MPIJOB.kind, spec, name=name, namespace=namespace, uid=None)


def _phase(job: Object) -> str:
    return str((job.get("status") or {}).get("phase") or "")


def _kubeflow_state(job: Object) -> str:
    """Kubeflow's status has no phase: the first of its conditions Succeeded, Failed and
    Running that holds (Running turns False once the job ends)."""
    conditions = (job.get("status") or {}).get("conditions") or ()
    holding = {c.get("type") for c in conditions if c.get("status") == "True"}
    return next((s for s in ("Succeeded", "Failed", "Running") if s in holding), "")


MPIJOB = BenchKind(
    name="mpijob",
    title="MPIJobs",
    kind=t9k.MPIJobKind(),
    manifest=t9k_mpijob,
    worker_template=lambda job: dict(job["spec"]["worker"]["template"]),
    state=_phase,
)
KUBEFLOW_MPIJOB = BenchKind(
    name="kubeflow-mpijob",
    title="Kubeflow MPIJobs (kubeflow.org/v2beta1)",
    kind=kubeflow.KubeflowMPIJobKind(),
    manifest=kubeflow_mpijob,
    worker_template=lambda job: dict(job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]),
    state=_kubeflow_state,
    upstream=ClientDefaults("Kubeflow MPI Operator", qps=5, burst=10),
)
KINDS = {bench.name: bench for bench in (MPIJOB, KUBEFLOW_MPIJOB)}


def with_template_env(bench: BenchKind, count: int) -> BenchKind:
    """`bench` whose jobs give every worker container `count` env entries of about 33 bytes
    each in JSON: a large spec (2,000 entries make 66 KB), as a job with a big environment has.
    """
    if not count:
        return bench
    env = [{"name": f"E{i:04d}", "value": f"{i:06d}"} for i in range(count)]

    def manifest(namespace: str, name: str, workers: int) -> Object:
        job = bench.manifest(namespace, name, workers)
        for container in bench.worker_template(job)["spec"]["containers"]:
            container["env"] = env
        return job

    return dataclasses.replace(bench, manifest=manifest)


def bench_kind(name: str) -> BenchKind:
    """An argparse type: one of `KINDS` by name."""
    try:
        return KINDS[name]
    except KeyError:
        raise argparse.ArgumentTypeError(f"{name}: one of {', '.join(KINDS)}") from None


def children(
    bench: BenchKind,
    namespace: str,
    jobs: int,
    workers: int,
    *,
    launchers: bool = False,
    prefix: str = "job",
    owners: Sequence[Object] = (),
) -> list[tuple[Resource, Object]]:
    """The very objects the controller creates for these jobs, rendered by the kind itself
    and adopted by the job (its labels and an ownerReference), as the controller does.

    The jobs are `owners` as the API server returned them if given (a garbage collector
    deletes what an absent job owns), else jobs named `{prefix}-{j}` with a made-up uid. With
    `launchers`, also what the kind renders only once every worker is Ready (T9k's launcher
    pod), after everything else, as the controller creates it after the workers.
    """
    resources = {resource.kind: resource for resource in bench.kind.child_resources}
    objects: list[tuple[Resource, Object]] = []
    last: list[tuple[Resource, Object]] = []
    for j in range(jobs):
        raw = owners[j] if owners else bench.manifest(namespace, f"{prefix}-{j}", workers)
        if not owners:
            raw["metadata"]["uid"] = str(uuid.uuid4())
        job, errors = parse_job(bench.kind, raw)
        if job is None:
            raise ValueError(f"the benchmark's {bench.name} is invalid: {errors}")
        rendered = bench.kind.render(job, Observed({}))
        late: list[Object] = []
        if launchers:
            ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
            pods = {
                o["metadata"]["name"]: {**o, "status": ready}
                for o in rendered
                if o["kind"] == "Pod"
            }
            early = {o["metadata"]["name"] for o in rendered}
            late = [
                o
                for o in bench.kind.render(job, Observed({PODS: pods}))
                if o["metadata"]["name"] not in early
            ]
        objects += [(resources[o["kind"]], adopt(job, o)) for o in rendered]
        last += [(resources[o["kind"]], adopt(job, o)) for o in late]
    return objects + last
