"""The job controller behind a proxy that fails a share of its requests: jobs still converge."""

from __future__ import annotations

import collections
import contextlib
import time
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import pytest

from jobcore import NAMESPACES
from jobcore import PODS
from jobcore import REGISTRY
from jobcore import ApiError
from jobcore import Client
from jobcore import Informer
from jobcore import Manager
from jobcore import Object
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import add_job_controller
from jobcore.jobs import crd_for
from jobcore.testing import ControlPlane
from jobcore.testing import FaultProxy
from jobcore.testing import Faults
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import install_crd
from jobcore.testing import live_pods
from jobkinds.mpijob import MPIJobKind
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration

KIND = MPIJobKind()
MPIJOBS = KIND.resource
JOBS = 20
LAUNCHER = f"{REPLICA_TYPE_LABEL}=launcher"
FAULTS = Faults.mixed(0.2, delay=0.3, cut_after=3.0)


def expected_pods(name: str) -> set[str]:
    return {f"{name}-worker-0", f"{name}-worker-1", f"{name}-launcher"}


@dataclass
class PodLedger:
    """Every Pod ever added, by name: a Pod made twice (or deleted and made again) shows."""

    added: collections.Counter[str] = field(default_factory=collections.Counter)

    def on_add(self, obj: Object) -> None:
        self.added[obj["metadata"]["name"]] += 1

    def on_update(self, old: Object, new: Object) -> None:
        pass

    def on_delete(self, obj: Object) -> None:
        pass


@dataclass(frozen=True)
class Run:
    seconds: float
    requests: int
    watches: int
    injected: dict[str, int]
    reconcile_errors: float
    terminal_errors: float


def errors(controller: str, *, terminal: bool = False) -> float:
    name = f"controller_runtime_{'terminal_' if terminal else ''}reconcile_errors_total"
    return REGISTRY.get_sample_value(name, {"controller": controller}) or 0.0


async def converge(
    client: Client,
    control_plane: ControlPlane,
    namespace: str,
    tmp_path: Path,
    faults: Faults,
    *,
    jobs: int = JOBS,
    **client_options: Any,
) -> Run:
    """Run `jobs` MPIJobs to Succeeded, the controller's client talking through a FaultProxy.

    The simulated node and the test's own checks talk to the API server directly. Checks
    that every Pod was made once, and that the manager and its caches are still running.
    """
    ledger = PodLedger()
    pods = Informer(client, PODS, namespace=namespace)
    pods.add_handler(ledger)
    node = SimulatedNode(client, name=f"node-{namespace}"[:63], namespace=namespace)
    node.when(LAUNCHER, exit_code=0, after=0.2)
    async with (
        background(pods.run()),
        background(node.run()),
        FaultProxy(control_plane.url, control_plane.token, faults=faults, seed=8) as proxy,
    ):
        await pods.wait_for_sync()
        await node.pods.wait_for_sync()
        kubeconfig = proxy.kubeconfig(str(tmp_path / f"{namespace}.kubeconfig"))
        async with await Client.from_kubeconfig(kubeconfig, **client_options) as proxied:
            manager = Manager(proxied, metrics_address=None, health_address=None)
            controller = add_job_controller(manager, KIND, namespace=namespace)
            errors_before = errors(controller.name)
            terminal_before = errors(controller.name, terminal=True)
            started = time.monotonic()
            async with background(manager.run()) as running:
                for i in range(jobs):
                    await client.create(MPIJOBS, mpijob(namespace, f"job-{i}"))

                async def phases() -> collections.Counter[str | None]:
                    items = (await client.list(MPIJOBS, namespace))["items"]
                    return collections.Counter((o.get("status") or {}).get("phase") for o in items)

                async def all_succeeded() -> bool:
                    now = await phases()
                    assert now["Failed"] == 0, f"a job failed: {dict(now)}"
                    return now["Succeeded"] == jobs

                try:
                    await eventually(all_succeeded, timeout=45, interval=0.2)
                except TimeoutError:
                    pod_phases = collections.Counter(
                        p["status"].get("phase")
                        for p in (await live_pods(client, namespace)).values()
                    )
                    raise AssertionError(
                        f"jobs {dict(await phases())}, pods {dict(pod_phases)}, "
                        f"proxy requests {proxy.requests}, faults {dict(proxy.injected)}"
                    ) from None
                seconds = time.monotonic() - started
                assert not running.done(), "the manager stopped"
                assert all(informer.has_synced() for informer in controller.informers)
        run = Run(
            seconds=seconds,
            requests=proxy.requests,
            watches=proxy.watches,
            injected=dict(proxy.injected),
            reconcile_errors=errors(controller.name) - errors_before,
            terminal_errors=errors(controller.name, terminal=True) - terminal_before,
        )
    everything = set().union(*(expected_pods(f"job-{i}") for i in range(jobs)))
    assert set(await live_pods(client, namespace)) == everything
    assert set(ledger.added) == everything
    twice = sorted(name for name, times in ledger.added.items() if times > 1)
    assert twice == [], f"pods created more than once: {twice}"
    return run


