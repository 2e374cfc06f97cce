"""Job lifecycle end to end: run modes, gang scheduling, restarts, deadlines and clean-up.

The real controller against a real API server, pods played by the simulated node; every
assertion is on what a user sees with kubectl: the job's status, its pods, PodGroups, events.
MPIJob stands for every kind, ColossalAIJob where its defaults differ.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from collections.abc import Callable
from typing import Any

import pytest

from jobcore import EVENTS
from jobcore import PODS
from jobcore import Client
from jobcore import Controller
from jobcore import Object
from jobcore import Request
from jobcore import Resource
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import RUN_MODE_LABEL
from jobcore.jobs import RetryBackoff
from jobcore.jobs import SchedulerPlugins
from jobcore.jobs import T9kScheduler
from jobcore.jobs import Volcano
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import condition
from jobcore.testing import create_until_phase
from jobcore.testing import event_reasons
from jobcore.testing import eventually
from jobcore.testing import install_crd
from jobcore.testing import job_controller
from jobcore.testing import job_status
from jobcore.testing import live_pods
from jobcore.testing import resync
from jobcore.testing import schemaless_crd
from jobcore.testing import wait_for_deletion
from jobcore.testing import wait_for_events
from jobcore.testing import wait_for_phase
from jobcore.testing import wait_until_settled
from jobkinds.colossalaijob import ColossalAIJobKind
from jobkinds.mpijob import MPIJobKind
from tests.support.fixtures import controller_fixture
from tests.support.kindjobs import later
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration

KIND = MPIJobKind()
MPIJOBS = KIND.resource
COLOSSAL = ColossalAIJobKind()
LAUNCHER = f"{REPLICA_TYPE_LABEL}=launcher"
NORMAL_LAUNCHER = f"{LAUNCHER},!{RUN_MODE_LABEL}"
"""The launcher of a job that is not in debug mode."""
QUICK = RetryBackoff(initial=1)
"""Restarts 1 s apart, doubling."""
PRIORITY_CLASSES = Resource(
    "scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", namespaced=False
)
Status = dict[str, Any]


def with_init_container(job: Object) -> Object:
    job["spec"]["worker"]["template"]["spec"]["initContainers"] = [
        {"name": "fetch", "image": "busybox", "command": ["true"]}
    ]
    return job


# Without a gang scheduler; a restart waits 1 s.
controller = controller_fixture(KIND, retry_backoff=QUICK)


@pytest.fixture
async def slow_node(client: Client, namespace: str) -> AsyncIterator[SimulatedNode]:
    """A node whose pods become Ready half a second after they run: long enough to see the
    phases a job passes through on its way to Running."""
    node = SimulatedNode(
        client, name=f"slow-{namespace}"[:63], namespace=namespace, ready_after=0.5
    )
    async with background(node.run()):
        await node.pods.wait_for_sync()
        yield node


# What a user sees ----------------------------------------------------------------------


async def status_of(client: Client, namespace: str, name: str) -> Status:
    status: Status = await job_status(client, MPIJOBS, namespace, name)
    return status


async def phase_reached(
    client: Client, namespace: str, name: str, phase: str, *, timeout: float = 20
) -> Status:
    status: Status = await wait_for_phase(client, MPIJOBS, namespace, name, phase, timeout=timeout)
    return status


async def status_where(
    client: Client,
    namespace: str,
    name: str,
    check: Callable[[Status], bool],
    *,
    timeout: float = 20,
) -> Status:
    """Wait until the job's status passes `check`; return that status."""
    seen: list[Status] = []

    async def passes() -> bool:
        status = await status_of(client, namespace, name)
        seen.append(status)
        return check(status)

    await eventually(passes, timeout=timeout)
    return seen[-1]


def has(status: Status, kind: str, value: str = "True", reason: str | None = None) -> bool:
    """Whether the status has condition `kind` with `value` (and `reason`, when given)."""
    found = next((c for c in status.get("conditions") or () if c["type"] == kind), None)
    return (
        found is not None
        and found["status"] == value
        and (reason is None or found.get("reason") == reason)
    )


async def job_pods(client: Client, namespace: str, name: str) -> dict[str, Object]:
    """The job's pods by name, those being deleted included."""
    items = await client.list(PODS, namespace, label_selector=f"{JOB_NAME_LABEL}={name}")
    return {pod["metadata"]["name"]: pod for pod in items["items"]}


