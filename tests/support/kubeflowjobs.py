"""Kubeflow MPIJobs (kubeflow.org/v2beta1) for the tests, and their status read as a user reads it.

The names, labels, reasons and messages here are Kubeflow MPI Operator v2's, written from its
API and behaviour rather than taken from the kind under test, so that a test of the kind can
tell it apart from Kubeflow.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

from jobcore import BATCH_JOBS
from jobcore import CONFIGMAPS
from jobcore import EVENTS
from jobcore import PODS
from jobcore import SECRETS
from jobcore import SERVICES
from jobcore import Client
from jobcore import Controller
from jobcore import NotFoundError
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import AgentSource
from jobcore.testing import ControlPlane
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobcore.testing import job_status
from jobcore.testing import live_pods
from jobkinds.kubeflow import KubeflowMPIJobKind

MPIJOBS = Resource("kubeflow.org", "v2beta1", "MPIJob", "mpijobs")
"""The resource as Kubeflow serves it (not read from the kind, which a test checks)."""
KIND = KubeflowMPIJobKind()

OPERATOR_NAME = "training.kubeflow.org/operator-name"
JOB_NAME = "training.kubeflow.org/job-name"
JOB_ROLE = "training.kubeflow.org/job-role"
REPLICA_INDEX = "training.kubeflow.org/replica-index"
LAUNCHER = f"{JOB_ROLE}=launcher"
"""The selector of every launcher pod, whichever Job created it."""
SSH_AUTH = "kubernetes.io/ssh-auth"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
TIMEOUT = 30.0

LAUNCHER_CONTAINER = "mpi-launcher"
WORKER_CONTAINER = "mpi-worker"
IMAGE = "mpioperator/mpi-pi:openmpi"


def mpijob(
    namespace: str,
    name: str,
    *,
    workers: int = 2,
    run_policy: Mapping[str, Any] | None = None,
    **spec: Any,
) -> Object:
    """An MPIJob as Kubeflow's pi example writes it: a launcher running mpirun and `workers`
    workers that run the operator's sshd (no command of their own); cleanPodPolicy Running
    unless `run_policy` says otherwise; `spec` adds or replaces top-level spec fields."""
    launcher = {
        "name": LAUNCHER_CONTAINER,
        "image": IMAGE,
        "command": ["mpirun"],
        "args": ["-n", str(workers), "/home/mpiuser/pi"],
    }
    return {
        "apiVersion": MPIJOBS.api_version,
        "kind": MPIJOBS.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "Running", **(run_policy or {})},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": {"containers": [launcher]}}},
                "Worker": {
                    "replicas": workers,
                    "template": {
                        "spec": {"containers": [{"name": WORKER_CONTAINER, "image": IMAGE}]}
                    },
                },
            },
            **spec,
        },
    }


PI = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: pi
spec:
  slotsPerWorker: 1
  runPolicy:
    cleanPodPolicy: Running
    ttlSecondsAfterFinished: 60
  sshAuthMountPath: /home/mpiuser/.ssh
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - image: mpioperator/mpi-pi:openmpi
            name: mpi-launcher
            securityContext:
              runAsUser: 1000
            command:
            - mpirun
            args:
            - -n
            - "2"
            - /home/mpiuser/pi
            resources:
              limits:
                cpu: 1
                memory: 1Gi
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - image: mpioperator/mpi-pi:openmpi
            name: mpi-worker
            securityContext:
              runAsUser: 1000
            command:
            - /usr/sbin/sshd
            args:
            - -De
            - -f
            - /home/mpiuser/.sshd_config
            resources:
              limits:
                cpu: 1
                memory: 1Gi
"""
"""Kubeflow's pi example (examples/v2beta1/pi/pi.yaml), as users apply it."""


@contextlib.asynccontextmanager
async def kubeflow_controller(
    client: Client, namespace: str, control_plane: object, agent: AgentSource | None = None
) -> AsyncIterator[Controller]:
    """The kind's controller for `namespace` (copying `agent` into jobs launched through it),
    Kubernetes' Job controller running beside it (it runs the launcher Job's pods; k3s and
    real clusters have one of their own)."""
    if isinstance(control_plane, ControlPlane):
        await control_plane.start_controller_manager()
    options = {} if agent is None else {"agent": agent}
    async with job_controller(client, KIND, namespace=namespace, **options) as controller:
        yield controller


