"""Politeness to a shared API server, through a FaultProxy that counts and throttles requests
on their way to a real one: `jobcore run` keeps to `--kube-api-qps`, and a 429's
`Retry-After` holds back the controller's and an informer's next try."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from jobcore import CONFIGMAPS
from jobcore import Client
from jobcore import Informer
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.testing import ControlPlane
from jobcore.testing import FaultProxy
from jobcore.testing import Faults
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobcore.testing import wait_for_phase
from jobkinds.mpijob import MPIJobKind
from tests.integration.runtime.test_cache_memory import ready_controller
from tests.support.mpijobs import MPIJOBS
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration

QPS = 10
BURST = 5
ASKED = 2
"""The seconds the proxy's 429s ask for, beyond the test clients' `retry_after_max`."""


@dataclass
class Proxied:
    """A FaultProxy in front of the test's API server, and a kubeconfig that goes through it."""

    proxy: FaultProxy
    kubeconfig: str


@pytest.fixture
async def proxied(control_plane: ControlPlane, tmp_path: Path) -> AsyncIterator[Proxied]:
    async with FaultProxy(control_plane.url, control_plane.token) as proxy:
        yield Proxied(proxy, proxy.kubeconfig(str(tmp_path / "proxy.kubeconfig")))


async def test_jobcore_run_sends_no_faster_than_its_kube_api_qps(
    client: Client, namespace: str, proxied: Proxied, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=0.2)
    counts: list[tuple[float, int]] = []

    async def count() -> None:
        while True:
            counts.append((time.monotonic(), proxied.proxy.requests))
            await asyncio.sleep(0.02)

    options = ("--kube-api-qps", str(QPS), "--kube-api-burst", str(BURST))
    async with (
        background(count()),
        ready_controller(client, proxied.kubeconfig, namespace, *options),
    ):
        for name in ("a", "b"):
            await client.create(MPIJOBS, mpijob(namespace, name))
        for name in ("a", "b"):
            await wait_for_phase(client, MPIJOBS, namespace, name, "Succeeded", timeout=60)
    # Between any two counts, at most the burst and QPS a second went out (plus one in
    # flight when the first count was taken).
    excess = max(
        (later - earlier) - (BURST + QPS * (t2 - t1) + 1)
        for i, (t1, earlier) in enumerate(counts)
        for t2, later in counts[i + 1 :: 5]
    )
    print(f"{counts[-1][1]} requests; most beyond the limit in any window: {excess:.1f}")
    assert excess <= 0
    assert counts[-1][1] > 4 * BURST  # enough requests for the limit to matter


async def test_the_controller_retries_a_throttled_create_no_sooner_than_retry_after(
    client: Client, namespace: str, proxied: Proxied, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=0.2)
    proxy = proxied.proxy
    proxy.faults = Faults(throttle=1.0, retry_after=ASKED, only=r"POST .*/pods$")
    async with (
        await Client.from_kubeconfig(proxied.kubeconfig, retry_after_max=0.5) as through_proxy,
        job_controller(through_proxy, MPIJobKind(), namespace=namespace),
    ):
        await client.create(MPIJOBS, mpijob(namespace, "throttled"))  # two workers
        await eventually(lambda: proxy.injected["throttle"] > 0)
        await asyncio.sleep(1.0)  # the job's first reconciles, on its children's events
        before = proxy.injected["throttle"]
        await asyncio.sleep(4.0)
        throttled = proxy.injected["throttle"] - before
        print(f"creates of the job's 2 workers throttled in 4 s: {throttled}")
        assert throttled <= 2 * (4 // ASKED + 1)  # one try per worker every ASKED s
        proxy.faults = Faults()
        await wait_for_phase(client, MPIJOBS, namespace, "throttled", "Succeeded", timeout=30)


async def test_an_informer_lists_again_no_sooner_than_retry_after(
    namespace: str, proxied: Proxied
) -> None:
    proxy = proxied.proxy
    proxy.faults = Faults(throttle=1.0, retry_after=ASKED, only=r"GET .*/configmaps$")
    async with await Client.from_kubeconfig(proxied.kubeconfig, retry_after_max=0.5) as client:
        informer = Informer(client, CONFIGMAPS, namespace=namespace)
        async with background(informer.run()):
            await asyncio.sleep(5.0)
            print(f"lists throttled in 5 s: {proxy.injected['throttle']}")
            assert proxy.injected["throttle"] <= 5 // ASKED + 1
            proxy.faults = Faults()
            await asyncio.wait_for(informer.wait_for_sync(), timeout=3 * ASKED)
