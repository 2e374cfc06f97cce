"""An ended job stays ended, and nothing is counted twice.

The real controller against the real API server, the simulated node playing the pods, and a
fault proxy in between where the API server must refuse something: pod deletions that fail
(the status that ends a job is written before clean-up deletes its pods), a status write
refused with a conflict (a restart is recorded before its pods go, never skipped), and an edit
that makes an ended job's spec invalid (its outcome is kept).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from jobcore import Client
from jobcore import Controller
from jobcore import Object
from jobcore import Request
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import RetryBackoff
from jobcore.testing import ControlPlane
from jobcore.testing import FaultProxy
from jobcore.testing import Faults
from jobcore.testing import SimulatedNode
from jobcore.testing import condition
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobcore.testing import job_status
from jobcore.testing import live_pods
from jobcore.testing import wait_for_end
from jobcore.testing import wait_for_phase
from jobcore.testing import wait_until_settled
from jobkinds.mpijob import MPIJobKind
from tests.support.fixtures import controller_fixture
from tests.support.mpijobs import MPIJOBS
from tests.support.mpijobs import expire
from tests.support.mpijobs import mpijob
from tests.support.mpijobs import run_to_end

pytestmark = pytest.mark.integration

KIND = MPIJobKind()
LAUNCHER = f"{REPLICA_TYPE_LABEL}=launcher"
QUICK = RetryBackoff(initial=1)

controller = controller_fixture(KIND)


@dataclass(frozen=True)
class Proxied:
    """A fault proxy to the test's API server, faultless until a test says otherwise, and a
    client whose requests go through it: the controller's."""

    proxy: FaultProxy
    client: Client


@pytest.fixture
async def proxied(control_plane: object, tmp_path: Path) -> AsyncIterator[Proxied]:
    assert isinstance(control_plane, ControlPlane), "the proxy needs the control plane's URL"
    async with FaultProxy(control_plane.url, control_plane.token, faults=Faults()) as proxy:
        kubeconfig = proxy.kubeconfig(str(tmp_path / "proxied.kubeconfig"))
        async with await Client.from_kubeconfig(kubeconfig) as client:
            yield Proxied(proxy, client)


def uids(pods: dict[str, Object], job: str) -> dict[str, str]:
    return {
        name: pod["metadata"]["uid"]
        for name, pod in pods.items()
        if pod["metadata"]["labels"].get(JOB_NAME_LABEL) == job
    }


async def test_the_final_status_is_written_before_clean_up_deletes_pods(
    client: Client, namespace: str, proxied: Proxied, simulated_node: SimulatedNode
) -> None:
    proxy = proxied.proxy
    simulated_node.when(f"{JOB_NAME_LABEL}=cleaned,{LAUNCHER}", exit_code=0, after=1.0)
    cleaned = mpijob(namespace, "cleaned", runPolicy={"cleanUpPolicy": "All"})
    late = mpijob(namespace, "late", runPolicy={"activeDeadlineSeconds": 4})
    async with job_controller(proxied.client, KIND, namespace=namespace):
        for job in (cleaned, late):
            await client.create(MPIJOBS, job)
        await wait_for_phase(client, MPIJOBS, namespace, "late", "Running")
        proxy.faults = Faults(server_error=1.0, only=r"DELETE .*/pods/")
        # Both end while no pod can be deleted: the status says so all the same.
        succeeded = await wait_for_end(client, MPIJOBS, namespace, "cleaned", timeout=20)
        expired = await wait_for_end(client, MPIJOBS, namespace, "late", timeout=20)
        assert succeeded["phase"] == "Succeeded"
        assert (expired["phase"], condition(expired, "Failed")["reason"]) == (
            "Failed",
            "DeadlineExceeded",
        )
        await eventually(lambda: proxy.injected["server_error"] >= 4, timeout=20)
        pods = await live_pods(client, namespace)
        assert len(uids(pods, "cleaned")) == 3 and len(uids(pods, "late")) == 3, "none deleted"
        failures = proxy.injected["server_error"]
        # Deletions work again: the clean-up and the deadline's stop are carried out.
        proxy.faults = Faults()

        left: dict[str, Object] = {}

        async def cleaned_up() -> bool:
            left.clear()
            left.update(await live_pods(client, namespace))
            return not left

        try:
            await eventually(cleaned_up, timeout=30, interval=0.2)
        except TimeoutError:
            raise AssertionError(f"pods left: {sorted(left)}") from None
        for name, ended in (("cleaned", succeeded), ("late", expired)):
            status = await job_status(client, MPIJOBS, namespace, name)
            assert (status["phase"], status["conditions"]) == (ended["phase"], ended["conditions"])
    print(f"Succeeded and DeadlineExceeded written while {failures} pod deletions failed")


