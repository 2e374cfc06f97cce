"""Nothing owned by someone else is touched: a PodGroup or a child that is another's is left as
it is and the job says whose it is; a job of another kind with the same name is refused, the
first left running; pods of batch Jobs no job controls stay out of the cache; a deleted job's
metric series go. The real controllers against a real API server, the simulated node.
"""

from __future__ import annotations

import pytest

from jobcore import BATCH_JOBS
from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import REGISTRY
from jobcore import Client
from jobcore import Manager
from jobcore import Object
from jobcore import Request
from jobcore import owner_reference
from jobcore.jobs import JOB_KIND_LABEL
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import Volcano
from jobcore.jobs import add_job_controller
from jobcore.jobs import crd_for
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import condition
from jobcore.testing import eventually
from jobcore.testing import install_crd
from jobcore.testing import job_controller
from jobcore.testing import job_status
from jobcore.testing import live_pods
from jobcore.testing import resync
from jobcore.testing import schemaless_crd
from jobcore.testing import wait_for_deletion
from jobcore.testing import wait_for_phase
from tests.support.kindjobs import COLOSSALAIJOB
from tests.support.kindjobs import MPIJOB
from tests.support.kubeflowjobs import KIND as KUBEFLOW
from tests.support.kubeflowjobs import MPIJOBS as KUBEFLOW_MPIJOBS
from tests.support.kubeflowjobs import kubeflow_controller
from tests.support.kubeflowjobs import mpijob as kubeflow_mpijob
from tests.support.kubeflowjobs import running_launcher
from tests.support.kubeflowjobs import wait_for_condition
from tests.support.mpijobs import MPIJOBS
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration


async def keeper(client: Client, namespace: str) -> Object:
    """A ConfigMap that stands for someone else's controller."""
    obj: Object = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "keeper", "namespace": namespace},
    }
    return await client.create(CONFIGMAPS, obj)


