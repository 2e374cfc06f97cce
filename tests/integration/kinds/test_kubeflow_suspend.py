"""Kubeflow MPIJob suspension as Kueue drives it, and the run policy's clocks.

Kueue creates the job suspended, admits it by patching its templates (a flavor's nodeSelector
and toleration) and unsuspending it, evicts it by suspending it again and restoring the
templates, and readmits it elsewhere. activeDeadlineSeconds does not count while the job is
suspended; ttlSecondsAfterFinished deletes the job once it has ended.

jobcore's kind deletes the launcher Job on suspension (our API server, v1.20, cannot suspend
a Job) and recreates it from the template on resume; the rest is Kubeflow's behaviour.
"""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from jobcore import BATCH_JOBS
from jobcore import CONFIGMAPS
from jobcore import SECRETS
from jobcore import SERVICES
from jobcore import Client
from jobcore import Controller
from jobcore import Object
from jobcore import Request
from jobcore.testing import SimulatedNode
from jobcore.testing import eventually
from jobcore.testing import job_status
from jobcore.testing import live_pods
from jobcore.testing import resync
from jobcore.testing import wait_for_deletion
from tests.support.kubeflowjobs import JOB_ROLE
from tests.support.kubeflowjobs import LAUNCHER
from tests.support.kubeflowjobs import MPIJOBS
from tests.support.kubeflowjobs import children_gone
from tests.support.kubeflowjobs import condition_of
from tests.support.kubeflowjobs import exists
from tests.support.kubeflowjobs import is_true
from tests.support.kubeflowjobs import launcher_job
from tests.support.kubeflowjobs import mpijob
from tests.support.kubeflowjobs import phases
from tests.support.kubeflowjobs import replica_counts
from tests.support.kubeflowjobs import running_launcher
from tests.support.kubeflowjobs import wait_for_condition
from tests.support.kubeflowjobs import wait_for_kubeflow_events
from tests.support.kubeflowjobs import wait_for_replicas
from tests.support.kubeflowjobs import worker_names

pytestmark = pytest.mark.integration

FLAVOR = "cloud.example.com/flavor"
"""The node label of Kueue's ResourceFlavors here; each flavor's taint has the same key."""
PODSET = "kueue.x-k8s.io/podset"


def admission(flavor: str, *, suspend: bool | None = None) -> Object:
    """Kueue's patch admitting the job to `flavor`: each template gets the podset label, the
    flavor's nodeSelector and a toleration of its taint; `suspend` as given, if given."""

    def template(podset: str) -> Object:
        toleration = {"key": FLAVOR, "operator": "Equal", "value": flavor, "effect": "NoSchedule"}
        return {
            "template": {
                "metadata": {"labels": {PODSET: podset}},
                "spec": {"nodeSelector": {FLAVOR: flavor}, "tolerations": [toleration]},
            }
        }

    spec: Object = {
        "mpiReplicaSpecs": {"Launcher": template("launcher"), "Worker": template("worker")}
    }
    if suspend is not None:
        spec["runPolicy"] = {"suspend": suspend}
    return {"spec": spec}


EVICTION = {
    "spec": {
        "runPolicy": {"suspend": True},
        "mpiReplicaSpecs": {
            replica: {
                "template": {
                    "metadata": {"labels": None},
                    "spec": {"nodeSelector": None, "tolerations": None},
                }
            }
            for replica in ("Launcher", "Worker")
        },
    }
}
"""Kueue's patch evicting the job: suspended, its templates restored to the originals."""


def placed_on(pod_spec: Object, flavor: str) -> bool:
    """Whether a pod (template) spec asks for `flavor`'s nodes and tolerates their taint."""
    tolerated = {(t.get("key"), t.get("value")) for t in pod_spec.get("tolerations") or ()}
    return (pod_spec.get("nodeSelector") or {}).get(FLAVOR) == flavor and (
        FLAVOR,
        flavor,
    ) in tolerated


async def nothing_active(client: Client, namespace: str, name: str) -> bool:
    """No replica counts an active pod, and no pod of the job is left: what Kueue waits for
    before it releases the job's quota."""
    counts = replica_counts(await job_status(client, MPIJOBS, namespace, name))
    return all(not c.get("active") for c in counts.values()) and not await live_pods(
        client, namespace
    )


