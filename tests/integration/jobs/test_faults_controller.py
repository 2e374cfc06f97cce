"""Faults of the controller process: killed with SIGKILL mid-work, and a standby replica.

The controller runs as users run it, `python -m controllers.cli run`, in subprocesses against
the session's API server; the simulated node runs in the test process. The tests assert what
a user sees: job statuses, pods, leases and each replica's `/metrics`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from jobcore import CONFIGMAPS
from jobcore import EVENTS
from jobcore import LEASES
from jobcore import PODS
from jobcore import SECRETS
from jobcore import SERVICES
from jobcore import Client
from jobcore import Object
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import crd_for
from jobcore.testing import ControlPlane
from jobcore.testing import FaultProxy
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import install_crd
from jobcore.testing import live_pods
from jobcore.testing import wait_for_phases
from jobkinds.mpijob import MPIJobKind
from tests.support.commands import run_args
from tests.support.mpijobs import mpijob
from tests.support.mpijobs import pods_of

pytestmark = pytest.mark.integration

KIND = MPIJobKind()
MPIJOBS = KIND.resource
LAUNCHER = f"{REPLICA_TYPE_LABEL}=launcher"
LEASE_DURATION = 15.0
"""The CLI's lease duration (LeaderElectionConfig's default)."""
WRITES = ("POST", "PUT", "PATCH", "DELETE")
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
"""Metric samples by name and sorted labels."""


class ControllerProcess:
    """`jobcore run` in a subprocess scoped to one namespace; its log goes to a file."""

    def __init__(self, kubeconfig_path: str, namespace: str, log: Path, *args: str) -> None:
        self.log = log
        self._argv = [
            sys.executable,
            "-m",
            "controllers.cli",
            "--log-format",
            "json",
            *run_args(kubeconfig_path, namespace),
            "--kinds",
            "mpijob",
            *args,
        ]
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        with self.log.open("ab") as out:
            self._process = await asyncio.create_subprocess_exec(
                *self._argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

    def signal(self, sig: signal.Signals) -> None:
        assert self._process is not None
        self._process.send_signal(sig)

    async def wait(self, timeout: float) -> int:
        """Its exit status, once it exits within `timeout` seconds."""
        assert self._process is not None
        return await asyncio.wait_for(self._process.wait(), timeout)

    async def kill(self) -> None:
        """SIGKILL: no graceful shutdown, no lease release, requests cut off mid-flight."""
        assert self._process is not None
        self._process.send_signal(signal.SIGKILL)
        await self._process.wait()

    async def close(self) -> None:
        if self._process is not None and self._process.returncode is None:
            self._process.kill()
            await self._process.wait()

    def log_lines(self) -> list[dict[str, object]]:
        lines = []
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        for raw in text.splitlines():
            try:
                lines.append(json.loads(raw))
            except ValueError:
                lines.append({"event": raw})
        return lines

    def log_tail(self, lines: int = 40) -> str:
        if not self.log.exists():
            return "(not started)"
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    async def metrics_url(self, timeout: float = 30.0) -> str:
        """The URL of its `/metrics`: of the ports it logs serving, the one that has it."""
        async with asyncio.timeout(timeout):
            while True:
                ports = [line["port"] for line in self.log_lines() if line["event"] == "serving"]
                for port in ports:
                    url = f"http://127.0.0.1:{port}/metrics"
                    if (await scrape(url)) is not None:
                        return url
                await asyncio.sleep(0.1)


async def scrape(url: str) -> Samples | None:
    """The samples a `/metrics` URL serves by (name, sorted labels); None if it does not."""
    try:
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            if response.status != 200:
                return None
            text = await response.text()
    except aiohttp.ClientError:
        return None
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def total(samples: Samples, metric: str, labels: dict[str, str]) -> float:
    """The sum of the samples of `metric` whose labels include `labels`."""
    return sum(
        value
        for (name, found), value in samples.items()
        if name == metric and labels.items() <= dict(found).items()
    )


@pytest.fixture
async def processes(
    kubeconfig_path: str, namespace: str, tmp_path: Path
) -> AsyncIterator[Callable[..., ControllerProcess]]:
    """`make(name, *args, kubeconfig=None)`: a controller process (of the session's API server
    unless `kubeconfig` says otherwise); all are killed after the test."""
    made: list[ControllerProcess] = []

    def make(name: str, *args: str, kubeconfig: str | None = None) -> ControllerProcess:
        log = tmp_path / f"{name}.log"
        made.append(ControllerProcess(kubeconfig or kubeconfig_path, namespace, log, *args))
        return made[-1]

    try:
        yield make
    finally:
        for process in made:
            await process.close()
            print(f"--- the end of {process.log.name}:\n{process.log_tail()}")


@pytest.fixture
async def node(client: Client, namespace: str) -> AsyncIterator[SimulatedNode]:
    """A simulated node for the test's namespace whose launchers succeed after 0.2 s."""
    await install_crd(client, crd_for(KIND))
    node = SimulatedNode(client, name=f"node-{namespace}"[:63], namespace=namespace)
    node.when(LAUNCHER, exit_code=0, after=0.2)
    async with background(node.run()):
        await node.pods.wait_for_sync()
        yield node