@pytest.mark.usefixtures("launchers_succeed")
async def test_a_pod_group_another_object_controls_is_never_applied_over(
    client: Client, namespace: str
) -> None:
    await install_crd(client, schemaless_crd(Volcano.resource))
    theirs: Object = {
        "apiVersion": Volcano.resource.api_version,
        "kind": Volcano.resource.kind,
        "metadata": {
            "name": "held",
            "namespace": namespace,
            "ownerReferences": [owner_reference(await keeper(client, namespace))],
        },
        "spec": {"minMember": 7, "queue": "theirs"},
    }
    theirs = await client.create(Volcano.resource, theirs)
    async with job_controller(
        client, MPIJOB.kind, namespace=namespace, gang_scheduler=Volcano()
    ) as controller:
        await client.create(MPIJOBS, mpijob(namespace, "held"))

        async def held_back() -> bool:
            status = await job_status(client, MPIJOBS, namespace, "held")
            found = condition(status, "Initialized") if status.get("conditions") else None
            return found is not None and found["reason"] == "PodGroupUnavailable"

        await eventually(held_back, timeout=15)
        message = condition(await job_status(client, MPIJOBS, namespace, "held"), "Initialized")
        assert (
            "PodGroup held (scheduling.volcano.sh/v1beta1) already exists and belongs to "
            "ConfigMap keeper (v1)"
        ) in message["message"], message
        now = await client.get(Volcano.resource, "held", namespace)
        changed = now["metadata"]["resourceVersion"] != theirs["metadata"]["resourceVersion"]
        print(f"writes to a PodGroup another object controls: {int(changed)}")
        assert now["spec"] == theirs["spec"]
        assert now["metadata"]["ownerReferences"] == theirs["metadata"]["ownerReferences"]
        assert await live_pods(client, namespace) == {}

        await client.delete(Volcano.resource, "held", namespace)
        await wait_for_deletion(client, Volcano.resource, namespace, "held")
        await resync(controller, Request(namespace, "held"))
        await wait_for_phase(client, MPIJOBS, namespace, "held", "Succeeded", timeout=30)
    ours = await client.get(Volcano.resource, "held", namespace)
    assert ours["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"


async def test_a_job_of_another_kind_with_the_same_name_is_refused_and_the_first_runs_on(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    async with (
        job_controller(client, MPIJOB.kind, namespace=namespace),
        job_controller(client, COLOSSALAIJOB.kind, namespace=namespace),
    ):
        first = await client.create(MPIJOBS, mpijob(namespace, "x"))
        await wait_for_phase(client, MPIJOBS, namespace, "x", "Running")
        before = await live_pods(client, namespace)

        await client.create(COLOSSALAIJOB.resource, COLOSSALAIJOB.job(namespace, "x"))
        second = await wait_for_phase(client, COLOSSALAIJOB.resource, namespace, "x", "Failed")
        failed = condition(second, "Failed")
        print(f"ColossalAIJob x beside MPIJob x: {failed['reason']}: {failed['message']}")
        assert failed["reason"] == "InvalidSpec"
        assert (
            f"already exists and belongs to MPIJob x ({MPIJOBS.api_version}): give this "
            "ColossalAIJob another name"
        ) in failed["message"], failed["message"]

        await simulated_node.succeed(namespace, "x-launcher")
        await wait_for_phase(client, MPIJOBS, namespace, "x", "Succeeded")
    after = await live_pods(client, namespace)
    assert {name: pod["metadata"]["uid"] for name, pod in after.items()} == {
        name: pod["metadata"]["uid"] for name, pod in before.items()
    }, "the first job's pods are the ones it started with"
    uid = first["metadata"]["uid"]
    for pod in after.values():
        assert pod["metadata"]["ownerReferences"][0]["uid"] == uid


async def test_pods_of_batch_jobs_no_job_controls_are_not_cached(
    client: Client, namespace: str, control_plane: object, simulated_node: SimulatedNode
) -> None:
    """The node runs the pods, as a cluster's would: a launcher pod whose event comes before
    its batch Job's (two watches, in either order) is cached at its next event, when it is
    scheduled and started; the mimic's get as many events and stay out."""
    await install_crd(client, crd_for(KUBEFLOW))
    await control_plane.start_controller_manager()  # type: ignore[attr-defined]
    labels = {JOB_NAME_LABEL: "mimic", JOB_KIND_LABEL: KUBEFLOW.resource.kind}
    container = {"name": "c", "image": "busybox", "command": ["true"]}
    foreign: Object = {
        "apiVersion": BATCH_JOBS.api_version,
        "kind": BATCH_JOBS.kind,
        "metadata": {"name": "mimic-launcher", "namespace": namespace, "labels": labels},
        "spec": {
            "template": {
                "metadata": {"labels": labels},
                "spec": {"restartPolicy": "Never", "containers": [container]},
            }
        },
    }
    manager = Manager(client, metrics_address=None, health_address=None)
    add_job_controller(manager, KUBEFLOW, namespace=namespace)
    # The controller's shared pods cache; this keep adds nothing to what it keeps.
    pods = manager.informer(
        PODS, namespace=namespace, label_selector=JOB_NAME_LABEL, keep=lambda _: False
    )
    async with background(manager.run()):
        await client.create(BATCH_JOBS, foreign)

        async def foreign_pod() -> bool:
            return bool((await client.list(PODS, namespace))["items"])

        await eventually(foreign_pod, timeout=20)
        # A job of the kind runs after it: once its launcher pod is cached, so would the other.
        await client.create(KUBEFLOW_MPIJOBS, kubeflow_mpijob(namespace, "real", workers=1))

        async def launcher_cached() -> bool:
            return any(p["metadata"]["name"].startswith("real-launcher-") for p in pods.list())

        await eventually(launcher_cached, timeout=20)
        cached = sorted(p["metadata"]["name"] for p in pods.list())
    mimics = [name for name in cached if name.startswith("mimic")]
    print(f"pods of a batch Job no job controls, cached: {len(mimics)} (of {len(cached)})")
    assert not mimics, cached


async def test_a_deleted_jobs_metric_series_go_with_it(
    client: Client, namespace: str, control_plane: object, simulated_node: SimulatedNode
) -> None:
    def series() -> tuple[float | None, float | None]:
        return (
            REGISTRY.get_sample_value(
                "mpi_operator_job_info", {"launcher": "gone-launcher", "namespace": namespace}
            ),
            REGISTRY.get_sample_value(
                "jobcore_job_info", {"kind": "MPIJob", "namespace": namespace, "name": "gone"}
            ),
        )

    async with kubeflow_controller(client, namespace, control_plane):
        await client.create(KUBEFLOW_MPIJOBS, kubeflow_mpijob(namespace, "gone", workers=1))
        await running_launcher(client, namespace, "gone")
        await wait_for_condition(client, namespace, "gone", "Running")

        async def announced() -> bool:  # counted once the controller's write has returned
            return series() == (1.0, 1.0)

        await eventually(announced, timeout=5)
        await client.delete(KUBEFLOW_MPIJOBS, "gone", namespace)

        async def removed() -> bool:
            return series() == (None, None)

        await eventually(removed, timeout=15)
        print(f"per-job metric series left after the job was deleted: {series()}")