def worker_names(name: str, workers: int = 2) -> list[str]:
    return [f"{name}-worker-{i}" for i in range(workers)]


def host(pod: str, name: str, namespace: str) -> str:
    """A pod's name in the job's headless Service, as the hostfile lists it."""
    return f"{pod}.{name}.{namespace}.svc.cluster.local"


# Status ----------------------------------------------------------------------------------------


def condition_of(status: Any, kind: str) -> Any:
    """The condition of type `kind`, or None."""
    return next((c for c in status.get("conditions") or () if c["type"] == kind), None)


def is_true(status: Any, kind: str) -> bool:
    found = condition_of(status, kind)
    return found is not None and found["status"] == "True"


def replica_counts(status: Any) -> dict[str, dict[str, int]]:
    """`replicaStatuses` as counts, zeros left out (Kubeflow omits them: `Worker: {}`)."""
    return {
        replica: {
            field: counts[field] for field in ("active", "succeeded", "failed") if counts.get(field)
        }
        for replica, counts in (status.get("replicaStatuses") or {}).items()
    }


async def _until(
    check: Callable[[], Awaitable[bool]],
    timeout: float,
    interval: float,
    failure: Callable[[], str | Awaitable[str]],
) -> None:
    """`eventually(check)`, failing with the message `failure` writes from what was last seen: a
    bare TimeoutError would not say why the job is stuck."""
    try:
        await eventually(check, timeout=timeout, interval=interval)
    except TimeoutError:
        message = failure()
        raise AssertionError(message if isinstance(message, str) else await message) from None


async def wait_for_condition(
    client: Client,
    namespace: str,
    name: str,
    kind: str,
    status: str = "True",
    *,
    timeout: float = TIMEOUT,
) -> Any:
    """Wait until the MPIJob has a condition `kind` of `status`; return the job's status.
    On timeout, fail with the conditions last seen."""
    seen: list[Any] = [{}]

    async def reached() -> bool:
        seen[0] = await job_status(client, MPIJOBS, namespace, name)
        found = condition_of(seen[0], kind)
        return found is not None and found["status"] == status

    def failure() -> str:
        conditions = [
            (c["type"], c["status"], c.get("reason")) for c in seen[0].get("conditions") or ()
        ]
        return (
            f"{name}: no {kind}={status} within {timeout} s; conditions: {conditions}, "
            f"replicaStatuses: {seen[0].get('replicaStatuses')}"
        )

    await _until(reached, timeout, 0.05, failure)
    return seen[0]


async def wait_for_replicas(
    client: Client,
    namespace: str,
    name: str,
    expected: Mapping[str, Mapping[str, int]],
    *,
    timeout: float = TIMEOUT,
) -> Any:
    """Wait until the counts of each replica type in `expected` are those (zeros left out; a
    type with no status counts nothing); return the status. Types not in `expected` may count
    anything."""
    seen: list[Any] = [{}]

    async def reached() -> bool:
        seen[0] = await job_status(client, MPIJOBS, namespace, name)
        counts = replica_counts(seen[0])
        return {replica: counts.get(replica, {}) for replica in expected} == expected

    await _until(
        reached,
        timeout,
        0.05,
        lambda: (
            f"{name}: replicaStatuses not {dict(expected)} within {timeout} s: "
            f"{seen[0].get('replicaStatuses')}"
        ),
    )
    return seen[0]


# Children --------------------------------------------------------------------------------------


async def exists(client: Client, resource: Resource, namespace: str, name: str) -> bool:
    try:
        await client.get(resource, name, namespace)
    except NotFoundError:
        return False
    return True


async def phases(client: Client, namespace: str) -> dict[str, str]:
    """Every live pod's phase, by name."""
    pods = await live_pods(client, namespace)
    return {name: (pod.get("status") or {}).get("phase", "") for name, pod in pods.items()}


def mounts_of(container: Object) -> set[str]:
    return {m["mountPath"] for m in container.get("volumeMounts") or ()}


