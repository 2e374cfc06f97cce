"""Lease-based leader election between candidates, against a real API server."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
import uuid
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Coroutine
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from structlog.testing import capture_logs

from jobcore._runtime.client import Client
from jobcore._runtime.errors import LeaderElectionLost
from jobcore._runtime.leaderelection import LeaderElectionConfig
from jobcore._runtime.leaderelection import LeaderElector
from jobcore._runtime.metrics import REGISTRY
from jobcore._runtime.resources import LEASES
from jobcore.testing import eventually

pytestmark = pytest.mark.integration

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 2.0, 1.5, 0.2
MakeElector = Callable[..., LeaderElector]
"""`make(identity, *, on=client, release_on_cancel=True, **timings)`: a candidate for the test's
lease; `timings` (`lease_duration`, `renew_deadline`, `retry_period`) replace the module's."""


@pytest.fixture
def lease_name() -> str:
    return f"lease-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def elector(client: Client, namespace: str, lease_name: str) -> MakeElector:
    def make(
        identity: str,
        *,
        on: Client | None = None,
        release_on_cancel: bool = True,
        **timings: float,
    ) -> LeaderElector:
        timings = {
            "lease_duration": LEASE_DURATION,
            "renew_deadline": RENEW_DEADLINE,
            "retry_period": RETRY_PERIOD,
            **timings,
        }
        config = LeaderElectionConfig(
            lease_name, namespace, identity, release_on_cancel=release_on_cancel, **timings
        )
        return LeaderElector(on or client, config)

    return make


@contextlib.asynccontextmanager
async def running(work: Coroutine[Any, Any, None]) -> AsyncIterator[asyncio.Task[None]]:
    """Run `work` as a task for the block, then cancel it."""
    task = asyncio.create_task(work)
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, LeaderElectionLost):
            await task


@pytest.mark.parametrize(
    ("lease_duration", "renew_deadline", "retry_period"),
    [(10.0, 10.0, 2.0), (15.0, 2.0, 2.0), (15.0, 10.0, 0.0)],
)
def test_config_rejects_unsafe_timings(
    lease_duration: float, renew_deadline: float, retry_period: float
) -> None:
    with pytest.raises(ValueError):
        LeaderElectionConfig(
            name="n",
            namespace="ns",
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_period=retry_period,
        )


def test_default_identities_are_unique() -> None:
    first, second = LeaderElectionConfig("n", "ns"), LeaderElectionConfig("n", "ns")
    assert first.identity != second.identity
    assert first.identity.startswith(socket.gethostname() + "_")


def gauge(lease_name: str) -> float | None:
    return REGISTRY.get_sample_value("leader_election_master_status", {"name": lease_name})


async def finished_within(task: asyncio.Task[None], timeout: float) -> float:
    """Seconds until `task` finished; fails the test if it takes longer than `timeout`."""
    started = time.monotonic()
    async with asyncio.timeout(timeout):
        await asyncio.shield(task)
    return time.monotonic() - started


async def renewed(client: Client, namespace: str, lease_name: str) -> None:
    """Wait until the lease's holder renews it: its renewTime (microseconds) changes."""
    first = (await client.get(LEASES, lease_name, namespace))["spec"]["renewTime"]

    async def changed() -> bool:
        lease = await client.get(LEASES, lease_name, namespace)
        return bool(lease["spec"]["renewTime"] != first)

    await eventually(changed, timeout=10)


async def test_only_one_candidate_leads(
    client: Client, namespace: str, lease_name: str, elector: MakeElector
) -> None:
    a, b = elector("a"), elector("b")
    assert gauge(lease_name) == 0
    async with running(a.acquire()) as acquire_a, running(b.acquire()) as acquire_b:
        done, _ = await asyncio.wait(
            [acquire_a, acquire_b], timeout=10, return_when=asyncio.FIRST_COMPLETED
        )
        (winner_task,) = done
        leader, standby, identity, standby_task = (
            (a, b, "a", acquire_b) if winner_task is acquire_a else (b, a, "b", acquire_a)
        )
        acquired = (await client.get(LEASES, lease_name, namespace))["spec"]["renewTime"]
        async with running(leader.hold()) as hold:
            # A bound, not a wait: for longer than a lease nothing changes hands, as renewals
            # keep the lease; a slow machine only makes more of the standby's looks fall in it.
            await asyncio.sleep(LEASE_DURATION + 0.5)
            assert not standby_task.done()
            assert not hold.done()
            assert leader.is_leader and not standby.is_leader
            assert gauge(lease_name) == 1
            lease = await client.get(LEASES, lease_name, namespace)
            assert lease["spec"]["holderIdentity"] == identity
            assert lease["spec"]["renewTime"] != acquired, "renewed"