async def gang_of(
    client: Client, namespace: str, name: str, group: Resource, *, scheduler: str, members: int
) -> tuple[Object, list[Object]]:
    """Job `name`'s PodGroup (a `group`), checked to be controlled by the job, and its pods,
    checked to be `members`, all for the scheduler named `scheduler`."""
    pod_group = await client.get(group, name, namespace)
    job = await client.get(MPIJOBS, name, namespace)
    (owner,) = pod_group["metadata"]["ownerReferences"]
    assert (owner["name"], owner["uid"], owner["controller"]) == (
        name,
        job["metadata"]["uid"],
        True,
    )
    pods = await job_pods(client, namespace, name)
    assert len(pods) == members
    for pod_name, pod in pods.items():
        assert pod["spec"]["schedulerName"] == scheduler, pod_name
    return pod_group, list(pods.values())


async def pods_where(
    client: Client,
    namespace: str,
    name: str,
    check: Callable[[dict[str, Object]], bool],
    *,
    timeout: float = 20,
) -> dict[str, Object]:
    """Wait until the job's pods pass `check`; return them."""
    seen: list[dict[str, Object]] = []

    async def passes() -> bool:
        seen.append(await job_pods(client, namespace, name))
        return check(seen[-1])

    await eventually(passes, timeout=timeout)
    return seen[-1]


async def pod_running(client: Client, namespace: str, pod: str) -> None:
    async def running() -> bool:
        current = (await live_pods(client, namespace)).get(pod)
        return bool(current and (current.get("status") or {}).get("phase") == "Running")

    await eventually(running)


async def warning(client: Client, namespace: str, name: str, reason: str) -> str:
    """The message of the Warning event `reason` about `name`, once it is recorded (events
    are written in the background)."""
    found: list[str] = []

    async def recorded() -> bool:
        items = (await client.list(EVENTS, namespace))["items"]
        found[:] = [
            event.get("message") or ""
            for event in items
            if event["involvedObject"]["name"] == name
            and (event["type"], event["reason"]) == ("Warning", reason)
        ]
        return bool(found)

    await eventually(recorded, timeout=5)
    return found[-1]


def uids(pods: dict[str, Object]) -> dict[str, str]:
    return {name: pod["metadata"]["uid"] for name, pod in pods.items()}


def main_container(pod: Object, name: str) -> dict[str, Any]:
    container: dict[str, Any] = next(c for c in pod["spec"]["containers"] if c["name"] == name)
    return container


def replica(status: Status, pod: str) -> dict[str, Any]:
    """The pod's entry in status.tasks[].status[]."""
    entry: dict[str, Any] = next(
        r for task in status["tasks"] for r in task["status"] if r["name"] == pod
    )
    return entry


def restart_counts(status: Status) -> dict[str, int]:
    return {task["type"]: task.get("restartCount", 0) for task in status["tasks"]}


# Pause -------------------------------------------------------------------------------------

RESUME = [{"type": "worker", "skipInitContainer": True, "command": ["/opt/resume.sh", "--latest"]}]


async def test_pause_deletes_the_pods_and_resume_recreates_them_with_the_resume_command(
    client: Client, namespace: str, controller: Controller, slow_node: SimulatedNode
) -> None:
    job = with_init_container(
        mpijob(namespace, "nap", runMode={"pause": {"enabled": False, "resumeSpecs": RESUME}})
    )
    await client.create(MPIJOBS, job)
    status = await phase_reached(client, namespace, "nap", "Running")
    assert status["resumeSpecs"] == RESUME
    before = uids(await job_pods(client, namespace, "nap"))
    assert set(before) == {"nap-launcher", "nap-worker-0", "nap-worker-1"}

    pause = {"spec": {"runMode": {"pause": {"enabled": True}}}}
    await client.patch(MPIJOBS, "nap", pause, namespace)
    status = await phase_reached(client, namespace, "nap", "Paused")
    assert await job_pods(client, namespace, "nap") == {}, "Paused once every pod is gone"
    assert has(status, "Paused", "True", reason="Paused")
    assert has(status, "Running", "False")
    assert {r["phase"] for task in status["tasks"] for r in task["status"]} == {"Deleted"}

    resume = {"spec": {"runMode": {"pause": {"enabled": False}}}}
    await client.patch(MPIJOBS, "nap", resume, namespace)
    status = await phase_reached(client, namespace, "nap", "Resuming")
    assert has(status, "Paused", "False", reason="Resumed")
    status = await phase_reached(client, namespace, "nap", "Running")
    assert has(status, "Paused", "False", reason="Resumed")

    after = await job_pods(client, namespace, "nap")
    assert set(after) == set(before)
    for name, uid in uids(after).items():
        assert uid != before[name], f"{name} was not recreated"
    for name in ("nap-worker-0", "nap-worker-1"):
        worker = after[name]
        assert main_container(worker, "mpi-worker")["command"] == ["/opt/resume.sh", "--latest"]
        assert "args" not in main_container(worker, "mpi-worker")
        assert "initContainers" not in worker["spec"], "skipInitContainer"
    launcher = main_container(after["nap-launcher"], "mpi-launcher")
    assert launcher["command"][0] == "/bin/bash", "no resume spec for the launcher: mpirun"
    assert [c["name"] for c in after["nap-launcher"]["spec"]["initContainers"]] == ["fetch"]
    await wait_for_events(client, namespace, "nap", "Paused", "Resuming", "Running")


