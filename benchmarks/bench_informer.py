"""Informer cache: Python memory per cached worker Pod and initial sync time, on a real API server.

    python -m benchmarks.bench_informer [--pods 5000]

Targets (issue 2): <= 10 KB per cached Pod; initial sync of 5,000 Pods in <= 5 s.
"""

from __future__ import annotations

import asyncio
import gc
import time
import tracemalloc
from typing import Any

from benchmarks._common import cluster
from benchmarks._common import machine
from benchmarks._common import print_table
from benchmarks._common import run_benchmark
from jobcore import PODS
from jobcore import Client
from jobcore import Informer
from jobcore import Object

NAMESPACE = "bench"


def worker_pod(index: int) -> Object:
    """A Pod shaped like an MPI worker a job controller renders: sshd, mounts, env, resources."""
    job = f"job-{index // 8}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job}-worker-{index % 8}",
            "namespace": NAMESPACE,
            "labels": {
                "batch.tensorstack.dev/job": job,
                "batch.tensorstack.dev/replica-type": "worker",
                "batch.tensorstack.dev/replica-index": str(index % 8),
            },
            "ownerReferences": [
                {
                    "apiVersion": "batch.tensorstack.dev/v1beta1",
                    "kind": "MPIJob",
                    "name": job,
                    "uid": f"00000000-0000-0000-0000-{index // 8:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "hostname": f"{job}-worker-{index % 8}",
            "subdomain": job,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "mpi-worker",
                    "image": "t9kpublic/horovod-sample:0.28.1-tf2.11.0-torch1.13.1-mxnet1.9.1",
                    "command": ["/usr/sbin/sshd", "-D", "-e"],
                    "env": [
                        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
                        {"name": "NCCL_DEBUG", "value": "INFO"},
                    ],
                    "ports": [{"containerPort": 22, "name": "ssh", "protocol": "TCP"}],
                    "resources": {
                        "limits": {"cpu": "4", "memory": "8Gi"},
                        "requests": {"cpu": "2", "memory": "4Gi"},
                    },
                    "volumeMounts": [
                        {"name": "ssh-auth", "mountPath": "/root/.ssh", "readOnly": True},
                        {"name": "data", "mountPath": "/data"},
                    ],
                }
            ],
            "volumes": [
                {"name": "ssh-auth", "secret": {"secretName": f"{job}-ssh", "defaultMode": 384}},
                {"name": "data", "emptyDir": {}},
            ],
        },
    }


async def create_pods(client: Client, count: int) -> None:
    gate = asyncio.Semaphore(64)

    async def create(index: int) -> None:
        async with gate:
            await client.create(PODS, worker_pod(index))

    await asyncio.gather(*(create(i) for i in range(count)))


async def sync(client: Client, **options: Any) -> tuple[float, Informer]:
    informer = Informer(client, PODS, namespace=NAMESPACE, **options)
    started = time.perf_counter()
    task = asyncio.create_task(informer.run())
    await informer.wait_for_sync()
    elapsed = time.perf_counter() - started
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return elapsed, informer


async def measure_memory(client: Client, **options: Any) -> float:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    _, informer = await sync(client, **options)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / len(informer)


async def main(pods: int) -> None:
    async with cluster(NAMESPACE) as client:
        started = time.perf_counter()
        await create_pods(client, pods)
        print(f"created {pods} pods in {time.perf_counter() - started:.1f} s")
        # Memory first: later syncs would find their shared parts already made by earlier ones.
        per_pod = await measure_memory(client)
        raw_per_pod = await measure_memory(client, transform=None, share_parts=False)
        timings = [(await sync(client))[0] for _ in range(3)]
    print(f"machine: {machine()}")
    rows = [
        (f"initial sync of {pods} pods (best of 3)", f"{min(timings):.2f} s", "<= 5 s"),
        ("memory per cached pod (default transform)", f"{per_pod / 1024:.2f} KB", "<= 10 KB"),
        ("memory per cached pod (as received)", f"{raw_per_pod / 1024:.2f} KB", ""),
    ]
    print_table(rows)


if __name__ == "__main__":
    run_benchmark(main, __doc__, pods=(int, 5000))