class PodHistory:
    """Every uid each pod name has had, as the node's cache reported them."""

    def __init__(self) -> None:
        self.uids: dict[str, set[str]] = {}

    def on_add(self, obj: Object) -> None:
        self.uids.setdefault(obj["metadata"]["name"], set()).add(obj["metadata"]["uid"])

    def on_update(self, old: Object, new: Object) -> None:
        self.on_add(new)

    def on_delete(self, obj: Object) -> None:
        pass


@pytest.mark.timeout(150)
async def test_a_controller_killed_while_creating_pods_converges_without_duplicates(
    client: Client,
    namespace: str,
    node: SimulatedNode,
    processes: Callable[..., ControllerProcess],
) -> None:
    history = PodHistory()
    node.pods.add_handler(history)
    names = [f"job-{i:03}" for i in range(100)]
    await asyncio.gather(*(client.create(MPIJOBS, mpijob(namespace, n)) for n in names))
    first = processes("first")
    await first.start()

    async def creating() -> bool:
        return len((await client.list(PODS, namespace))["items"]) >= 40

    await eventually(creating, timeout=60, interval=0.05)
    await first.kill()
    at_kill = {
        name: p["metadata"]["uid"] for name, p in (await live_pods(client, namespace)).items()
    }
    assert 40 <= len(at_kill) < len(pods_of(names)), "killed in the middle of creating pods"

    second = processes("second")
    await second.start()
    await wait_for_phases(client, MPIJOBS, namespace, names, "Succeeded", timeout=100)

    pods = await live_pods(client, namespace)
    assert set(pods) == pods_of(names)
    assert {name: pods[name]["metadata"]["uid"] for name in at_kill} == at_kill
    twice = {name: uids for name, uids in history.uids.items() if len(uids) > 1}
    assert not twice, f"pods created twice: {twice}"
    jobs = {j["metadata"]["name"]: j for j in (await client.list(MPIJOBS, namespace))["items"]}
    for resource in (PODS, SECRETS, CONFIGMAPS, SERVICES):
        for child in (await client.list(resource, namespace))["items"]:
            (owner,) = child["metadata"]["ownerReferences"]
            assert owner["uid"] == jobs[owner["name"]]["metadata"]["uid"]

    async def announced() -> list[str]:
        events = (await client.list(EVENTS, namespace))["items"]
        return sorted(e["involvedObject"]["name"] for e in events if e["reason"] == "Succeeded")

    # Events are written in the background, after the status that ended each job.
    async def all_announced() -> bool:
        return set(await announced()) == set(names)

    await eventually(all_announced, timeout=30, interval=0.2)
    assert await announced() == names, "each job announced Succeeded once"


def writes(samples: Samples) -> float:
    """The API writes a process has sent, answered or not, from its own client metric."""
    return sum(total(samples, "rest_client_requests_total", {"method": m}) for m in WRITES)


