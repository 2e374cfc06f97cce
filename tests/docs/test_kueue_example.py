"""docs/kueue.md's team set-up, as the page shows it (docs/examples/kueue): its ResourceFlavor,
ClusterQueue and LocalQueue, then a queued job of each bundled kind, run on the real API
server by the kinds' controllers with their Kueue integration and the kit's Kueue stand-in:
each job's Workload is admitted in the team's ClusterQueue and the job runs its pods, the
elastic HorovodJob with the workers it asked for."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
import yaml

from jobcore import Client
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.testing import KUEUE_CLUSTER_QUEUES
from jobcore.testing import KUEUE_LOCAL_QUEUES
from jobcore.testing import KUEUE_RESOURCE_FLAVORS
from jobcore.testing import KUEUE_WORKLOADS
from jobcore.testing import SimulatedNode
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobcore.testing import kueue_running
from jobcore.testing import live_pods
from jobcore.testing import wait_for_phase
from tests.docs.shown import EXAMPLES
from tests.support.kindjobs import COLOSSALAIJOB
from tests.support.kindjobs import HOROVODJOB
from tests.support.kindjobs import MPIJOB

pytestmark = pytest.mark.integration

FOLDER = EXAMPLES / "kueue"
KINDS = {"mpijob.yaml": MPIJOB, "colossalaijob.yaml": COLOSSALAIJOB, "horovodjob.yaml": HOROVODJOB}
RESOURCES = {
    "ResourceFlavor": KUEUE_RESOURCE_FLAVORS,
    "ClusterQueue": KUEUE_CLUSTER_QUEUES,
    "LocalQueue": KUEUE_LOCAL_QUEUES,
}


def in_namespace(shown: Any, namespace: str) -> Any:
    """The page's object with its team, `team-a` (the namespace, its LocalQueue and its
    ClusterQueue), and its flavour named after this test's namespace: no other test meets
    its cluster-scoped objects."""
    text = yaml.safe_dump(shown).replace("team-a", namespace)
    return yaml.safe_load(text.replace("default-flavor", f"flavor-{namespace}"))


async def test_the_pages_team_queues_admit_and_run_a_job_of_each_kind(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(kueue_running(client))
        for kind in KINDS.values():
            controller = job_controller(client, kind.kind, namespace=namespace, kueue=True)
            await stack.enter_async_context(controller)
        for shown in yaml.safe_load_all((FOLDER / "queues.yaml").read_text()):
            obj = in_namespace(shown, namespace)
            await client.create(RESOURCES[obj["kind"]], obj)
        jobs: dict[str, Resource] = {}
        for file, kind in KINDS.items():
            job: Object = in_namespace(yaml.safe_load((FOLDER / file).read_text()), namespace)
            await client.create(kind.kind.resource, job)
            jobs[job["metadata"]["name"]] = kind.kind.resource
        for name, resource in jobs.items():
            await wait_for_phase(client, resource, namespace, name, "Running", timeout=60)

        async def admitted() -> list[Any]:
            workloads = (await client.list(KUEUE_WORKLOADS, namespace))["items"]
            return [(w.get("status") or {}).get("admission") for w in workloads]

        queues = {a["clusterQueue"] for a in await admitted() if a}
        assert queues == {namespace} and len(await admitted()) == len(jobs)
        await eventually(lambda: all_workers(client, namespace, "elastic", 3), timeout=20)


async def all_workers(client: Client, namespace: str, job: str, count: int) -> bool:
    """Whether `job` has `count` live worker pods."""
    pods = await live_pods(client, namespace)
    labels = [p["metadata"]["labels"] for p in pods.values()]
    mine = [lab for lab in labels if lab.get(JOB_NAME_LABEL) == job]
    workers = [lab for lab in mine if lab.get(REPLICA_TYPE_LABEL) == "worker"]
    return len(workers) == count