async def test_kueue_admits_evicts_and_readmits_a_suspended_job(
    client: Client, namespace: str, kubeflow: Controller, simulated_node: SimulatedNode
) -> None:
    def on_demand_launcher(pod: Object) -> bool:
        labels = pod["metadata"].get("labels") or {}
        return labels.get(JOB_ROLE) == "launcher" and placed_on(pod["spec"], "on-demand")

    simulated_node.when(on_demand_launcher, exit_code=0, after=0.2)
    job = mpijob(namespace, "queued", run_policy={"suspend": True, "cleanPodPolicy": "None"})
    await client.create(MPIJOBS, job)
    workers = worker_names("queued")

    # Created suspended: the job's Service, hostfile and key, but no pod and no launcher.
    status = await wait_for_condition(client, namespace, "queued", "Suspended")
    suspended = condition_of(status, "Suspended")
    assert (suspended["reason"], suspended["message"]) == ("MPIJobSuspended", "MPIJob suspended")
    assert is_true(status, "Created")
    running = condition_of(status, "Running")
    assert (running["status"], running["reason"]) == ("False", "MPIJobSuspended")
    assert not status.get("startTime")
    await resync(kubeflow, Request(namespace, "queued"))
    for resource, child in (
        (SERVICES, "queued"),
        (CONFIGMAPS, "queued-config"),
        (SECRETS, "queued-ssh"),
    ):
        assert await exists(client, resource, namespace, child), child
    assert await live_pods(client, namespace) == {}
    assert not await exists(client, BATCH_JOBS, namespace, "queued-launcher")

    # Admitted to the spot flavor: the templates first, then the job unsuspended.
    await client.patch(MPIJOBS, "queued", admission("spot"), namespace)
    await resync(kubeflow, Request(namespace, "queued"))
    assert await live_pods(client, namespace) == {}
    await client.patch(MPIJOBS, "queued", {"spec": {"runPolicy": {"suspend": False}}}, namespace)
    launcher = await running_launcher(client, namespace, "queued")
    status = await wait_for_condition(client, namespace, "queued", "Suspended", "False")
    resumed = condition_of(status, "Suspended")
    assert (resumed["reason"], resumed["message"]) == ("MPIJobResumed", "MPIJob resumed")
    await wait_for_condition(client, namespace, "queued", "Running")
    status = await wait_for_replicas(
        client, namespace, "queued", {"Launcher": {"active": 1}, "Worker": {"active": 2}}
    )
    started = status["startTime"]
    pods = await live_pods(client, namespace)
    for worker in workers:
        assert placed_on(pods[worker]["spec"], "spot"), pods[worker]["spec"]
        assert pods[worker]["metadata"]["labels"][PODSET] == "worker"
    template = (await client.get(BATCH_JOBS, "queued-launcher", namespace))["spec"]["template"]
    assert placed_on(template["spec"], "spot"), template["spec"]
    assert template["metadata"]["labels"][PODSET] == "launcher"
    assert placed_on(launcher["spec"], "spot")

    # Evicted: suspended again, its templates restored. Every pod and the launcher Job go.
    await client.patch(MPIJOBS, "queued", EVICTION, namespace)
    status = await wait_for_condition(client, namespace, "queued", "Suspended")
    assert condition_of(status, "Suspended")["reason"] == "MPIJobSuspended"
    await eventually(lambda: nothing_active(client, namespace, "queued"), timeout=30)

    async def launcher_job_gone() -> bool:
        return not await exists(client, BATCH_JOBS, namespace, "queued-launcher")

    await eventually(launcher_job_gone)
    status = await job_status(client, MPIJOBS, namespace, "queued")
    running = condition_of(status, "Running")
    assert (running["status"], running["reason"]) == ("False", "MPIJobSuspended")
    assert status.get("startTime"), "suspension keeps the start time"
    assert not is_true(status, "Failed")

    # Readmitted to the on-demand flavor in one patch, as Kueue does: the pods and the
    # launcher Job come back from the templates as they are now, and the job finishes.
    await client.patch(MPIJOBS, "queued", admission("on-demand", suspend=False), namespace)
    status = await wait_for_condition(client, namespace, "queued", "Succeeded")
    assert condition_of(status, "Suspended")["status"] == "False"
    assert not is_true(status, "Failed")
    assert status["startTime"] >= started
    template = (await launcher_job(client, namespace, "queued"))["spec"]["template"]
    assert placed_on(template["spec"], "on-demand"), template["spec"]
    pods = await live_pods(client, namespace)
    for worker in workers:
        assert placed_on(pods[worker]["spec"], "on-demand"), pods[worker]["spec"]
    launchers = [p for p in pods.values() if p["metadata"]["name"].startswith("queued-launcher-")]
    assert [p["status"]["phase"] for p in launchers] == ["Succeeded"]
    events = await wait_for_kubeflow_events(
        client, namespace, "queued", "MPIJobSuspended", "MPIJobResumed"
    )
    assert events["MPIJobSuspended"] == ("Normal", "MPIJob suspended")
    assert events["MPIJobResumed"] == ("Normal", "MPIJob resumed")