def leading(samples: Samples | None, lease: str) -> bool:
    return (
        bool(samples)
        and total(samples or {}, "leader_election_master_status", {"name": lease}) == 1
    )


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("node")
async def test_the_standby_takes_over_a_killed_leader_within_the_lease_and_only_the_leader_writes(
    client: Client, namespace: str, processes: Callable[..., ControllerProcess]
) -> None:
    lease = f"jobcore-{uuid.uuid4().hex[:8]}"
    election = (
        "--leader-elect",
        "--leader-election-namespace",
        namespace,
        "--leader-election-id",
        lease,
    )
    leader, standby = processes("leader", *election), processes("standby", *election)
    await leader.start()
    leader_url = await leader.metrics_url()

    async def leads(url: str) -> bool:
        return leading(await scrape(url), lease)

    await eventually(lambda: leads(leader_url), timeout=30, interval=0.1)
    await standby.start()
    standby_url = await standby.metrics_url()

    first = [f"first-{i}" for i in range(5)]
    await asyncio.gather(*(client.create(MPIJOBS, mpijob(namespace, n)) for n in first))
    await wait_for_phases(client, MPIJOBS, namespace, first, "Succeeded", timeout=60)
    assert writes(await scrape(leader_url) or {}) > 0

    second = [f"second-{i}" for i in range(5)]
    await asyncio.gather(*(client.create(MPIJOBS, mpijob(namespace, n)) for n in second))
    standing_by = await scrape(standby_url)
    assert standing_by is not None and not leading(standing_by, lease)
    assert writes(standing_by) == 0, "a standby writes nothing, not even to the lease"
    await leader.kill()
    killed = time.monotonic()
    await eventually(lambda: leads(standby_url), timeout=2 * LEASE_DURATION, interval=0.1)
    took = time.monotonic() - killed
    # The leader renewed at most a retry period (2 s) before it died; its lease then lasts
    # 15 s, and the standby takes it at most half a retry period later.
    assert LEASE_DURATION - 2.5 <= took <= LEASE_DURATION + 2.0, f"took over after {took:.1f} s"
    holder = (await client.get(LEASES, lease, namespace))["spec"]["holderIdentity"]
    acquired = [line for line in standby.log_lines() if line["event"] == "acquired the lease"]
    assert [line["identity"] for line in acquired] == [holder]
    await wait_for_phases(client, MPIJOBS, namespace, [*first, *second], "Succeeded", timeout=60)
    assert writes(await scrape(standby_url) or {}) > 0


@pytest.mark.timeout(150)
@pytest.mark.usefixtures("node")
async def test_a_leader_frozen_past_its_lease_writes_nothing_once_resumed(
    client: Client,
    namespace: str,
    control_plane: ControlPlane,
    tmp_path: Path,
    processes: Callable[..., ControllerProcess],
) -> None:
    lease = f"jobcore-{uuid.uuid4().hex[:8]}"
    election = (
        *("--leader-elect", "--leader-election-namespace", namespace),
        *("--leader-election-id", lease),
        *("--leader-election-lease-duration", "4", "--leader-election-renew-deadline", "3"),
        *("--leader-election-retry-period", "1"),
    )
    # The leader's requests go through a proxy that counts them; its API rate keeps writes
    # waiting for their tokens when it is frozen, as a busy leader's are.
    async with FaultProxy(control_plane.url, control_plane.token) as proxy:
        through_proxy = proxy.kubeconfig(str(tmp_path / "proxy.kubeconfig"))
        leader = processes(
            "leader",
            *election,
            "--kube-api-qps",
            "20",
            "--kube-api-burst",
            "5",
            kubeconfig=through_proxy,
        )
        standby = processes("standby", *election)
        await leader.start()
        leader_url = await leader.metrics_url()

        async def leads(url: str) -> bool:
            return leading(await scrape(url), lease)

        def sent() -> int:
            return sum(proxy.methods[method] for method in WRITES)

        await eventually(lambda: leads(leader_url), timeout=30, interval=0.1)
        await standby.start()
        standby_url = await standby.metrics_url()
        names = [f"job-{i:02}" for i in range(30)]
        await asyncio.gather(*(client.create(MPIJOBS, mpijob(namespace, n)) for n in names))

        async def busy() -> bool:
            return sent() >= 20

        await eventually(busy, timeout=30, interval=0.01)
        leader.signal(signal.SIGSTOP)
        await eventually(lambda: leads(standby_url), timeout=30, interval=0.1)
        at_takeover = sent()
        leader.signal(signal.SIGCONT)
        assert await leader.wait(timeout=30) == 1, "the old leader exits: its lease is lost"
        after = sent() - at_takeover
        print(f"writes sent by the old leader after the takeover: {after} ({at_takeover} before)")
        assert after == 0
    await wait_for_phases(client, MPIJOBS, namespace, names, "Succeeded", timeout=90)
    assert set(await live_pods(client, namespace)) == pods_of(names)
