"""The manager against a real API server: probes, metrics, leader election, graceful shutdown."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import aiohttp
import pytest

from jobcore import CONFIGMAPS
from jobcore import CUSTOM_RESOURCE_DEFINITIONS
from jobcore import EVENTS
from jobcore import LEASES
from jobcore import Client
from jobcore import Controller
from jobcore import EventRecorder
from jobcore import LeaderElectionConfig
from jobcore import LeaderElectionLost
from jobcore import Manager
from jobcore import Object
from jobcore import ProbeServer
from jobcore import Request
from jobcore import Resource
from jobcore import Result
from jobcore.testing import api_requests
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import install_crd
from jobcore.testing import schemaless_crd

pytestmark = pytest.mark.integration


def configmap(namespace: str, name: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"value": "0"},
    }


class Reconciler:
    """Counts reconciles; each takes `delay` seconds."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.started: list[Request] = []
        self.finished: list[Request] = []
        self.cancelled: list[Request] = []

    async def reconcile(self, request: Request) -> Result:
        self.started.append(request)
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled.append(request)
            raise
        self.finished.append(request)
        return Result()


def build(
    client: Client,
    namespace: str,
    reconciler: Reconciler,
    *,
    name: str,
    election: LeaderElectionConfig | None = None,
    shutdown_timeout: float = 30.0,
) -> Manager:
    manager = Manager(
        client,
        leader_election=election,
        metrics_address=("127.0.0.1", 0),
        health_address=("127.0.0.1", 0),
        graceful_shutdown_timeout=shutdown_timeout,
    )
    controller = Controller(name, reconciler, max_concurrent_reconciles=2)
    controller.watch(manager.informer(CONFIGMAPS, namespace=namespace))
    manager.add_controller(controller)
    return manager


def election(
    namespace: str, identity: str, *, release: bool = True, lease: float = 2.0
) -> LeaderElectionConfig:
    return LeaderElectionConfig(
        name="test-lease",
        namespace=namespace,
        identity=identity,
        lease_duration=lease,
        renew_deadline=lease * 0.75,
        retry_period=0.2,
        release_on_cancel=release,
    )


def serving(server: ProbeServer) -> bool:
    try:
        return server.port > 0
    except RuntimeError:
        return False


async def get_text(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


async def test_serves_health_readiness_and_controller_runtime_metrics(
    client: Client, namespace: str
) -> None:
    await client.create(CONFIGMAPS, configmap(namespace, "one"))
    reconciler = Reconciler()
    manager = build(client, namespace, reconciler, name="metrics-test")
    async with background(manager.run()):
        await eventually(lambda: reconciler.finished)
        metrics_port, health_port = (server.port for server in manager.servers)
        assert await get_text(f"http://127.0.0.1:{health_port}/healthz") == (200, "ok")
        assert await get_text(f"http://127.0.0.1:{health_port}/readyz") == (200, "ok")
        status, body = await get_text(f"http://127.0.0.1:{metrics_port}/metrics")
        assert status == 200
        for line in (
            'controller_runtime_reconcile_total{controller="metrics-test",result="success"} 1.0',
            'workqueue_adds_total{name="metrics-test"}',
            'workqueue_depth{name="metrics-test"} 0.0',
            'controller_runtime_reconcile_time_seconds_count{controller="metrics-test"} 1.0',
            'workqueue_queue_duration_seconds_count{name="metrics-test"}',
            'workqueue_work_duration_seconds_count{name="metrics-test"}',
            'controller_runtime_reconcile_errors_total{controller="metrics-test"} 0.0',
        ):
            assert line in body, line


async def test_a_shared_informer_takes_new_indexes_but_refuses_other_options(
    client: Client, namespace: str
) -> None:
    manager = Manager(client, metrics_address=None, health_address=None)
    first = manager.informer(CONFIGMAPS, namespace=namespace, max_backoff=0.5)
    by_value = manager.informer(
        CONFIGMAPS, namespace=namespace, indexers={"value": lambda o: [o["data"]["value"]]}
    )
    assert by_value is first
    with pytest.raises(ValueError, match="max_backoff can only be set by its first caller"):
        manager.informer(CONFIGMAPS, namespace=namespace, max_backoff=5.0)
    async with background(first.run()):
        await client.create(CONFIGMAPS, configmap(namespace, "indexed"))
        await eventually(
            lambda: [o["metadata"]["name"] for o in first.by_index("value", "0")] == ["indexed"]
        )


async def test_a_missing_crd_holds_back_only_its_own_controller(
    client: Client, namespace: str
) -> None:
    group = f"{namespace}.example.com"
    widgets = Resource(group, "v1", "Widget", "widgets")
    widget_reconciler, configmap_reconciler = Reconciler(), Reconciler()
    manager = Manager(client, metrics_address=None, health_address=("127.0.0.1", 0))
    late = Controller("late-crd", widget_reconciler)
    late.watch(manager.informer(widgets, namespace=namespace, max_backoff=0.5))
    manager.add_controller(late)
    present = Controller("present-crd", configmap_reconciler)
    present.watch(manager.informer(CONFIGMAPS, namespace=namespace))
    manager.add_controller(present)
    async with background(manager.run()):
        await eventually(lambda: all(serving(server) for server in manager.servers))
        url = f"http://127.0.0.1:{manager.servers[0].port}/readyz"
        await client.create(CONFIGMAPS, configmap(namespace, "served"))
        await eventually(lambda: configmap_reconciler.finished == [Request(namespace, "served")])
        status, body = await get_text(url)
        assert status == 500, "not ready while any cache is unsynced"
        assert "informers-synced" in body
        await install_crd(client, schemaless_crd(widgets))

        async def ready() -> bool:
            return await get_text(url) == (200, "ok")

        await eventually(ready, timeout=15)
        widget = {
            "apiVersion": f"{group}/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": namespace},
        }
        await client.create(widgets, widget)
        await eventually(lambda: widget_reconciler.finished == [Request(namespace, "w")])
    await client.delete(CUSTOM_RESOURCE_DEFINITIONS, f"widgets.{group}")