async def test_a_conflict_on_the_restart_record_deletes_nothing_until_it_is_recorded(
    client: Client, namespace: str, proxied: Proxied, simulated_node: SimulatedNode
) -> None:
    proxy = proxied.proxy
    policy = {"backoffLimit": 2, "restartPolicy": "OnFailure"}
    async with job_controller(proxied.client, KIND, namespace=namespace, retry_backoff=QUICK):
        await client.create(MPIJOBS, mpijob(namespace, "retried", runPolicy=policy))
        await wait_for_phase(client, MPIJOBS, namespace, "retried", "Running")
        before = uids(await live_pods(client, namespace), "retried")
        proxy.faults = Faults(conflict=1.0, only=r"PATCH .*/mpijobs/retried/status$")
        simulated_node.when(LAUNCHER, exit_code=0, after=0.5)  # the next run succeeds
        await simulated_node.fail(namespace, "retried-worker-1", exit_code=137)
        await eventually(lambda: proxy.injected["conflict"] >= 4, timeout=20)
        # The restart could not be recorded: every pod is still there.
        assert uids(await live_pods(client, namespace), "retried") == before
        conflicts = proxy.injected["conflict"]
        assert "restarts" not in await job_status(client, MPIJOBS, namespace, "retried")
        proxy.faults = Faults()
        status = await wait_for_end(client, MPIJOBS, namespace, "retried", timeout=30)
    assert (status["phase"], status["restarts"]) == ("Succeeded", 1)
    after = uids(await live_pods(client, namespace), "retried")
    assert after.keys() == before.keys() and not set(after.values()) & set(before.values())
    print(f"{conflicts} conflicts on the restart's record: 0 pods deleted meanwhile, restarts 1")


async def test_an_ended_job_edited_invalid_keeps_its_outcome(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(f"{JOB_NAME_LABEL}=done,{LAUNCHER}", exit_code=0, after=0.2)
    simulated_node.when(f"{JOB_NAME_LABEL}=broke,{LAUNCHER}", exit_code=3, after=0.2)
    invalid = {"spec": {"ssh": {"sshAuthMountPath": "relative"}}}
    ended = {}
    for name in ("done", "broke"):
        ended[name] = await run_to_end(client, namespace, name)
        pods = uids(await live_pods(client, namespace), name)
        await client.patch(MPIJOBS, name, invalid, namespace)
        await wait_until_settled(client, controller, MPIJOBS, Request(namespace, name))
        # Not rewritten as InvalidSpec, nor run again.
        assert await job_status(client, MPIJOBS, namespace, name) == ended[name]
        assert uids(await live_pods(client, namespace), name) == pods
    assert ended["done"]["phase"] == "Succeeded"
    assert condition(ended["broke"], "Failed")["reason"] == "Failed"
    print("edited invalid after they ended: Succeeded and Failed kept, nothing run again")
    # Its TTL still applies.
    await expire(client, namespace, "broke")


@pytest.mark.usefixtures("controller", "launchers_succeed")
async def test_an_ended_job_edited_invalid_is_still_cleaned_up_as_its_run_policy_says(
    client: Client, namespace: str
) -> None:
    ended = await run_to_end(client, namespace, "kept")
    assert uids(await live_pods(client, namespace), "kept"), "no clean-up policy: pods stay"
    edit = {
        "spec": {"ssh": {"sshAuthMountPath": "relative"}, "runPolicy": {"cleanUpPolicy": "All"}}
    }
    await client.patch(MPIJOBS, "kept", edit, namespace)

    async def workers_gone() -> bool:
        pods = uids(await live_pods(client, namespace), "kept")
        return not any("-worker-" in name for name in pods)

    await eventually(workers_gone, timeout=15)
    assert await job_status(client, MPIJOBS, namespace, "kept") == ended