async def test_acquire_creates_the_lease_and_sets_the_gauge(
    client: Client, namespace: str, lease_name: str, elector: MakeElector
) -> None:
    a = elector("a")
    await asyncio.wait_for(a.acquire(), 5)
    assert a.is_leader
    assert gauge(lease_name) == 1
    spec = (await client.get(LEASES, lease_name, namespace))["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 2
    assert spec["leaseTransitions"] == 0
    assert spec["renewTime"].endswith("Z")

    await a.release()
    assert not a.is_leader
    assert gauge(lease_name) == 0
    spec = (await client.get(LEASES, lease_name, namespace))["spec"]
    assert spec.get("holderIdentity", "") == ""
    assert spec["leaseDurationSeconds"] == 1
    await a.release()  # releasing twice is harmless


@pytest.mark.parametrize("how", ["release", "cancel"])
async def test_standby_takes_over_at_once_when_the_leader_releases(
    client: Client, namespace: str, lease_name: str, elector: MakeElector, how: str
) -> None:
    a, b = elector("a"), elector("b")
    await asyncio.wait_for(a.acquire(), 5)
    async with running(a.hold()) as hold, running(b.acquire()) as acquire_b:
        await renewed(client, namespace, lease_name)  # b has looked meanwhile, every 0.1 s
        assert not acquire_b.done()
        if how == "release":
            await a.release()
            await finished_within(hold, 1.0)  # hold() returns once released
        else:
            hold.cancel()
        took = await finished_within(acquire_b, LEASE_DURATION)
    assert took < 1.0
    assert b.is_leader and not a.is_leader
    assert gauge(lease_name) == 1
    spec = (await client.get(LEASES, lease_name, namespace))["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1  # a's release kept the count; b's takeover added one


@pytest.mark.parametrize("taken_by", ["", "intruder"], ids=["renewed-unseen", "taken"])
async def test_release_after_the_lease_changed_unseen_frees_only_its_own(
    client: Client, namespace: str, lease_name: str, elector: MakeElector, taken_by: str
) -> None:
    a = elector("a")
    await asyncio.wait_for(a.acquire(), 5)
    lease = await client.get(LEASES, lease_name, namespace)
    if taken_by:
        lease["spec"]["holderIdentity"] = taken_by
    else:
        # A leader stopped in the middle of a renewal: the write reached the API server, its
        # answer never reached the leader, whose copy of the lease is one version behind.
        lease["spec"]["renewTime"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    await client.update(LEASES, lease)
    await a.release()  # its copy still names "a": the conflict makes it look again
    spec = (await client.get(LEASES, lease_name, namespace))["spec"]
    assert spec.get("holderIdentity", "") == taken_by
    assert spec["leaseDurationSeconds"] == (2 if taken_by else 1)


async def test_releasing_a_deleted_lease_is_harmless(
    client: Client, namespace: str, lease_name: str, elector: MakeElector
) -> None:
    with capture_logs() as logs:
        a = elector("a")
        await asyncio.wait_for(a.acquire(), 5)
        await client.delete(LEASES, lease_name, namespace)
        await a.release()
    assert not a.is_leader
    assert [log for log in logs if log["log_level"] == "warning"] == []


async def test_standby_waits_out_the_lease_when_the_leader_stops_renewing(
    client: Client, namespace: str, lease_name: str, elector: MakeElector
) -> None:
    a, b = elector("a", release_on_cancel=False), elector("b")
    await asyncio.wait_for(a.acquire(), 5)
    async with running(a.hold()) as hold, running(b.acquire()) as acquire_b:
        await renewed(client, namespace, lease_name)
        hold.cancel()  # a crashes: nobody renews, nobody releases
        with contextlib.suppress(asyncio.CancelledError):
            await hold
        assert not a.is_leader
        took = await finished_within(acquire_b, 2 * LEASE_DURATION)
    assert LEASE_DURATION - 2 * RETRY_PERIOD <= took <= LEASE_DURATION + 1.5
    assert b.is_leader


async def test_standby_takes_over_at_most_half_a_retry_period_after_the_lease_runs_out(
    client: Client, namespace: str, lease_name: str, elector: MakeElector
) -> None:
    # A retry period long next to the lease: looking only every 1 to 2.2 periods, a standby
    # would notice the last renewal, and the expiry, up to 2.2 s late each.
    a, b = (
        elector(i, release_on_cancel=False, lease_duration=3, renew_deadline=2.5, retry_period=1)
        for i in ("a", "b")
    )
    await asyncio.wait_for(a.acquire(), 5)
    async with running(a.hold()) as hold, running(b.acquire()) as acquire_b:
        await renewed(client, namespace, lease_name)
        hold.cancel()  # a dies just after a renewal
        took = await finished_within(acquire_b, 10)
    # b notices the renewal within half a retry period (0.5 s), then waits out the 3 s lease.
    assert 3.0 - 1.0 - 0.1 <= took <= 3.0 + 0.5 + 0.3
    assert b.is_leader


async def test_hold_raises_when_another_identity_takes_the_lease(
    client: Client, namespace: str, lease_name: str, elector: MakeElector
) -> None:
    a = elector("a")
    await asyncio.wait_for(a.acquire(), 5)
    async with running(a.hold()) as hold:
        await renewed(client, namespace, lease_name)
        # A patch, not an update: a's renewals cannot make it conflict.
        await client.patch(LEASES, lease_name, {"spec": {"holderIdentity": "intruder"}}, namespace)
        with pytest.raises(LeaderElectionLost, match="intruder"):
            await asyncio.wait_for(asyncio.shield(hold), 1.0)
    assert not a.is_leader
    assert gauge(lease_name) == 0
    await a.release()  # the intruder's lease is left alone
    spec = (await client.get(LEASES, lease_name, namespace))["spec"]
    assert spec["holderIdentity"] == "intruder"


class Partition:
    """A TCP relay to the API server whose link can be cut: then bytes stop flowing."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._linked = asyncio.Event()
        self._linked.set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    def cut(self) -> None:
        self._linked.clear()

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        up_reader, up_writer = await asyncio.open_connection(*self._target)
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            writer.close()
            up_writer.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            await self._linked.wait()
            writer.write(data)
            await writer.drain()


def api_server(kubeconfig_path: str) -> tuple[str, int]:
    config = yaml.safe_load(Path(kubeconfig_path).read_text())
    server = urlsplit(config["clusters"][0]["cluster"]["server"])
    assert server.hostname is not None and server.port is not None
    return server.hostname, server.port


def redirect(kubeconfig_path: str, port: int, to: Path) -> str:
    """Copy the kubeconfig to `to`, pointing at `port` on the same host instead."""
    config = yaml.safe_load(Path(kubeconfig_path).read_text())
    for cluster in config["clusters"]:
        server = urlsplit(cluster["cluster"]["server"])
        cluster["cluster"]["server"] = f"{server.scheme}://{server.hostname}:{port}"
    to.write_text(yaml.safe_dump(config))
    return str(to)


@pytest.fixture
async def partitioned_client(
    kubeconfig_path: str, tmp_path: Path
) -> AsyncIterator[tuple[Client, Partition]]:
    """A client whose connection to the API server runs through a `Partition`."""
    partition = Partition(*api_server(kubeconfig_path))
    port = await partition.start()
    client = await Client.from_kubeconfig(redirect(kubeconfig_path, port, tmp_path / "config"))
    yield client, partition
    await partition.stop()
    await client.close()


async def test_a_partitioned_leader_steps_down_before_the_standby_takes_over(
    client: Client,
    namespace: str,
    partitioned_client: tuple[Client, Partition],
    lease_name: str,
    elector: MakeElector,
) -> None:
    partitioned, partition = partitioned_client
    a, b = elector("a", on=partitioned), elector("b")
    await asyncio.wait_for(a.acquire(), 5)
    async with running(a.hold()) as hold, running(b.acquire()) as acquire_b:
        await renewed(client, namespace, lease_name)  # through the partition, before the cut
        partition.cut()
        cut_at = time.monotonic()
        with pytest.raises(LeaderElectionLost, match="not renewed"):
            await asyncio.wait_for(asyncio.shield(hold), 2 * RENEW_DEADLINE)
        lost_at = time.monotonic()
        await finished_within(acquire_b, 2 * LEASE_DURATION)
        taken_at = time.monotonic()
    # The upper bound leaves room for a loaded 2-core CI machine.
    assert RENEW_DEADLINE - RETRY_PERIOD - 0.1 <= lost_at - cut_at <= RENEW_DEADLINE + 1.5
    assert lost_at < taken_at  # never two leaders
    assert not a.is_leader and b.is_leader
