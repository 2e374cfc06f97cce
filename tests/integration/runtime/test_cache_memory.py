"""Bounded cache memory against a real API server: an informer's `keep` filters its list, its
watch and a relist, labelled objects no job controls neither grow the controller's RSS nor
raise its peak by more than a few of their buffers, and a tenant's own bulky children and
oversized jobs keep it far under its limit, restarts included."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import aiohttp
import pytest

from benchmarks.bench_tenant_memory import HostileShape
from benchmarks.bench_tenant_memory import refused
from benchmarks.bench_tenant_memory import write_hostile_objects
from controllers.kinds import BUNDLED_KINDS
from controllers.kinds import installed_kinds
from jobcore import CONFIGMAPS
from jobcore import Client
from jobcore import Informer
from jobcore import Object
from jobcore import controller_of
from jobcore import owner_reference
from jobcore._runtime.listwatch import ClientListerWatcher
from jobcore._runtime.listwatch import ListWatch
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import crd_for
from jobcore.testing import SimulatedNode
from jobcore.testing import condition
from jobcore.testing import create_until_phase
from jobcore.testing import eventually
from jobcore.testing import install_crd
from jobcore.testing import job_status
from tests.integration.runtime.test_informer import Recorder
from tests.integration.runtime.test_informer import configmap
from tests.integration.runtime.test_informer import running
from tests.support.commands import start_jobcore
from tests.support.mpijobs import MPIJOBS
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration

FOREIGN_CONFIGMAPS = 200
FOREIGN_SIZE = 500_000
RSS_GROWTH_LIMIT_MB = 10.0
PEAK_RISE_LIMIT_MB = 6.0
FOREIGN_OWNER = {
    "apiVersion": "example.com/v1",
    "kind": "Widget",
    "name": "widget",
    "uid": "00000000-0000-0000-0000-000000000001",
    "controller": True,
}
"""A controller of a kind no jobcore controller runs."""
TENANT_PEAK_LIMIT_MB = 256.0


async def test_keep_filters_the_list_the_watch_and_a_relist(client: Client, namespace: str) -> None:
    owner = await client.create(CONFIGMAPS, configmap(namespace, "owner"))

    async def create(name: str, *, owned: bool) -> None:
        obj = configmap(namespace, name)
        if owned:
            obj["metadata"]["ownerReferences"] = [owner_reference(owner)]
        await client.create(CONFIGMAPS, obj)

    async def set_owner(name: str, *, owned: bool) -> None:
        refs = [owner_reference(owner)] if owned else None
        await client.patch(CONFIGMAPS, name, {"metadata": {"ownerReferences": refs}}, namespace)

    await create("listed-child", owned=True)
    await create("listed-foreign", owned=False)
    informer = Informer(
        client, CONFIGMAPS, namespace=namespace, keep=lambda obj: controller_of(obj) is not None
    )
    recorder = Recorder()
    informer.add_handler(recorder)
    async with running(informer):
        assert [o["metadata"]["name"] for o in informer.list()] == ["listed-child"]
        await create("watched-foreign", owned=False)
        await create("watched-child", owned=True)
        await set_owner("listed-child", owned=False)
        await set_owner("listed-foreign", owned=True)
        await recorder.wait_for(lambda: ("add", "listed-foreign") in recorder.events)
    await set_owner("watched-child", owned=False)
    await set_owner("watched-foreign", owned=True)
    source = ClientListerWatcher(client, CONFIGMAPS, namespace=namespace)
    await ListWatch(informer, source).relist()  # what the informer does after a 410 Gone

    assert recorder.events == [
        ("add", "listed-child"),
        ("add", "watched-child"),
        ("delete", "listed-child"),
        ("add", "listed-foreign"),
        ("delete", "watched-child"),
        ("add", "watched-foreign"),
    ]
    assert sorted(o["metadata"]["name"] for o in informer.list()) == [
        "listed-foreign",
        "watched-foreign",
    ]


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """A process's memory in MB as /proc says it: resident now (VmRSS), or at its peak (VmHWM)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} for process {pid}")


def reset_peak(pid: int) -> None:
    """Make a process's peak RSS (VmHWM) its RSS now (Linux's clear_refs)."""
    with open(f"/proc/{pid}/clear_refs", "w") as clear_refs:
        clear_refs.write("5")