async def children_gone(client: Client, namespace: str, name: str) -> bool:
    """Whether the job's Service, ConfigMap, Secret, launcher Job and every pod are gone."""
    for resource, child in (
        (SERVICES, name),
        (CONFIGMAPS, f"{name}-config"),
        (SECRETS, f"{name}-ssh"),
        (BATCH_JOBS, f"{name}-launcher"),
    ):
        if await exists(client, resource, namespace, child):
            return False
    return await live_pods(client, namespace) == {}


async def launcher_pods(client: Client, namespace: str, name: str) -> list[Object]:
    """The job's launcher pods that are not being deleted, oldest first to the second (the
    launcher Job names them `<name>-launcher-<random>`)."""
    items = (await client.list(PODS, namespace, label_selector=f"{JOB_NAME}={name},{LAUNCHER}"))[
        "items"
    ]
    live = [p for p in items if not p["metadata"].get("deletionTimestamp")]
    return sorted(live, key=lambda p: (p["metadata"]["creationTimestamp"], p["metadata"]["name"]))


async def running_launcher(client: Client, namespace: str, name: str) -> Object:
    """Wait until the job's launcher Job runs a pod; return that pod."""
    found: list[Object] = []

    async def running() -> bool:
        found[:] = [
            p
            for p in await launcher_pods(client, namespace, name)
            if (p.get("status") or {}).get("phase") == "Running"
        ]
        return bool(found)

    async def failure() -> str:
        return f"{name}: no launcher pod Running within {TIMEOUT} s; " + await _describe(
            client, namespace, name
        )

    await _until(running, TIMEOUT, 0.05, failure)
    return found[0]


async def started(client: Client, job: Object) -> Object:
    """Create `job`; wait until its launcher pod runs and the job is Running; return that pod."""
    namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
    await client.create(MPIJOBS, job)
    launcher = await running_launcher(client, namespace, name)
    await wait_for_condition(client, namespace, name, "Running")
    return launcher


async def _describe(client: Client, namespace: str, name: str) -> str:
    """The job's conditions, its launcher Job's and its pods' phases: why it is stuck."""
    status = await job_status(client, MPIJOBS, namespace, name)
    conditions = [
        (c["type"], c["status"], c.get("reason"), c.get("message"))
        for c in status.get("conditions") or ()
    ]
    try:
        job = await client.get(BATCH_JOBS, f"{name}-launcher", namespace)
        batch = f"launcher Job status {job.get('status')}"
    except NotFoundError:
        batch = "no launcher Job"
    pods = (await client.list(PODS, namespace))["items"]
    phases = {p["metadata"]["name"]: (p.get("status") or {}).get("phase") for p in pods}
    return f"conditions {conditions}; {batch}; pods {phases}"


async def launcher_job(client: Client, namespace: str, name: str) -> Object:
    """Wait until the launcher Job `<name>-launcher` exists; return it."""
    job: list[Object] = []

    async def created() -> bool:
        try:
            job[:] = [await client.get(BATCH_JOBS, f"{name}-launcher", namespace)]
        except NotFoundError:
            return False
        return True

    await eventually(created, timeout=TIMEOUT, interval=0.05)
    return job[0]


# Events ----------------------------------------------------------------------------------------


async def events_about(client: Client, namespace: str, name: str) -> dict[str, tuple[str, str]]:
    """The Events recorded about `name`: (type, message) by reason, the latest of each."""
    items = (await client.list(EVENTS, namespace))["items"]
    return {
        e["reason"]: (e.get("type", ""), e.get("message", ""))
        for e in items
        if e["involvedObject"]["name"] == name and e["involvedObject"]["kind"] == MPIJOBS.kind
    }


async def wait_for_kubeflow_events(
    client: Client, namespace: str, name: str, *reasons: str, timeout: float = 10
) -> dict[str, tuple[str, str]]:
    """Wait until Events of each of `reasons` are recorded about the MPIJob; return them all.
    Events are written in the background, possibly after the status that announced them."""
    found: dict[str, tuple[str, str]] = {}

    async def recorded() -> bool:
        found.clear()
        found.update(await events_about(client, namespace, name))
        return set(reasons) <= set(found)

    await _until(
        recorded,
        timeout,
        0.1,
        lambda: (
            f"{name}: no Events {sorted(set(reasons) - set(found))} within {timeout} s; "
            f"recorded: {sorted(found)}"
        ),
    )
    return found