@pytest.mark.timeout(90)
async def test_jobs_converge_through_a_proxy_failing_a_fifth_of_requests(
    client: Client, namespace: str, control_plane: object, tmp_path: Path
) -> None:
    """20 jobs, first with a faultless proxy (the yardstick), then with 20% of requests failed.

    Failures are 429 and 503 with Retry-After, 500, resets before and after the request took
    effect, slow answers, and watches cut inside an event. Every job succeeds, no Pod is made
    twice, the manager keeps running, and the retries stay within a small multiple of the
    faultless run's requests.
    """
    if not isinstance(control_plane, ControlPlane):
        pytest.skip("needs the envtest control plane's URL and admin token")
    await install_crd(client, crd_for(KIND))
    yardstick = f"{namespace}-base"
    await client.create(
        NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": yardstick}}
    )
    try:
        baseline = await converge(client, control_plane, yardstick, tmp_path, Faults())
    finally:
        with contextlib.suppress(ApiError):
            await client.delete(NAMESPACES, yardstick)
    faulty = await converge(client, control_plane, namespace, tmp_path, FAULTS)
    print(f"\nfaultless: {baseline}\nfaulty:    {faulty}")

    assert baseline.injected == {} and baseline.reconcile_errors == 0
    assert set(faulty.injected) >= {
        "throttle",
        "server_error",
        "unavailable",
        "reset",
        "lost_answer",
        "slow",
    }, faulty.injected
    assert faulty.terminal_errors == 0
    # Client retries absorb most faults; the rest are retried by the work queue, bounded.
    assert faulty.reconcile_errors <= JOBS
    assert faulty.requests <= 2 * baseline.requests


@pytest.mark.timeout(60)
async def test_requests_the_client_gives_up_on_are_retried_by_the_work_queue(
    client: Client, namespace: str, control_plane: object, tmp_path: Path
) -> None:
    """With 40% of requests failed and only two tries per request, reconciles fail and retry.

    The errors reach the work queue, which retries with backoff: the jobs still succeed, and
    the errors stay bounded.
    """
    if not isinstance(control_plane, ControlPlane):
        pytest.skip("needs the envtest control plane's URL and admin token")
    await install_crd(client, crd_for(KIND))
    harsh = Faults.mixed(0.4, delay=0.3, cut_watch=0.2, cut_after=3.0)
    run = await converge(
        client, control_plane, namespace, tmp_path, harsh, jobs=10, retry_attempts=2
    )
    print(f"\nharsh: {run}")
    assert 0 < run.reconcile_errors <= 5 * 10
    assert run.terminal_errors == 0
    assert run.requests <= 40 * 10  # about 15 per job without faults
