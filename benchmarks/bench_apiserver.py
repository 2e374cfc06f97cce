"""What each kind of request in an MPIJob's life costs the API server, in its own CPU.

    python -m benchmarks.bench_apiserver [--jobs 200] [--workers 8] [--rounds 3]

One fresh control plane; each batch is sent at once by a plain client, one batch at a time,
and charged the CPU seconds kube-apiserver and etcd used meanwhile, less what they use when
idle. The batches are the ones bench_scale's window holds: the children's creations, the
simulated node binding and starting the worker pods (what a scheduler and kubelet write), the
MPIJobs' creations, status writes and Events; every other round adds a watcher of the pods,
Secrets, ConfigMaps and MPIJobs, as the controller holds. It explains bench_scale's ratio:
requests the controller does not send share the API server inside its window.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable
from contextlib import AsyncExitStack

from benchmarks._common import machine
from benchmarks._common import print_table
from benchmarks._common import run_benchmark
from benchmarks._common import server_cpu
from benchmarks._kinds import MPIJOB
from benchmarks._kinds import children
from benchmarks.bench_scale import STARTED
from benchmarks.bench_scale import pods_seen
from jobcore import CONFIGMAPS
from jobcore import EVENTS
from jobcore import NAMESPACES
from jobcore import PODS
from jobcore import SECRETS
from jobcore import Client
from jobcore import Object
from jobcore import Resource
from jobcore import configure_logging
from jobcore.jobs import crd_for
from jobcore.testing import ControlPlane
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import install_crd

IDLE_SECONDS = 5.0
KIND = MPIJOB.kind


class Meter:
    """Charges batches the API server + etcd CPU they used beyond the idle rate."""

    def __init__(self, plane: ControlPlane, idle_rate: float) -> None:
        self.plane = plane
        self.idle_rate = idle_rate
        self.spent: dict[str, list[tuple[int, float]]] = {}

    async def charge(self, batch: str, requests: int, work: Awaitable[object]) -> None:
        cpu, started = server_cpu(self.plane), time.perf_counter()
        await work
        idle = self.idle_rate * (time.perf_counter() - started)
        self.spent.setdefault(batch, []).append((requests, server_cpu(self.plane) - cpu - idle))

    def rows(self) -> list[tuple[str, str, str]]:
        rows = []
        for batch, samples in self.spent.items():
            median = statistics.median(seconds / requests * 1000 for requests, seconds in samples)
            rows.append((batch, f"{median:.2f} ms", ""))
        return rows


async def idle_rate(plane: ControlPlane) -> float:
    cpu = server_cpu(plane)
    await asyncio.sleep(IDLE_SECONDS)
    return (server_cpu(plane) - cpu) / IDLE_SECONDS


async def drain(client: Client, namespace: str) -> None:
    """Watch what the controller watches, and throw the events away."""

    async def watch(resource: Resource) -> None:
        async for _ in client.watch(resource, namespace):
            pass

    await asyncio.gather(*(watch(r) for r in (PODS, SECRETS, CONFIGMAPS, KIND.resource)))


def status(phase: str, jobs: int, j: int) -> Object:
    condition = {
        "type": "Running" if phase != "Pending" else "Initialized",
        "status": "True",
        "reason": phase,
        "message": f"job-{j} of {jobs}: every replica is {phase.lower()}.",
    }
    return {"status": {"phase": phase, "conditions": [condition]}}


def event(namespace: str, j: int, reason: str) -> Object:
    return {
        "metadata": {"name": f"job-{j}.{reason.lower()}"},
        "involvedObject": {"kind": KIND.resource.kind, "name": f"job-{j}", "namespace": namespace},
        "reason": reason,
        "message": f"The job's replicas are {reason.lower()}.",
        "type": "Normal",
        "source": {"component": "jobcore"},
    }


async def round_(
    meter: Meter, client: Client, watcher: Client | None, n: int, *, jobs: int, workers: int
) -> None:
    namespace = f"round-{n}"
    await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    watched = " (watched)" if watcher else ""
    async with AsyncExitStack() as stack:
        if watcher:
            await stack.enter_async_context(background(drain(watcher, namespace)))
            await asyncio.sleep(1.0)
        objects = children(MPIJOB, namespace, jobs, workers)
        await meter.charge(
            f"a child's creation{watched}",
            len(objects),
            asyncio.gather(*(client.create(resource, obj) for resource, obj in objects)),
        )
        node = SimulatedNode(client, name=f"node-{namespace}", namespace=namespace, workers=64)
        async with background(node.run()):
            await node.pods.wait_for_sync()
            wanted = jobs * workers
            await meter.charge(
                f"a worker bound and started by the node{watched}",
                wanted,
                eventually(
                    lambda: pods_seen(node, wanted, "-worker-", *STARTED),
                    timeout=600,
                    interval=0.01,
                ),
            )
        await meter.charge(
            f"an MPIJob's creation{watched}",
            jobs,
            asyncio.gather(
                *(
                    client.create(KIND.resource, MPIJOB.manifest(namespace, f"job-{j}", workers))
                    for j in range(jobs)
                )
            ),
        )
        phases = ("Pending", "Running", "Succeeded")
        await meter.charge(
            f"an MPIJob status write{watched}",
            jobs * len(phases),
            asyncio.gather(
                *(
                    client.patch(
                        KIND.resource,
                        f"job-{j}",
                        status(phase, jobs, j),
                        namespace,
                        subresource="status",
                    )
                    for phase in phases
                    for j in range(jobs)
                )
            ),
        )
        await meter.charge(
            f"an Event{watched}",
            jobs * len(phases),
            asyncio.gather(
                *(
                    client.create(EVENTS, event(namespace, j, phase), namespace)
                    for phase in phases
                    for j in range(jobs)
                )
            ),
        )


async def main(jobs: int, workers: int, rounds: int) -> None:
    configure_logging(format="console", level="warning")
    async with ControlPlane() as plane:
        client = await Client.from_kubeconfig(plane.kubeconfig_path)
        watcher = await Client.from_kubeconfig(plane.kubeconfig_path)
        try:
            await install_crd(client, crd_for(KIND))
            meter = Meter(plane, await idle_rate(plane))
            for n in range(rounds * 2):
                await round_(
                    meter, client, watcher if n % 2 else None, n, jobs=jobs, workers=workers
                )
        finally:
            await client.close()
            await watcher.close()
    print(f"machine: {machine()}")
    print(
        f"API server + etcd CPU per request, batches of {jobs} MPIJobs x {workers} workers; "
        f"median of {rounds} rounds; idle rate {meter.idle_rate:.2f} CPU s/s subtracted"
    )
    print_table(meter.rows())


if __name__ == "__main__":
    run_benchmark(main, __doc__, jobs=(int, 200), workers=(int, 8), rounds=(int, 3))