async def test_each_informer_is_started_once(client: Client, namespace: str) -> None:
    reconciler = Reconciler()
    manager = build(client, namespace, reconciler, name="informers-once")
    await client.create(CONFIGMAPS, configmap(namespace, "one"))
    before = api_requests("WATCH")
    async with background(manager.run()):
        await eventually(lambda: reconciler.finished)
        await eventually(lambda: api_requests("WATCH") - before >= 1)  # opened after the sync
        # A bound, not a wait: an informer started twice opens its second watch along with
        # the first; 0.5 s more of none is ample, and a slow machine cannot make one appear.
        await asyncio.sleep(0.5)
        assert api_requests("WATCH") - before == 1


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_stop_on_signals_shuts_down_on_sigterm_and_sigint(
    client: Client, namespace: str, sig: signal.Signals
) -> None:
    reconciler = Reconciler()
    manager = build(client, namespace, reconciler, name=f"signals-{sig.name.lower()}")
    await client.create(CONFIGMAPS, configmap(namespace, "signalled"))
    manager.stop_on_signals()
    try:
        running = asyncio.create_task(manager.run())
        await eventually(lambda: reconciler.finished)
        os.kill(os.getpid(), sig)
        await asyncio.wait_for(running, 20)  # returns: stopped, not killed
    finally:
        loop = asyncio.get_running_loop()
        for handled in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(handled)


class StopsAtOnce:
    async def run(self) -> None:
        return None


async def test_a_runnable_that_stops_on_its_own_fails_the_manager(
    client: Client, namespace: str
) -> None:
    manager = build(client, namespace, Reconciler(), name="stops-at-once")
    manager.add(StopsAtOnce(), needs_leader=False)
    with pytest.raises(RuntimeError, match="stopped on its own"):
        await asyncio.wait_for(manager.run(), 20)


async def test_leader_election_hands_over_between_two_managers(
    client: Client, namespace: str
) -> None:
    first, second = Reconciler(), Reconciler()
    # A 4 s lease: a takeover well under it can only come from the released lease.
    leader = build(
        client, namespace, first, name="le-a", election=election(namespace, "a", lease=4.0)
    )
    standby = build(
        client, namespace, second, name="le-b", election=election(namespace, "b", lease=4.0)
    )
    await client.create(CONFIGMAPS, configmap(namespace, "work"))
    async with background(leader.run()) as leader_task:
        await eventually(lambda: first.finished)
        async with background(standby.run()):
            # A bound, not a wait: for longer than the 4 s lease, the leader keeps renewing and
            # the standby stays out.
            await asyncio.sleep(5.0)
            assert not standby.elected.is_set()
            assert second.started == []
            leader.stop()
            await asyncio.wait_for(leader_task, 10)
            handed_over = time.monotonic()
            await eventually(lambda: second.finished, timeout=10)
            assert time.monotonic() - handed_over < 3.0, "a released lease is taken at once"
            lease = await client.get(LEASES, "test-lease", namespace)
            assert lease["spec"]["holderIdentity"] == "b"


async def test_standby_takes_over_after_lease_expires_when_leader_dies(
    client: Client, namespace: str
) -> None:
    leader = build(
        client,
        namespace,
        Reconciler(),
        name="crash-a",
        election=election(namespace, "a", release=False),
    )
    second = Reconciler()
    standby = build(client, namespace, second, name="crash-b", election=election(namespace, "b"))
    await client.create(CONFIGMAPS, configmap(namespace, "work"))
    async with background(leader.run()):
        await eventually(leader.elected.is_set)
    died = time.monotonic()  # cancelled without releasing: as if the process was killed
    async with background(standby.run()):
        await eventually(lambda: second.finished, timeout=15)
    waited = time.monotonic() - died
    assert 1.0 < waited < 8.0, f"standby should wait about one lease duration, waited {waited}"