@contextlib.asynccontextmanager
async def ready_controller(
    client: Client, kubeconfig: str, namespace: str, *options: str
) -> AsyncIterator[int]:
    """`jobcore run` with the bundled kinds for `namespace` (and `options`), once their CRDs are
    installed and its /readyz passes; its pid."""
    for installed in installed_kinds(BUNDLED_KINDS):
        await install_crd(client, crd_for(installed.kind))
    process = await start_jobcore(
        "--log-format",
        "json",
        "run",
        "--kubeconfig",
        kubeconfig,
        "--kinds",
        ",".join(BUNDLED_KINDS),
        "--namespace",
        namespace,
        "--metrics-bind-address",
        "off",
        "--health-probe-bind-address",
        "127.0.0.1:0",
        *options,
    )
    port: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def read_log() -> None:  # the pipe is drained all along, or the controller blocks
        assert process.stdout is not None
        async for line in process.stdout:
            entry = json.loads(line) if line.startswith(b"{") else {}
            if entry.get("event") == "serving" and not port.done():
                port.set_result(entry["port"])

    reader = asyncio.create_task(read_log())
    try:
        url = f"http://127.0.0.1:{await asyncio.wait_for(port, 30)}/readyz"

        async def ready() -> bool:
            async with aiohttp.ClientSession() as session, session.get(url) as response:
                return response.status == 200

        await eventually(ready, timeout=30, interval=0.1)
        yield process.pid
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), timeout=40)
        await reader


async def test_labelled_configmaps_no_job_controls_do_not_grow_the_controllers_memory(
    client: Client, namespace: str, kubeconfig_path: str, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=0.2)
    async with ready_controller(client, kubeconfig_path, namespace) as pid:
        # A first job warms the controller's code paths up, so only the cache can grow after.
        await create_until_phase(client, MPIJOBS, mpijob(namespace, "warm-up"), "Succeeded")
        reset_peak(pid)
        before = rss_mb(pid)

        limit = asyncio.Semaphore(16)

        async def create_foreign(index: int) -> None:
            obj: Object = configmap(namespace, f"foreign-{index}", {JOB_NAME_LABEL: "foreign"})
            obj["data"] = {"blob": "x" * FOREIGN_SIZE}
            if index % 2:
                obj["metadata"]["ownerReferences"] = [FOREIGN_OWNER]
            async with limit:
                await client.create(CONFIGMAPS, obj)

        await asyncio.gather(*(create_foreign(i) for i in range(FOREIGN_CONFIGMAPS)))
        # The job's ConfigMap comes after the foreign ones in the watch; the job reconciles
        # past its creation only once the cache has seen it, so by Succeeded it saw them all.
        await create_until_phase(
            client, MPIJOBS, mpijob(namespace, "after"), "Succeeded", timeout=60
        )
        growth = rss_mb(pid) - before
        peak = rss_mb(pid, "VmHWM") - before

    print(
        f"{FOREIGN_CONFIGMAPS} foreign ConfigMaps raised the controller's RSS by {growth:.1f} MB,"
        f" its peak by {peak:.1f} MB"
    )
    assert growth < RSS_GROWTH_LIMIT_MB, f"the controller's RSS grew by {growth:.1f} MB"
    assert peak < PEAK_RISE_LIMIT_MB, f"the controller's peak RSS rose by {peak:.1f} MB"


@pytest.mark.timeout(240)  # its own wait for the refusals is 120 s, then a restart
async def test_a_tenants_bulky_children_and_oversized_jobs_keep_the_controller_small(
    client: Client, namespace: str, kubeconfig_path: str
) -> None:
    """ConfigMaps of 900 KB owned by the tenant's own paused job, Pods of 1.2 MB owned by a
    refused one, and MPIJobs of 1.2 MB (refused as over the spec limit), written while the
    controller runs and listed by a restarted one: neither process's peak RSS reaches
    TENANT_PEAK_LIMIT_MB (the benchmark bench_tenant_memory writes the issue's 300 and 240,
    and 300 pods)."""
    shape = HostileShape(
        configmaps=60, configmap_kb=900, pods=120, pod_kb=1200, jobs=40, job_kb=1200
    )
    async with ready_controller(client, kubeconfig_path, namespace) as pid:
        await write_hostile_objects(client, namespace, shape)
        await eventually(lambda: refused(client, namespace, shape.jobs), timeout=120)
        running = rss_mb(pid, "VmHWM")
    big = condition(await job_status(client, MPIJOBS, namespace, "big-0"), "Failed")
    assert big["reason"] == "InvalidSpec", big
    assert "bytes as JSON, more than the 262,144 bytes" in big["message"], big
    async with ready_controller(client, kubeconfig_path, namespace) as pid:
        await asyncio.sleep(2)  # ready: every cache listed everything
        restarted = rss_mb(pid, "VmHWM")
    print(f"peak RSS: {running:.0f} MB running, {restarted:.0f} MB after a restart")
    assert running < TENANT_PEAK_LIMIT_MB
    assert restarted < TENANT_PEAK_LIMIT_MB
