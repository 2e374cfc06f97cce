"""MPIJob creation at scale: the controller against a plain asyncio client, on one API server.

    python -m benchmarks.bench_mpijob [--jobs 100] [--workers 8]

Target (issue 3): all workers of 100 MPIJobs x 8 created in <= 1.25 x the time a plain
concurrent asyncio client takes to create the same 1,100 objects (8 workers, a Secret, a
ConfigMap and a Service per job) on the same API server, measured in one run.
"""

from __future__ import annotations

import asyncio
import time

from benchmarks._common import cluster
from benchmarks._common import machine
from benchmarks._common import median_index
from benchmarks._common import odd_count
from benchmarks._common import print_table
from benchmarks._common import run_benchmark
from benchmarks._kinds import MPIJOB
from benchmarks._kinds import children
from jobcore import NAMESPACES
from jobcore import PODS
from jobcore import Client
from jobcore import Controller
from jobcore import Manager
from jobcore import Request
from jobcore import configure_logging
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import add_job_controller
from jobcore.jobs import crd_for
from jobcore.testing import api_requests
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import install_crd

KIND = MPIJOB.kind


async def floor(client: Client, namespace: str, jobs: int, workers: int) -> float:
    """Seconds for a plain client to create the same children, all requests at once."""
    await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    objects = children(MPIJOB, namespace, jobs, workers)
    started = time.perf_counter()
    await asyncio.gather(*(client.create(resource, obj) for resource, obj in objects))
    return time.perf_counter() - started


async def controller_run(
    client: Client, namespace: str, jobs: int, workers: int
) -> dict[str, float]:
    await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    manager = Manager(client, metrics_address=None, health_address=None)
    controller = add_job_controller(manager, KIND, namespace=namespace)
    # The controller's own (shared) pod cache: counting it adds no watch to the run.
    watcher = manager.informer(PODS, namespace=namespace, label_selector=JOB_NAME_LABEL)
    wanted = jobs * workers
    async with background(manager.run()):
        await manager.elected.wait()
        before = api_requests()
        cpu = time.process_time()
        started = time.perf_counter()
        await asyncio.gather(
            *(
                client.create(KIND.resource, MPIJOB.manifest(namespace, f"job-{j}", workers))
                for j in range(jobs)
            )
        )
        submitted = time.perf_counter() - started
        await eventually(lambda: len(watcher) >= wanted, timeout=300, interval=0.005)
        created = time.perf_counter() - started
        requests = api_requests() - before
        cpu = time.process_time() - cpu
        resync_writes = await writes_per_resync(manager, controller, namespace, jobs)
    return {
        "submitted": submitted,
        "created": created,
        "requests": requests,
        "cpu": cpu,
        "resync_writes": resync_writes,
    }


def _writes() -> float:
    return sum(api_requests(method) for method in ("POST", "PUT", "PATCH", "DELETE"))


async def writes_per_resync(
    manager: Manager, controller: Controller, namespace: str, jobs: int
) -> float:
    """API writes when every job, its status settled, is reconciled once more."""
    informer = manager.informer(KIND.resource, namespace=namespace)

    def settled() -> bool:
        return all((job.get("status") or {}).get("ready") for job in informer.list())

    await eventually(settled, timeout=120)
    await asyncio.sleep(1.0)  # let background Events drain
    before = _writes()
    for j in range(jobs):
        controller.queue.add(Request(namespace, f"job-{j}"))
    await eventually(lambda: not len(controller.queue) and not controller.queue.processing)
    return _writes() - before


async def main(jobs: int, workers: int, rounds: int) -> None:
    configure_logging(format="console", level="warning")
    ratios, floors, runs = [], [], []
    async with cluster("bench") as client:
        await install_crd(client, crd_for(KIND))
        await floor(client, "warm-up", 10, workers)  # open the connection pool first
        for n in range(rounds):
            # The floor runs before and after the controller, so neither meets a fuller etcd.
            before = await floor(client, f"floor-{n}-before", jobs, workers)
            run = await controller_run(client, f"jobs-{n}", jobs, workers)
            after = await floor(client, f"floor-{n}-after", jobs, workers)
            floors.append((before + after) / 2)
            runs.append(run)
            ratios.append(run["created"] / floors[-1])
    median = median_index(ratios)
    run, objects = runs[median], jobs * (workers + 3)
    print(f"machine: {machine()}")
    print(f"{jobs} MPIJobs x {workers} workers = {objects} child objects before the launchers;")
    print(
        f"{rounds} rounds, the round of median ratio shown; ratios: "
        + ", ".join(f"{r:.2f}" for r in ratios)
    )
    rows = [
        (f"plain client: the same {objects} objects at once", f"{floors[median]:.2f} s", ""),
        (f"controller: submit {jobs} jobs", f"{run['submitted']:.2f} s", ""),
        ("controller: submit jobs -> all workers created", f"{run['created']:.2f} s", ""),
        ("ratio to the plain client", f"{ratios[median]:.2f}", "<= 1.25"),
        ("API requests by this process during the run", f"{run['requests']:.0f}", ""),
        ("CPU seconds of this process during the run", f"{run['cpu']:.2f} s", ""),
        (f"API writes when all {jobs} settled jobs resync", f"{run['resync_writes']:.0f}", "0"),
    ]
    print_table(rows)


if __name__ == "__main__":
    run_benchmark(main, __doc__, jobs=(int, 100), workers=(int, 8), rounds=(odd_count, 5))