async def test_losing_the_lease_stops_reconciling_at_once(client: Client, namespace: str) -> None:
    reconciler = Reconciler(delay=30)
    manager = build(
        client, namespace, reconciler, name="lose-lease", election=election(namespace, "a")
    )
    await client.create(CONFIGMAPS, configmap(namespace, "slow"))
    with pytest.raises(LeaderElectionLost):
        async with background(manager.run()) as task:
            await eventually(lambda: reconciler.started)
            lease = await client.get(LEASES, "test-lease", namespace)
            lease["spec"]["holderIdentity"] = "usurper"
            await client.update(LEASES, lease)
            await asyncio.wait_for(task, 10)
    assert reconciler.cancelled == [Request(namespace, "slow")]
    assert reconciler.finished == []


async def test_events_stop_the_moment_the_lease_is_lost(client: Client, namespace: str) -> None:
    manager = build(
        client, namespace, Reconciler(), name="quiet", election=election(namespace, "a")
    )
    recorder = EventRecorder(client, component="test", active=manager.elected.is_set)
    manager.add(recorder, needs_leader=False)
    subject = configmap(namespace, "subject")
    burst = 2000
    with pytest.raises(LeaderElectionLost):
        async with background(manager.run()) as task:
            await eventually(manager.elected.is_set)
            subject = await client.create(CONFIGMAPS, subject)
            for n in range(burst):  # more than the recorder writes before the loss is seen
                recorder.emit(subject, type="Normal", reason="Burst", message=f"event {n}")
            lease = await client.get(LEASES, "test-lease", namespace)
            lease["spec"]["holderIdentity"] = "usurper"
            await client.update(LEASES, lease)
            await asyncio.wait_for(task, 10)
    written = (await client.list(EVENTS, namespace))["items"]
    assert 0 < len(written) < burst / 2, f"{len(written)} of {burst} events written"
    # A bound, not a wait: nothing emitted before the loss is written after it, though 1 s
    # is far longer than the recorder takes to write a queued Event.
    await asyncio.sleep(1)
    assert len((await client.list(EVENTS, namespace))["items"]) == len(written)


async def stop_mid_reconcile(
    client: Client, namespace: str, reconciler: Reconciler, *, name: str, shutdown_timeout: float
) -> tuple[asyncio.Task[None], float]:
    """Run a manager (its controller `name`) until `reconciler` works on ConfigMap `name`, then
    stop it; return its `run()`, ended unless 10 s were not enough, and the seconds it took."""
    manager = build(client, namespace, reconciler, name=name, shutdown_timeout=shutdown_timeout)
    await client.create(CONFIGMAPS, configmap(namespace, name))
    async with background(manager.run()) as task:
        await eventually(lambda: reconciler.started)
        manager.stop()
        started = time.monotonic()
        await asyncio.wait([task], timeout=10)
        return task, time.monotonic() - started


async def test_graceful_shutdown_lets_in_flight_reconciles_finish(
    client: Client, namespace: str
) -> None:
    reconciler = Reconciler(delay=1.0)
    run, took = await stop_mid_reconcile(
        client, namespace, reconciler, name="slow", shutdown_timeout=10
    )
    assert run.done() and not run.cancelled() and run.exception() is None
    assert took < 5
    assert reconciler.finished == [Request(namespace, "slow")]
    assert reconciler.cancelled == []


async def test_graceful_shutdown_is_bounded_by_its_timeout(client: Client, namespace: str) -> None:
    reconciler = Reconciler(delay=60)
    run, took = await stop_mid_reconcile(
        client, namespace, reconciler, name="stuck", shutdown_timeout=1.0
    )
    assert run.done() and (run.cancelled() or run.exception() is None)
    assert took < 3
    assert reconciler.cancelled == [Request(namespace, "stuck")]


async def test_the_lease_is_won_and_held_past_a_rate_limited_clients_backlog(
    kubeconfig_path: str, namespace: str
) -> None:
    async with await Client.from_kubeconfig(kubeconfig_path, qps=10.0, burst=1) as slow:
        # 300 requests take the client's tokens for the next 30 s; lease requests, 5 a
        # second at most here, have tokens of their own.
        backlog = [
            asyncio.create_task(slow.get(CONFIGMAPS, f"none-{i}", namespace)) for i in range(300)
        ]
        manager = build(
            slow, namespace, Reconciler(), name="backlog", election=election(namespace, "only")
        )
        try:
            async with background(manager.run()):
                await asyncio.wait_for(manager.elected.wait(), timeout=5)
                await asyncio.sleep(3.0)  # renewed every 0.2 s, within 1.5 s each
                assert manager.elected.is_set()
        finally:
            for task in backlog:
                task.cancel()
            await asyncio.gather(*backlog, return_exceptions=True)
