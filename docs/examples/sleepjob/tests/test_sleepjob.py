"""SleepJob on plain objects, then with the real controller against a real API server.

`client`, `namespace` and `simulated_node` come from jobcore's pytest plugin, which pytest
loads because jobcore is installed.
"""

from jobcore import Client
from jobcore import Object
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import JobKind
from jobcore.testing import SimulatedNode
from jobcore.testing import assert_valid_kind
from jobcore.testing import condition
from jobcore.testing import job_controller
from jobcore.testing import job_of
from jobcore.testing import observed_of
from jobcore.testing import pod_of
from jobcore.testing import wait_for_phase
from sleepjob import SleepJobKind
from sleepjob import SleepJobSpec

KIND: JobKind[SleepJobSpec] = SleepJobKind()  # mypy checks the protocol here
SLEEPJOBS = KIND.resource


def sleepjob(namespace: str, name: str, replicas: int = 2) -> Object:
    container = {"name": "main", "image": "busybox", "command": ["sleep", "1"]}
    return {
        "apiVersion": SLEEPJOBS.api_version,
        "kind": SLEEPJOBS.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [container]}}},
    }


def test_the_kind_is_one_the_controller_accepts() -> None:
    assert_valid_kind(KIND)  # every JobKind member, valid names, no misspelt hook


def test_one_pod_per_replica() -> None:
    job = job_of(KIND, sleepjob("team-a", "nap", replicas=3))
    pods = KIND.render(job, observed_of())
    assert [p["metadata"]["name"] for p in pods] == ["nap-0", "nap-1", "nap-2"]
    assert {p["spec"]["restartPolicy"] for p in pods} == {"Never"}


def test_a_failed_pod_fails_the_job() -> None:
    job = job_of(KIND, sleepjob("team-a", "nap"))
    pods = [pod_of(job, "nap-0", "worker", 0), pod_of(job, "nap-1", "worker", 1, phase="Failed")]
    outcome = KIND.interpret(job, observed_of(*pods))
    assert (outcome.state, outcome.replica_failure) == ("failed", "Pod[nap-1] failed")


async def test_the_job_succeeds_once_every_pod_has(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(f"{REPLICA_TYPE_LABEL}=worker", exit_code=0, after=0.2)
    async with job_controller(client, KIND, namespace=namespace):
        await client.create(SLEEPJOBS, sleepjob(namespace, "nap"))
        status = await wait_for_phase(client, SLEEPJOBS, namespace, "nap", "Succeeded")
    completed = condition(status, "Completed")
    assert (completed["reason"], completed["message"]) == (
        "Succeeded",
        "The job has finished successfully.",
    )
    assert [task["type"] for task in status["tasks"]] == ["worker"]
