"""The controller's peak memory against one tenant's large objects, running and after a restart.

A tenant needs no permission beyond its own namespace to write, at once: ConfigMaps of 900 KB
labelled with the name of its own paused MPIJob and owned by it, Pods of 1.2 MB owned by
another of its jobs (children the job layer's caches select), and MPIJobs of 1.2 MB each,
which the controller refuses as InvalidSpec (over 256 KiB). `jobcore run` runs while they are
written; then a second `jobcore run` starts against them, as after an OOM kill or a leader's
failover, and lists them all. The figures are each process's peak RSS (VmHWM). The
Deployment's limit is 512 Mi; the target is under 256 MB.

    python -m benchmarks.bench_tenant_memory --configmaps 300 --pods 300 --jobs 240
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

from benchmarks._common import machine
from benchmarks._common import print_table
from benchmarks._common import run_benchmark
from benchmarks._controller import controller
from jobcore import CONFIGMAPS
from jobcore import NAMESPACES
from jobcore import PODS
from jobcore import Client
from jobcore import Object
from jobcore import owner_reference
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import crd_for
from jobcore.testing import ControlPlane
from jobcore.testing import eventually
from jobcore.testing import install_crd
from jobcore.testing import job_manifest
from jobcore.testing import job_status
from jobkinds.mpijob import MPIJobKind

NAMESPACE = "bench"
KIND = MPIJobKind()
TARGET_MB = 256.0
WRITES_AT_ONCE = 8


def mpijob(namespace: str, name: str, *, env_bytes: int = 0, paused: bool = False) -> Object:
    """An MPIJob of two workers; `env_bytes` of environment in its worker template."""
    container: Object = {"name": "mpi-worker", "image": "mpi:latest"}
    if env_bytes:
        chunk = 4000
        container["env"] = [
            {"name": f"V{i}", "value": "x" * chunk} for i in range(env_bytes // chunk)
        ]
    spec: Object = {
        "worker": {
            "replicas": 2,
            "cmd": ["./train"],
            "template": {"spec": {"containers": [container]}},
        }
    }
    if paused:
        spec["runMode"] = {"pause": {"enabled": True}}
    return job_manifest(KIND, spec, name=name, namespace=namespace, uid=None)


def _bulk_metadata(owner: Object, index: int) -> Object:
    """The metadata of `owner`'s bulk child `index`: labelled with its name and owned by it."""
    meta = owner["metadata"]
    return {
        "name": f"{meta['name']}-bulk-{index}",
        "namespace": meta["namespace"],
        "labels": {JOB_NAME_LABEL: meta["name"]},
        "ownerReferences": [owner_reference(owner)],
    }


def configmap_of(owner: Object, index: int, size: int) -> Object:
    """A ConfigMap of `size` bytes labelled with `owner`'s name and owned by it."""
    metadata = _bulk_metadata(owner, index)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": {"blob": "x" * size},
    }


def pod_of(owner: Object, index: int, size: int) -> Object:
    """A Pod of about `size` bytes of environment labelled with `owner`'s name and owned by it;
    its values its own (the caches share equal parts between objects)."""
    env = [{"name": f"V{i}", "value": f"{index:05}{i:05}" * 400} for i in range(size // 4000)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _bulk_metadata(owner, index),
        "spec": {"containers": [{"name": "bulk", "image": "bulk:latest", "env": env}]},
    }


@dataclasses.dataclass(frozen=True, kw_only=True)
class HostileShape:
    """What one tenant writes: `configmaps` ConfigMaps of `configmap_kb` KB owned by its paused
    job, `pods` Pods of `pod_kb` KB owned by a refused one, and `jobs` MPIJobs of `job_kb` KB
    (over the spec limit: refused)."""

    configmaps: int
    configmap_kb: int
    pods: int
    pod_kb: int
    jobs: int
    job_kb: int

    @property
    def total_mb(self) -> float:
        kb = self.configmaps * self.configmap_kb + self.pods * self.pod_kb
        return (kb + self.jobs * self.job_kb) / 1000


async def write_hostile_objects(client: Client, namespace: str, shape: HostileShape) -> None:
    """The paused job `owner` and its bulky ConfigMaps, and the big MPIJobs, the first of them
    with the bulky Pods (a refused job's pods stay, as its run policy keeps them), written a
    few at a time."""
    configmaps, pods = shape.configmaps, shape.pods
    owner = await client.create(KIND.resource, mpijob(namespace, "owner", paused=True))
    holder = await client.create(KIND.resource, big_job(namespace, 0, shape.job_kb))
    limit = asyncio.Semaphore(WRITES_AT_ONCE)

    async def write(index: int) -> None:
        async with limit:  # each object built only when it is sent: they are large
            if index < configmaps:
                await client.create(
                    CONFIGMAPS, configmap_of(owner, index, shape.configmap_kb * 1000)
                )
            elif (index := index - configmaps) < pods:
                await client.create(PODS, pod_of(holder, index, shape.pod_kb * 1000))
            else:
                await client.create(
                    KIND.resource, big_job(namespace, index - pods + 1, shape.job_kb)
                )

    await asyncio.gather(*(write(i) for i in range(configmaps + pods + shape.jobs - 1)))


def big_job(namespace: str, index: int, job_kb: int) -> Object:
    return mpijob(namespace, f"big-{index}", env_bytes=job_kb * 1000)


async def refused(client: Client, namespace: str, jobs: int) -> bool:
    """Whether every big job's status says Failed (InvalidSpec)."""
    for i in range(jobs):
        status = await job_status(client, KIND.resource, namespace, f"big-{i}")
        if status.get("phase") != "Failed":
            return False
    return True


async def main(**options: int) -> None:
    shape = HostileShape(**options)
    print(machine())
    async with ControlPlane() as plane:
        client = await Client.from_kubeconfig(plane.kubeconfig_path)
        kubeconfig = plane.kubeconfig_path
        await client.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
        await install_crd(client, crd_for(KIND))
        async with controller(kubeconfig, NAMESPACE, "mpijob") as first:
            started = time.monotonic()
            await write_hostile_objects(client, NAMESPACE, shape)
            written = time.monotonic() - started
            await eventually(
                lambda: refused(client, NAMESPACE, shape.jobs), timeout=300, interval=1
            )
            steady = first.peak_rss_mb()
        async with controller(kubeconfig, NAMESPACE, "mpijob") as second:
            await eventually(second.ready, timeout=300, interval=0.2)
            await asyncio.sleep(2)
            restart = second.peak_rss_mb()
        await client.close()
    print_table(
        [
            ("objects written (MB)", f"{shape.total_mb:.0f}"),
            ("written in (s)", f"{written:.1f}"),
            ("peak RSS while written (MB)", f"{steady:.0f}", f"< {TARGET_MB:.0f}"),
            ("peak RSS of a restart (MB)", f"{restart:.0f}", f"< {TARGET_MB:.0f}"),
        ]
    )


if __name__ == "__main__":
    run_benchmark(
        main,
        __doc__,
        configmaps=(int, 300, "bulky ConfigMaps owned by the tenant's paused job"),
        configmap_kb=(int, 900),
        pods=(int, 300, "bulky Pods owned by the tenant's paused job"),
        pod_kb=(int, 1200),
        jobs=(int, 240, "MPIJobs over the spec limit"),
        job_kb=(int, 1200),
    )