async def test_the_active_deadline_does_not_count_while_the_job_is_suspended(
    client: Client, namespace: str, kubeflow: Controller, simulated_node: SimulatedNode
) -> None:
    deadline = 4
    job = mpijob(
        namespace, "later", run_policy={"suspend": True, "activeDeadlineSeconds": deadline}
    )
    created = await client.create(MPIJOBS, job)
    await wait_for_condition(client, namespace, "later", "Suspended")
    since = datetime.fromisoformat(created["metadata"]["creationTimestamp"]).timestamp()
    # Suspended for longer than its deadline (the clock is what this waits on).
    await eventually(lambda: time.time() > since + deadline + 1, timeout=deadline + 5)
    await resync(kubeflow, Request(namespace, "later"))
    status = await job_status(client, MPIJOBS, namespace, "later")
    assert not is_true(status, "Failed"), condition_of(status, "Failed")

    await client.patch(MPIJOBS, "later", {"spec": {"runPolicy": {"suspend": False}}}, namespace)
    launcher = await running_launcher(client, namespace, "later")
    status = await wait_for_condition(client, namespace, "later", "Running")
    assert not is_true(status, "Failed"), condition_of(status, "Failed")
    await simulated_node.succeed(namespace, launcher["metadata"]["name"])
    status = await wait_for_condition(client, namespace, "later", "Succeeded")
    assert not is_true(status, "Failed")


# The run policy's clocks ----------------------------------------------------------------------


async def test_the_active_deadline_fails_the_job_and_stops_its_pods(
    client: Client, namespace: str, kubeflow: Controller, simulated_node: SimulatedNode
) -> None:
    job = mpijob(namespace, "late", run_policy={"activeDeadlineSeconds": 2})
    await client.create(MPIJOBS, job)
    status = await wait_for_condition(client, namespace, "late", "Failed")
    assert condition_of(status, "Failed")["reason"] == "DeadlineExceeded"
    assert not is_true(status, "Succeeded")

    async def none_running() -> bool:  # neither the workers nor the launcher run on
        return not {"Running", "Pending"} & set((await phases(client, namespace)).values())

    await eventually(none_running, timeout=15)
    events = await wait_for_kubeflow_events(client, namespace, "late", "DeadlineExceeded")
    assert events["DeadlineExceeded"][0] == "Warning"


async def test_ttl_after_finished_deletes_the_job_and_its_children(
    client: Client, namespace: str, kubeflow: Controller, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(LAUNCHER, exit_code=0, after=0.5)
    job = mpijob(namespace, "brief", run_policy={"ttlSecondsAfterFinished": 2})
    await client.create(MPIJOBS, job)
    await running_launcher(client, namespace, "brief")
    assert await exists(client, MPIJOBS, namespace, "brief"), "deleted before it finished"
    await wait_for_condition(client, namespace, "brief", "Succeeded")
    await wait_for_deletion(client, MPIJOBS, namespace, "brief")
    await eventually(lambda: children_gone(client, namespace, "brief"), timeout=30)