async def test_resume_specs_cannot_change_once_the_job_exists(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    job = mpijob(namespace, "fixed", runMode={"pause": {"resumeSpecs": RESUME}})
    await client.create(MPIJOBS, job)
    await phase_reached(client, namespace, "fixed", "Running")

    changed = [{"type": "worker", "command": ["/opt/other.sh"]}]
    patch = {"spec": {"runMode": {"pause": {"resumeSpecs": changed}}}}
    await client.patch(MPIJOBS, "fixed", patch, namespace)
    status = await status_where(
        client, namespace, "fixed", lambda s: has(s, "SpecRejected", "True")
    )
    rejected = condition(status, "SpecRejected")
    assert rejected["reason"] == "ResumeSpecsImmutable"
    assert "resumeSpecs cannot change" in rejected["message"]
    assert "/opt/resume.sh" in rejected["message"], "names the value kept"
    assert status["resumeSpecs"] == RESUME
    assert status["phase"] == "Running", "the job runs on"
    assert await warning(client, namespace, "fixed", "ResumeSpecsImmutable") == rejected["message"]

    # The value kept is the one a resume uses.
    for enabled in (True, False):
        pause = {"spec": {"runMode": {"pause": {"enabled": enabled}}}}
        await client.patch(MPIJOBS, "fixed", pause, namespace)
        await phase_reached(client, namespace, "fixed", "Paused" if enabled else "Running")
    worker = (await live_pods(client, namespace))["fixed-worker-0"]
    assert main_container(worker, "mpi-worker")["command"] == ["/opt/resume.sh", "--latest"]

    # Putting the original back clears the rejection.
    original = {"spec": {"runMode": {"pause": {"resumeSpecs": RESUME}}}}
    await client.patch(MPIJOBS, "fixed", original, namespace)
    status = await status_where(
        client, namespace, "fixed", lambda s: has(s, "SpecRejected", "False", reason="Accepted")
    )
    assert status["resumeSpecs"] == RESUME


async def test_resume_specs_are_recorded_once_an_invalid_job_is_fixed(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    job = mpijob(namespace, "mended", runMode={"pause": {"resumeSpecs": RESUME}})
    job["spec"]["worker"]["template"]["spec"]["containers"][0]["name"] = "main"
    await client.create(MPIJOBS, job)
    await phase_reached(client, namespace, "mended", "Failed")
    containers = [{"name": "mpi-worker", "image": "mpi:latest"}]
    patch = {"spec": {"worker": {"template": {"spec": {"containers": containers}}}}}
    await client.patch(MPIJOBS, "mended", patch, namespace)
    status = await phase_reached(client, namespace, "mended", "Running")
    assert status["resumeSpecs"] == RESUME
    assert not any(c["type"] == "SpecRejected" for c in status["conditions"])


@pytest.mark.usefixtures("launchers_succeed")
async def test_pausing_a_finished_job_does_nothing(
    client: Client, namespace: str, controller: Controller
) -> None:
    await client.create(MPIJOBS, mpijob(namespace, "done"))
    finished = await phase_reached(client, namespace, "done", "Succeeded")
    before = uids(await job_pods(client, namespace, "done"))

    pause = {"spec": {"runMode": {"pause": {"enabled": True}}}}
    await client.patch(MPIJOBS, "done", pause, namespace)
    await wait_until_settled(client, controller, MPIJOBS, Request(namespace, "done"))
    status = await status_of(client, namespace, "done")
    assert (status["phase"], status["conditions"]) == ("Succeeded", finished["conditions"])
    assert "Paused" not in {c["type"] for c in status["conditions"]}
    assert uids(await live_pods(client, namespace)) == before, "no pod deleted"


# Debug -------------------------------------------------------------------------------------


async def test_debug_mode_runs_debug_commands_until_it_is_turned_off(
    client: Client, namespace: str, controller: Controller, unready_node: SimulatedNode
) -> None:
    unready_node.when(NORMAL_LAUNCHER, exit_code=0, after=0.2)
    await client.create(MPIJOBS, mpijob(namespace, "dbg", runMode={"debug": {"enabled": True}}))

    status = await phase_reached(client, namespace, "dbg", "Running")
    running = condition(status, "Running")
    assert running["reason"] == "Debugging"
    assert "debug" in running["message"].lower()
    pods = await job_pods(client, namespace, "dbg")
    assert set(pods) == {"dbg-launcher", "dbg-worker-0", "dbg-worker-1"}, (
        "the launcher does not wait for Ready workers"
    )
    assert main_container(pods["dbg-launcher"], "mpi-launcher")["command"] == ["sleep", "inf"]
    for name in ("dbg-worker-0", "dbg-worker-1"):
        command = main_container(pods[name], "mpi-worker")["command"]
        assert command[0] == "/usr/sbin/sshd" and "-D" in command, "workers keep sshd to ssh in"
    assert {p["metadata"]["labels"].get(RUN_MODE_LABEL) for p in pods.values()} == {"debug"}
    await resync(controller, Request(namespace, "dbg"))
    assert (await status_of(client, namespace, "dbg"))["phase"] == "Running", "stays Running"

    debug_off = {"spec": {"runMode": {"debug": {"enabled": False}}}}
    await client.patch(MPIJOBS, "dbg", debug_off, namespace)

    def replaced(current: dict[str, Object]) -> bool:
        workers = {n: p for n, p in current.items() if "-worker-" in n}
        return (
            set(workers) == {"dbg-worker-0", "dbg-worker-1"}
            and all(RUN_MODE_LABEL not in p["metadata"]["labels"] for p in workers.values())
            and "dbg-launcher" not in current
        )

    normal = await pods_where(client, namespace, "dbg", replaced)
    for name, pod in normal.items():
        assert pod["metadata"]["uid"] != pods[name]["metadata"]["uid"]
    for name in normal:
        await pod_running(client, namespace, name)
        await unready_node.set_ready(namespace, name, True)
    status = await phase_reached(client, namespace, "dbg", "Succeeded")
    launcher = (await live_pods(client, namespace))["dbg-launcher"]
    assert main_container(launcher, "mpi-launcher")["command"][0] == "/bin/bash", "mpirun"
    assert RUN_MODE_LABEL not in launcher["metadata"]["labels"]


async def test_debug_commands_per_replica_type_and_skipped_init_containers(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    debug = {
        "enabled": True,
        "replicaSpecs": [
            {"type": "worker", "skipInitContainer": True, "command": ["sleep", "3600"]},
            {"type": "launcher", "command": ["/bin/sh", "-c", "sleep 7200"]},
        ],
    }
    job = with_init_container(mpijob(namespace, "probe", runMode={"debug": debug}))
    await client.create(MPIJOBS, job)
    status = await phase_reached(client, namespace, "probe", "Running")
    assert condition(status, "Running")["reason"] == "Debugging"
    pods = await live_pods(client, namespace)
    for name in ("probe-worker-0", "probe-worker-1"):
        worker = main_container(pods[name], "mpi-worker")
        assert worker["command"] == ["sleep", "3600"]
        assert "readinessProbe" not in worker, "sshd's probe would never pass"
        assert "initContainers" not in pods[name]["spec"]
    launcher = pods["probe-launcher"]
    assert main_container(launcher, "mpi-launcher")["command"] == ["/bin/sh", "-c", "sleep 7200"]
    assert [c["name"] for c in launcher["spec"]["initContainers"]] == ["fetch"]


async def test_colossalai_debug_mode_sleeps_in_every_pod(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    jobs = COLOSSAL.resource
    job = {
        "apiVersion": jobs.api_version,
        "kind": jobs.kind,
        "metadata": {"name": "cai", "namespace": namespace},
        "spec": {
            "launcher": {"image": "colossalai:latest"},
            "worker": {
                "replicas": 2,
                "command": ["train.py"],
                "template": {"spec": {"containers": [{"name": "worker", "image": "c:latest"}]}},
            },
            "runMode": {"debug": {"enabled": True}},
        },
    }
    async with job_controller(client, COLOSSAL, namespace=namespace):
        status = await create_until_phase(client, jobs, job, "Running")
        assert condition(status, "Running")["reason"] == "Debugging"
        pods = await live_pods(client, namespace)
    assert main_container(pods["cai-launcher"], "launcher")["command"] == ["sleep", "inf"]
    for name in ("cai-worker-0", "cai-worker-1"):
        assert main_container(pods[name], "worker")["command"] == ["sleep", "inf"]


# Gang scheduling -----------------------------------------------------------------------


class UninstalledGang(Volcano):
    """Volcano's fields, but PodGroups of a group that no test installs."""

    resource = Resource("gang.uninstalled.jobcore.dev", "v1beta1", "PodGroup", "podgroups")


async def test_t9k_scheduler_gets_a_pod_group_owned_by_the_job(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    await install_crd(client, schemaless_crd(T9kScheduler.resource))
    scheduler = {"t9kScheduler": {"queue": "team-a", "priority": 10}}
    await client.create(MPIJOBS, mpijob(namespace, "gang", scheduler=scheduler))
    await phase_reached(client, namespace, "gang", "Running")

    group, pods = await gang_of(
        client, namespace, "gang", T9kScheduler.resource, scheduler="t9k-scheduler", members=3
    )
    assert group["apiVersion"] == "scheduler.tensorstack.dev/v1beta1"
    assert group["spec"] == {"minMember": 3, "queue": "team-a", "priority": 10}
    for pod in pods:
        labels = pod["metadata"]["labels"]
        assert labels["scheduler.tensorstack.dev/group-name"] == "gang"
        assert labels["scheduler.tensorstack.dev/queue"] == "team-a"
        assert labels["scheduler.tensorstack.dev/role"] == labels[REPLICA_TYPE_LABEL]

    patch = {"spec": {"scheduler": {"t9kScheduler": {"priority": 80}}}}
    await client.patch(MPIJOBS, "gang", patch, namespace)

    async def updated() -> bool:
        current = await client.get(T9kScheduler.resource, "gang", namespace)
        return bool(current["spec"]["priority"] == 80)

    await eventually(updated)
    current = await client.get(T9kScheduler.resource, "gang", namespace)
    assert current["spec"] == {"minMember": 3, "queue": "team-a", "priority": 80}


async def test_volcano_pod_groups_for_every_job(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    await install_crd(client, schemaless_crd(Volcano.resource))
    priority = f"prio-{namespace}"[:63]
    await client.create(
        PRIORITY_CLASSES,
        {
            "apiVersion": PRIORITY_CLASSES.api_version,
            "kind": PRIORITY_CLASSES.kind,
            "metadata": {"name": priority},
            "value": 1000,
        },
    )
    job = mpijob(namespace, "vc", replicas=3)
    job["spec"]["worker"]["template"]["spec"]["priorityClassName"] = priority
    queued = mpijob(namespace, "vq", replicas=1)
    queued["metadata"]["annotations"] = {Volcano.QUEUE_ANNOTATION: "research"}
    try:
        async with job_controller(
            client, KIND, namespace=namespace, gang_scheduler=Volcano(queue="batch")
        ):
            await client.create(MPIJOBS, job)
            await client.create(MPIJOBS, queued)
            await asyncio.gather(
                phase_reached(client, namespace, "vc", "Running"),
                phase_reached(client, namespace, "vq", "Running"),
            )
    finally:
        await client.delete(PRIORITY_CLASSES, priority)

    group, pods = await gang_of(
        client, namespace, "vc", Volcano.resource, scheduler="volcano", members=4
    )
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert group["spec"] == {"minMember": 4, "queue": "batch", "priorityClassName": priority}
    other = await client.get(Volcano.resource, "vq", namespace)
    assert other["spec"] == {"minMember": 2, "queue": "research"}, "the job's annotation wins"
    for pod in pods:
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "vc"


async def test_scheduler_plugins_pod_groups_for_every_job(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    await install_crd(client, schemaless_crd(SchedulerPlugins.resource))
    gang = SchedulerPlugins(schedule_timeout_seconds=60)
    async with job_controller(client, KIND, namespace=namespace, gang_scheduler=gang):
        await client.create(MPIJOBS, mpijob(namespace, "sp"))
        await phase_reached(client, namespace, "sp", "Running")

    group, pods = await gang_of(
        client,
        namespace,
        "sp",
        SchedulerPlugins.resource,
        scheduler="scheduler-plugins-scheduler",
        members=3,
    )
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert group["spec"] == {"minMember": 3, "scheduleTimeoutSeconds": 60}
    for pod in pods:
        assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "sp"


async def test_a_missing_pod_group_crd_holds_the_job_with_a_clear_condition(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    await install_crd(client, schemaless_crd(T9kScheduler.resource))
    gang = UninstalledGang()
    async with job_controller(client, KIND, namespace=namespace, gang_scheduler=gang) as controller:
        await client.create(MPIJOBS, mpijob(namespace, "stranded"))
        t9k = {"t9kScheduler": {"queue": "default"}}
        await client.create(MPIJOBS, mpijob(namespace, "served", scheduler=t9k))
        stranded, _ = await asyncio.gather(
            status_where(client, namespace, "stranded", lambda s: has(s, "Initialized", "False")),
            phase_reached(client, namespace, "served", "Running"),
        )
        await resync(controller, Request(namespace, "stranded"))
        assert await job_pods(client, namespace, "stranded") == {}
        assert await status_of(client, namespace, "stranded") == stranded, "no crash loop"

    initialized = condition(stranded, "Initialized")
    assert initialized["reason"] == "PodGroupUnavailable"
    message = initialized["message"]
    assert "PodGroup gang.uninstalled.jobcore.dev/v1beta1 is not installed" in message
    assert "spec.scheduler" in message
    assert stranded["phase"] == "Pending"
    assert await warning(client, namespace, "stranded", "PodGroupUnavailable") == message


# Failures and restarts ---------------------------------------------------------------


async def test_an_oom_killed_worker_fails_a_job_without_retries(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    await client.create(MPIJOBS, mpijob(namespace, "oom"))
    await phase_reached(client, namespace, "oom", "Running")
    before = uids(await job_pods(client, namespace, "oom"))
    await simulated_node.fail(namespace, "oom-worker-1", exit_code=137, reason="OOMKilled")
    status = await phase_reached(client, namespace, "oom", "Failed")

    failure = condition(status, "ReplicaFailure")
    assert failure["status"] == "True" and failure["reason"] == "ErrorInPod"
    for part in ("Pod[oom-worker-1]", "137", "container mpi-worker", "OOMKilled"):
        assert part in failure["message"], part
    assert condition(status, "Failed")["reason"] == "Failed"
    assert replica(status, "oom-worker-1")["containers"] == [
        {"name": "mpi-worker", "state": "terminated", "exitCode": 137, "reason": "OOMKilled"}
    ]
    assert replica(status, "oom-worker-0")["containers"][0]["state"] == "running"
    assert "restarts" not in status
    assert restart_counts(status) == {"launcher": 0, "worker": 0}
    assert "OOMKilled" in await warning(client, namespace, "oom", "Failed")
    assert uids(await job_pods(client, namespace, "oom")) == before, "nothing recreated"


async def test_an_oom_killed_worker_is_retried_as_a_gang_under_backoff_limit(
    client: Client, namespace: str, controller: Controller, slow_node: SimulatedNode
) -> None:
    restarted = asyncio.Event()
    slow_node.when(
        lambda pod: (
            restarted.is_set() and pod["metadata"]["labels"][REPLICA_TYPE_LABEL] == "launcher"
        ),
        exit_code=0,
        after=0.2,
    )
    await client.create(MPIJOBS, mpijob(namespace, "retry", runPolicy={"backoffLimit": 1}))
    await phase_reached(client, namespace, "retry", "Running")
    before = uids(await job_pods(client, namespace, "retry"))
    await slow_node.fail(namespace, "retry-worker-1", exit_code=137, reason="OOMKilled")

    status = await status_where(
        client, namespace, "retry", lambda s: has(s, "Running", "True", reason="Restarting")
    )
    restarted.set()
    assert status["phase"] == "Running"
    assert status["restarts"] == 1
    assert restart_counts(status) == {"launcher": 1, "worker": 1}
    # The failed pod goes with the restart: the reason keeps what happened to it, and when
    # the pods come back.
    back = later(status["lastRetryTime"], 1)
    assert status["retryDelaySeconds"] == 1
    for message in (
        condition(status, "Running")["message"],
        await warning(client, namespace, "retry", "Restarting"),
    ):
        assert message == (
            f"Restart 1 of 1 in 1 s, at {back}: recreating every pod after a failure: "
            "Pod[retry-worker-1] exited with error code 137 (container mpi-worker, OOMKilled)"
        )

    def recreated(pods: dict[str, Object]) -> bool:
        return set(pods) == set(before) and all(
            pod["metadata"]["uid"] != before[name] and not pod["metadata"].get("deletionTimestamp")
            for name, pod in pods.items()
        )

    await pods_where(client, namespace, "retry", recreated)
    status = await phase_reached(client, namespace, "retry", "Succeeded")
    assert status["restarts"] == 1
    assert restart_counts(status) == {"launcher": 1, "worker": 1}
    assert has(status, "Completed", "True", reason="Succeeded")
    assert uids(await job_pods(client, namespace, "retry")).keys() == before.keys()


async def test_a_job_fails_once_its_restarts_are_used_up(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    await client.create(MPIJOBS, mpijob(namespace, "flaky", runPolicy={"backoffLimit": 1}))
    await phase_reached(client, namespace, "flaky", "Running")
    first = (await job_pods(client, namespace, "flaky"))["flaky-worker-0"]["metadata"]["uid"]
    await simulated_node.fail(namespace, "flaky-worker-0", exit_code=137, reason="OOMKilled")

    def back(pods: dict[str, Object]) -> bool:
        worker = pods.get("flaky-worker-0")
        return bool(
            worker
            and worker["metadata"]["uid"] != first
            and (worker.get("status") or {}).get("phase") == "Running"
        )

    await pods_where(client, namespace, "flaky", back)
    await simulated_node.fail(namespace, "flaky-worker-0", exit_code=137, reason="OOMKilled")
    status = await phase_reached(client, namespace, "flaky", "Failed")
    failed = condition(status, "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
    assert "failed 2 times" in failed["message"] and "backoffLimit is 1" in failed["message"]
    assert status["restarts"] == 1
    assert "Pod[flaky-worker-0]" in condition(status, "ReplicaFailure")["message"]
    assert "backoffLimit is 1" in await warning(client, namespace, "flaky", "BackoffLimitExceeded")


async def test_exit_code_policy_retries_signals_but_not_program_errors(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    policy = {"backoffLimit": 2, "restartPolicy": "ExitCode"}
    for name in ("exit1", "exit137"):
        await client.create(MPIJOBS, mpijob(namespace, name, runPolicy=policy))
    await asyncio.gather(
        pod_running(client, namespace, "exit1-launcher"),
        pod_running(client, namespace, "exit137-launcher"),
    )
    launchers = await live_pods(client, namespace)
    await simulated_node.fail(namespace, "exit1-launcher", exit_code=1)
    await simulated_node.fail(namespace, "exit137-launcher", exit_code=137)

    permanent, retried = await asyncio.gather(
        phase_reached(client, namespace, "exit1", "Failed"),
        status_where(client, namespace, "exit137", lambda s: s.get("restarts") == 1),
    )
    assert condition(permanent, "Failed")["reason"] == "Failed"
    assert "exited with error code 1" in condition(permanent, "ReplicaFailure")["message"]
    assert "restarts" not in permanent
    assert "Restarting" not in await event_reasons(client, namespace, "exit1")
    assert retried["phase"] == "Running"
    assert "Restart 1 of 2 in 1 s" in await warning(client, namespace, "exit137", "Restarting")

    old = launchers["exit137-launcher"]["metadata"]["uid"]

    async def launcher_recreated() -> bool:
        launcher = (await live_pods(client, namespace)).get("exit137-launcher")
        return launcher is not None and launcher["metadata"]["uid"] != old

    await eventually(launcher_recreated)
    still = (await live_pods(client, namespace))["exit1-launcher"]
    assert still["metadata"]["uid"] == launchers["exit1-launcher"]["metadata"]["uid"]


# Deadlines, TTL, pending ------------------------------------------------------------


async def test_active_deadline_fails_the_job_and_stops_its_pods(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    job = mpijob(namespace, "late", runPolicy={"activeDeadlineSeconds": 3})
    await client.create(MPIJOBS, job)
    await phase_reached(client, namespace, "late", "Running")
    assert len(await job_pods(client, namespace, "late")) == 3
    status = await phase_reached(client, namespace, "late", "Failed", timeout=10)
    failed = condition(status, "Failed")
    assert failed["reason"] == "DeadlineExceeded"
    assert "activeDeadlineSeconds (3 s)" in failed["message"]
    await pods_where(client, namespace, "late", lambda pods: pods == {}, timeout=10)
    assert "activeDeadlineSeconds" in await warning(client, namespace, "late", "DeadlineExceeded")


@pytest.mark.usefixtures("launchers_succeed")
async def test_ttl_deletes_the_job_after_it_ends(
    client: Client, namespace: str, controller: Controller
) -> None:
    job = mpijob(namespace, "brief", runPolicy={"ttlSecondsAfterFinished": 1})
    await client.create(MPIJOBS, job)
    await phase_reached(client, namespace, "brief", "Succeeded")

    await wait_for_deletion(client, MPIJOBS, namespace, "brief", timeout=10)
    await wait_for_events(client, namespace, "brief", "TTLExpired")


async def test_pods_that_are_never_scheduled_fail_the_job_after_the_pending_timeout(
    client: Client, namespace: str, controller: Controller
) -> None:
    # No node serves this namespace: the pods stay Pending, unbound.
    job = mpijob(namespace, "unplaced", runPolicy={"pendingTimeoutSeconds": 2})
    await client.create(MPIJOBS, job)
    status = await phase_reached(client, namespace, "unplaced", "Failed", timeout=15)
    failed = condition(status, "Failed")
    assert failed["reason"] == "PendingTimeout"
    assert "pendingTimeoutSeconds (2 s)" in failed["message"]
    assert "Pod[unplaced-worker-" in failed["message"]
    assert "Pod[unplaced-worker-" in await warning(client, namespace, "unplaced", "PendingTimeout")


async def test_an_image_pull_error_is_reported_then_times_out(
    client: Client, namespace: str, controller: Controller, unready_node: SimulatedNode
) -> None:
    job = mpijob(namespace, "pull", runPolicy={"pendingTimeoutSeconds": 3})
    await client.create(MPIJOBS, job)
    await pod_running(client, namespace, "pull-worker-0")
    await unready_node.set_waiting(
        namespace,
        "pull-worker-0",
        reason="ImagePullBackOff",
        message='Back-off pulling image "mpi:latest"',
    )
    status = await status_where(
        client, namespace, "pull", lambda s: has(s, "ReplicaFailure", "True"), timeout=2
    )
    assert status["phase"] == "Pending"
    message = condition(status, "ReplicaFailure")["message"]
    assert message == (
        "Pod[pull-worker-0] container mpi-worker is waiting: ImagePullBackOff: Back-off "
        'pulling image "mpi:latest"'
    )
    assert replica(status, "pull-worker-0")["containers"] == [
        {"name": "mpi-worker", "state": "waiting", "reason": "ImagePullBackOff"}
    ]

    status = await phase_reached(client, namespace, "pull", "Failed", timeout=10)
    assert condition(status, "Failed")["reason"] == "PendingTimeout"
    assert "Pod[pull-worker-0] was Pending" in condition(status, "Failed")["message"]
    assert "ImagePullBackOff" in condition(status, "ReplicaFailure")["message"]


# Clean-up ------------------------------------------------------------------------------


async def test_clean_up_policies_apply_when_an_eviction_fails_the_job(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    policies = {
        "all": {"cleanUpPolicy": "All"},
        "unfinished": {"cleanUpPolicy": "Unfinished"},
        "workers": {"cleanUpWorkers": True},
    }
    for name, policy in policies.items():
        await client.create(MPIJOBS, mpijob(namespace, name, runPolicy=policy))
    await asyncio.gather(*(phase_reached(client, namespace, n, "Running") for n in policies))
    for name in policies:
        await simulated_node.evict(namespace, f"{name}-worker-1")
    statuses = await asyncio.gather(
        *(phase_reached(client, namespace, n, "Failed") for n in policies)
    )
    for name, status in zip(policies, statuses, strict=True):
        message = condition(status, "ReplicaFailure")["message"]
        assert f"Pod[{name}-worker-1]" in message and "Evicted" in message, name

    left = await asyncio.gather(
        pods_where(client, namespace, "all", lambda pods: pods == {}),
        pods_where(client, namespace, "unfinished", lambda pods: len(pods) == 1),
        pods_where(client, namespace, "workers", lambda pods: len(pods) == 1),
    )
    assert set(left[1]) == {"unfinished-worker-1"}, "the evicted pod had finished"
    assert set(left[2]) == {"workers-launcher"}, "the launcher is kept for its log"
