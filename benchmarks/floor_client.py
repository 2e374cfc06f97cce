"""The floor's plain client, as its own process: the controller is one too.

    python -m benchmarks.floor_client KUBECONFIG NAMESPACE JOBS WORKERS

Creates the children of WARM_UP jobs named `warm-up-{j}` in NAMESPACE (which must exist), so
that its connections are open and the namespace is known to the API server's admission, as
the controller's are after its warm-up jobs. Then prints `ready`, waits for a line on stdin,
creates the children of JOBS MPIJobs named `job-{j}`, launchers included and last, all
requests at once, and prints `done`. It runs on uvloop, as `jobcore run` does.
bench_scale times it from outside; the simulated node stays in bench_scale's process for
the floor as for the controller, so neither shares its process with the node.
"""

from __future__ import annotations

import asyncio
import sys

import uvloop

from benchmarks.bench_mpijob import children
from jobcore import Client

WARM_UP = 10
"""Jobs whose children are created before the measured ones."""


async def create_all(
    client: Client, namespace: str, jobs: int, workers: int, prefix: str = "job"
) -> None:
    objects = children(namespace, jobs, workers, launchers=True, prefix=prefix)
    await asyncio.gather(*(client.create(resource, obj) for resource, obj in objects))


async def main(kubeconfig: str, namespace: str, jobs: int, workers: int) -> None:
    client = await Client.from_kubeconfig(kubeconfig)
    try:
        await create_all(client, namespace, WARM_UP, workers, prefix="warm-up")
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        await create_all(client, namespace, jobs, workers)
        print("done", flush=True)
    finally:
        await client.close()


if __name__ == "__main__":
    kubeconfig, namespace, jobs, workers = sys.argv[1:5]
    uvloop.run(main(kubeconfig, namespace, int(jobs), int(workers)))
