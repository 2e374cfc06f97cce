"""Kubeflow's MPIJob under a gang scheduler: its PodGroup as Kubeflow's MPI Operator fills it,
minResources summed from the pods when the job leaves it unset. A real API server, Volcano's
PodGroup resource (its CRD without its scheduler) and Kubernetes' Job controller.
"""

from __future__ import annotations

from typing import Any

import pytest

from jobcore import Client
from jobcore.jobs import Volcano
from jobcore.testing import SimulatedNode
from jobcore.testing import eventually
from jobcore.testing import install_crd
from jobcore.testing import job_controller
from jobcore.testing import schemaless_crd
from tests.support.kubeflowjobs import KIND
from tests.support.kubeflowjobs import MPIJOBS
from tests.support.kubeflowjobs import mpijob
from tests.support.kubeflowjobs import running_launcher

pytestmark = pytest.mark.integration


async def test_min_resources_left_unset_are_summed_from_the_launcher_and_workers(
    client: Client, namespace: str, control_plane: Any, simulated_node: SimulatedNode
) -> None:
    await install_crd(client, schemaless_crd(Volcano.resource))
    await control_plane.start_controller_manager()
    job = mpijob(
        namespace, "sized", workers=3, run_policy={"schedulingPolicy": {"minAvailable": 3}}
    )
    replicas = job["spec"]["mpiReplicaSpecs"]
    for name, resources in (
        ("Launcher", {"requests": {"cpu": "250m", "memory": "256Mi"}}),
        ("Worker", {"limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}}),
    ):
        replicas[name]["template"]["spec"]["containers"][0]["resources"] = resources
    async with job_controller(client, KIND, namespace=namespace, gang_scheduler=Volcano()):
        await client.create(MPIJOBS, job)
        await running_launcher(client, namespace, "sized")

        async def grouped() -> bool:
            group = await client.get(Volcano.resource, "sized", namespace)
            return "minResources" in group["spec"]

        await eventually(grouped)
    group = await client.get(Volcano.resource, "sized", namespace)
    print(f"PodGroup of minAvailable 3 of 4 pods: minResources {group['spec']['minResources']}")
    # minAvailable 3 of 4 pods: the launcher and two workers, as Kubeflow sums them.
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["minResources"] == {
        "cpu": "4250m",
        "memory": "2304Mi",
        "nvidia.com/gpu": "2",
    }
