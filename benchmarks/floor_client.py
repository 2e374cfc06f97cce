"""The floor's plain client, as its own process: the controller is one too.

    python -m benchmarks.floor_client KUBECONFIG NAMESPACE JOBS WORKERS

Creates WARM_UP jobs' children in a namespace of their own (so its connections are open, as
the controller's are after its warm-up jobs), prints `ready`, waits for a line on stdin,
then creates the children of JOBS MPIJobs in NAMESPACE (which must exist), launchers
included and last, all requests at once, and prints `done`.
bench_scale times it from outside; the simulated node stays in bench_scale's process for
the floor as for the controller, so neither shares its process with the node.
"""

from __future__ import annotations

import asyncio
import sys

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
    asyncio.run(main(kubeconfig, namespace, int(jobs), int(workers)))
