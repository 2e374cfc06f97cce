"""The floor's plain client, as its own process: the controller is one too.

    python -m benchmarks.floor_client KUBECONFIG NAMESPACE JOBS WORKERS [KIND [TEMPLATE_ENV]]

Creates the children of WARM_UP jobs of KIND (a name in benchmarks._kinds.KINDS, `mpijob` by
default; with TEMPLATE_ENV env entries in each worker container, as `bench_scale
--template-env` gives the controller's jobs) named `warm-up-{j}`, of at most WARM_UP_WIDTH
workers, in NAMESPACE (which must exist), so that its connections are open and the
namespace is known to the API server's admission, as the controller's are after its warm-up
jobs. Then prints `ready`, waits for a line on stdin, creates the children of JOBS
jobs named `job-{j}`, launchers included (a late launcher last), all requests at once, and
prints `done`. It runs on uvloop, as `jobcore run` does. When the kind needs Kubernetes' Job
controller, its garbage collector runs too and would delete children whose job does not
exist: the jobs themselves are then created first, outside the measured window (no
controller runs them). bench_scale times it from outside; the simulated node stays in
bench_scale's process for the floor as for the controller, so neither shares its process
with the node.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys

import uvloop

from benchmarks._kinds import KINDS
from benchmarks._kinds import BenchKind
from benchmarks._kinds import children
from benchmarks._kinds import with_template_env
from jobcore import AlreadyExistsError
from jobcore import Client
from jobcore import Object
from jobcore import Resource
from jobcore import configure_logging

WARM_UP = 10
"""Jobs whose children are created before the measured ones."""
WARM_UP_WIDTH = 8
"""The most workers a warm-up job has: enough to open the connections a wide job uses."""


def warm_up_workers(workers: int) -> int:
    """The workers of each warm-up job before jobs of `workers` workers."""
    return min(workers, WARM_UP_WIDTH)


async def created_jobs(
    client: Client, bench: BenchKind, namespace: str, jobs: int, workers: int, *, prefix: str
) -> list[Object]:
    """The jobs, created, when a garbage collector would delete the children of absent ones;
    else none (the children then name made-up jobs)."""
    if not bench.needs_job_controller:
        return []
    manifests = [bench.manifest(namespace, f"{prefix}-{j}", workers) for j in range(jobs)]
    return list(
        await asyncio.gather(*(client.create(bench.kind.resource, job) for job in manifests))
    )


async def create_all(
    client: Client,
    bench: BenchKind,
    namespace: str,
    jobs: int,
    workers: int,
    *,
    prefix: str,
    owners: list[Object],
) -> None:
    objects = children(
        bench, namespace, jobs, workers, launchers=True, prefix=prefix, owners=owners
    )
    await asyncio.gather(*(create(client, resource, obj) for resource, obj in objects))


async def create(client: Client, resource: Resource, obj: Object) -> None:
    """Create `obj`; one already there was made by an earlier send of this create, which the
    client sent again when its answer was lost (on a loaded API server, a time-out)."""
    with contextlib.suppress(AlreadyExistsError):
        await client.create(resource, obj)


async def main(kubeconfig: str, namespace: str, jobs: int, workers: int, bench: BenchKind) -> None:
    # Logs go to stderr: stdout is the `ready` / `done` protocol with bench_scale.
    configure_logging(format="console", level="warning")
    client = await Client.from_kubeconfig(kubeconfig)
    try:
        width = warm_up_workers(workers)
        warm_up = await created_jobs(client, bench, namespace, WARM_UP, width, prefix="warm-up")
        await create_all(client, bench, namespace, WARM_UP, width, prefix="warm-up", owners=warm_up)
        owners = await created_jobs(client, bench, namespace, jobs, workers, prefix="job")
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        await create_all(client, bench, namespace, jobs, workers, prefix="job", owners=owners)
        print("done", flush=True)
    finally:
        await client.close()


if __name__ == "__main__":
    kubeconfig, namespace, jobs, workers = sys.argv[1:5]
    bench = KINDS[sys.argv[5] if len(sys.argv) > 5 else "mpijob"]
    bench = with_template_env(bench, int(sys.argv[6]) if len(sys.argv) > 6 else 0)
    uvloop.run(main(kubeconfig, namespace, int(jobs), int(workers), bench))
