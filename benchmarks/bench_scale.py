"""MPIJobs at scale, driven to Succeeded: the controller process against the API server's floor.

    python -m benchmarks.bench_scale [--jobs 200] [--workers 8] [--rounds 5] [--cache-pods 10000]
        [--kind mpijob|kubeflow-mpijob] [--template-env 0]

One fresh control plane; `jobcore run` as its own process (so its RSS and CPU are its own);
the simulated node in this process binds, starts and ends the pods (launchers exit 0 after
half a second). Per run it reports the time from submitting N jobs to all workers created,
all pods (workers and launchers) started by the node, all jobs Running and all Succeeded; the
same creations by a plain concurrent asyncio client, in the kind's order (a launcher created
once the workers are Ready comes last; the floor, measured before and after the controller
and averaged), to all workers created and to all pods started, and the ratios to it; in both
windows to all workers created, the API server's CPU seconds, the pods the node had started
and the CPU time the hypervisor gave other guests (steal: the machine's speed changes by the
minute); the controller's API requests per job beyond its creations (from its own /metrics),
its peak RSS and CPU seconds, reconcile p50/p99 and errors. `--cache-pods` then measures the
controller's peak RSS with that many pods in its cache. Targets (issue 8): ratio <= 1.25,
<= 12 requests per job beyond creations, RSS <= 200 MB at 10,000 cached pods, no reconcile
error.

`--kind` picks the jobs: T9k's MPIJob (`mpijob`, the default) or Kubeflow's MPIJob
(`kubeflow-mpijob`), whose launcher is a batch/v1 Job: kube-controller-manager then runs
Kubernetes' Job controller (which creates the launcher's pod) and garbage collector, for the
floor as for the controller, and a last line gives the bound Kubeflow MPI Operator's client
defaults would put on sending the same requests.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks import floor_client
from benchmarks._common import Row
from benchmarks._common import machine
from benchmarks._common import median_index
from benchmarks._common import odd_count
from benchmarks._common import print_table
from benchmarks._common import run_benchmark
from benchmarks._common import server_cpu
from benchmarks._common import steal_seconds
from benchmarks._controller import controller
from benchmarks._controller import loop_lag
from benchmarks._controller import quantile
from benchmarks._controller import requests
from benchmarks._controller import total
from benchmarks._kinds import MPIJOB
from benchmarks._kinds import BenchKind
from benchmarks._kinds import bench_kind
from benchmarks._kinds import with_template_env
from jobcore import NAMESPACES
from jobcore import PODS
from jobcore import Client
from jobcore import configure_logging
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import crd_for
from jobcore.testing import ControlPlane
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import install_crd

LAUNCHER = f"{REPLICA_TYPE_LABEL}=launcher"
WARM_UP = floor_client.WARM_UP
warm_up_workers = floor_client.warm_up_workers
"""Jobs run before each measurement, by the controller as by the floor's client."""


@dataclass(frozen=True)
class Batch:
    """What each run submits: `jobs` jobs of `bench`'s kind, of `workers` workers each."""

    bench: BenchKind
    jobs: int
    workers: int
    template_env: int = 0
    """Env entries in each worker container of every job (`with_template_env`)."""

    @property
    def workers_with_warm_up(self) -> int:
        return WARM_UP * warm_up_workers(self.workers) + self.jobs * self.workers

    @property
    def pods_with_warm_up(self) -> int:
        return WARM_UP * (warm_up_workers(self.workers) + 1) + self.jobs * (self.workers + 1)

    @property
    def creations(self) -> int:
        """The children the controller creates: Secret, ConfigMap, Service, workers, launcher
        (a pod, or a batch Job whose pod Kubernetes' Job controller creates)."""
        return self.jobs * (self.workers + 4)


@dataclass
class Floor:
    """What the floor's plain client took: seconds to all workers created and to all pods
    started, and in the first window the API server + etcd CPU seconds, the pods the node
    had started by its end and the CPU seconds stolen by the hypervisor."""

    created: float
    started: float
    server_cpu: float
    node_started: int
    steal: float

    @staticmethod
    def mean(a: Floor, b: Floor) -> Floor:
        return Floor(
            (a.created + b.created) / 2,
            (a.started + b.started) / 2,
            (a.server_cpu + b.server_cpu) / 2,
            (a.node_started + b.node_started) // 2,
            (a.steal + b.steal) / 2,
        )


async def floor(plane: ControlPlane, client: Client, batch: Batch, namespace: str) -> Floor:
    """A plain client creating what the controller creates, all at once, launchers last.

    The client is a process of its own (benchmarks.floor_client), as the controller is, and
    the simulated node in this process binds and starts the pods as they come, for the floor
    as for the controller.
    """
    jobs, workers = batch.jobs, batch.workers
    await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    node = SimulatedNode(client, name=f"node-{namespace}", namespace=namespace, workers=64)
    async with background(node.run()):
        await node.pods.wait_for_sync()  # serving before the first pod comes, as in a run
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "benchmarks.floor_client",
            plane.kubeconfig_path,
            namespace,
            str(jobs),
            str(workers),
            batch.bench.name,
            str(batch.template_env),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            if await process.stdout.readline() != b"ready\n":
                raise RuntimeError("the floor's client did not start")
            await eventually(
                lambda: pods_seen(
                    node, WARM_UP * (warm_up_workers(workers) + 1), "warm-up-", *STARTED
                ),
                timeout=120,
                interval=0.05,
            )
            server, steal = server_cpu(plane), steal_seconds()
            started = time.perf_counter()
            process.stdin.write(b"go\n")
            await process.stdin.drain()
            await eventually(
                lambda: pods_seen(node, batch.workers_with_warm_up, "-worker-"),
                timeout=600,
                interval=0.01,
            )
            created = time.perf_counter() - started
            server, steal = server_cpu(plane) - server, steal_seconds() - steal
            node_started = pods_counted(node, "job-", *STARTED)
            if await process.stdout.readline() != b"done\n":
                raise RuntimeError("the floor's client failed")
        finally:
            await process.wait()
        pods = batch.pods_with_warm_up
        await eventually(lambda: pods_seen(node, pods, "", *STARTED), timeout=600, interval=0.01)
        return Floor(created, time.perf_counter() - started, server, node_started, steal)


def pods_counted(node: SimulatedNode, name_part: str, *phases: str) -> int:
    """The pods in the node's own pod cache named with `name_part`, in one of `phases` if any
    are given. Reading the node's cache adds no watch: no load the floor lacks."""
    return sum(
        name_part in pod["metadata"]["name"]
        and (not phases or (pod.get("status") or {}).get("phase") in phases)
        for pod in node.pods.list()
    )


def pods_seen(node: SimulatedNode, wanted: int, name_part: str, *phases: str) -> bool:
    return pods_counted(node, name_part, *phases) >= wanted


STARTED = ("Running", "Succeeded", "Failed")
"""A pod's phases once the node has started it."""


async def run_jobs(
    plane: ControlPlane, client: Client, batch: Batch, namespace: str, *options: str
) -> dict[str, float]:
    """Submit the jobs to a fresh controller process; time them to Succeeded.

    The controller first runs WARM_UP jobs to the end, as the floor's client first creates
    their children: both then start with their connections open.
    """
    bench, jobs, workers = batch.bench, batch.jobs, batch.workers
    await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    node = SimulatedNode(client, name=f"node-{namespace}", namespace=namespace, workers=64)
    node.when(LAUNCHER, exit_code=0, after=0.5)
    workers_wanted = batch.workers_with_warm_up
    pods_wanted = batch.pods_with_warm_up

    async def all_in(*phases: str, count: int = WARM_UP + jobs) -> bool:
        listed = (await client.list(bench.kind.resource, namespace))["items"]
        return len(listed) == count and all(bench.state(job) in phases for job in listed)

    async with (
        controller(plane.kubeconfig_path, namespace, bench.name, *options) as proc,
        background(node.run()),
    ):
        await node.pods.wait_for_sync()
        await asyncio.gather(
            *(
                client.create(
                    bench.kind.resource,
                    bench.manifest(namespace, f"warm-up-{j}", warm_up_workers(workers)),
                )
                for j in range(WARM_UP)
            )
        )
        await eventually(lambda: all_in("Succeeded", count=WARM_UP), timeout=120, interval=0.25)
        before = await proc.metrics()
        cpu = proc.cpu_seconds()
        server, steal = server_cpu(plane), steal_seconds()
        started = time.perf_counter()
        await asyncio.gather(
            *(
                client.create(bench.kind.resource, bench.manifest(namespace, f"job-{j}", workers))
                for j in range(jobs)
            )
        )
        await eventually(
            lambda: pods_seen(node, workers_wanted, "-worker-"), timeout=600, interval=0.01
        )
        created = time.perf_counter() - started
        server_created, steal_created = server_cpu(plane) - server, steal_seconds() - steal
        cpu_created = proc.cpu_seconds() - cpu
        node_started = pods_counted(node, "job-", *STARTED)  # the warm-up's are done
        at_created = await proc.metrics()
        await eventually(
            lambda: pods_seen(node, pods_wanted, "", *STARTED), timeout=600, interval=0.01
        )
        pods_started = time.perf_counter() - started
        await eventually(lambda: all_in("Running", "Succeeded"), timeout=600, interval=0.25)
        running = time.perf_counter() - started
        await eventually(lambda: all_in("Succeeded"), timeout=600, interval=0.25)
        succeeded = time.perf_counter() - started
        await asyncio.sleep(2.0)  # the last status writes and Events
        after = await proc.metrics()
        late, longest = loop_lag(before, after)
        return {
            "created": created,
            "running": running,
            "pods_started": pods_started,
            "succeeded": succeeded,
            "requests": requests(after) - requests(before),
            "beyond": (requests(after) - requests(before) - batch.creations) / jobs,
            "posts": requests(after, "POST") - requests(before, "POST"),
            "patches": requests(after, "PATCH") - requests(before, "PATCH"),
            "posts_created": requests(at_created, "POST") - requests(before, "POST"),
            "patches_created": requests(at_created, "PATCH") - requests(before, "PATCH"),
            "cpu": proc.cpu_seconds() - cpu,
            "cpu_created": cpu_created,
            "server_created": server_created,
            "steal_created": steal_created,
            "node_started": node_started,
            "rss": proc.peak_rss_mb(),
            "rss_end": proc.rss_mb(),
            "p50": quantile(after, 0.5) * 1000,
            "p99": quantile(after, 0.99) * 1000,
            "reconciles": (
                total(after, "controller_runtime_reconcile_total")
                - total(before, "controller_runtime_reconcile_total")
            )
            / jobs,
            "errors": total(after, "controller_runtime_reconcile_errors_total"),
            "late": late,
            "longest": longest,
        }


async def cached_pods_rss(
    plane: ControlPlane, client: Client, bench: BenchKind, count: int
) -> float:
    """The controller's peak RSS once `count` job pods are in its cache.

    The pods, ten per job, exist before the controller starts, so its first list holds them
    all. RSS is read once /readyz says every informer has loaded its first list and the
    controller has run as many reconciles as the pods have jobs: a cached pod's event
    reconciles its job, and a pod the cache dropped (it keeps only what a job controls) would
    reconcile nothing. The controller manager is stopped first: its garbage collector would
    delete these pods, whose jobs do not exist.
    """
    await plane.stop_controller_manager()
    namespace = "cache"
    await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    pod = bench.worker_template(bench.manifest(namespace, "x", 1))
    semaphore = asyncio.Semaphore(200)

    async def create(i: int) -> None:
        obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"job-{i // 10}-worker-{i % 10}",
                "labels": {JOB_NAME_LABEL: f"job-{i // 10}", REPLICA_TYPE_LABEL: "worker"},
                # The controller caches only what a job controls; these jobs need not exist.
                "ownerReferences": [
                    {
                        "apiVersion": bench.kind.resource.api_version,
                        "kind": bench.kind.resource.kind,
                        "name": f"job-{i // 10}",
                        "uid": f"00000000-0000-0000-0000-{i // 10:012d}",
                        "controller": True,
                    }
                ],
            },
            "spec": pod["spec"],
        }
        async with semaphore:
            await client.create(PODS, obj, namespace)

    await asyncio.gather(*(create(i) for i in range(count)))
    jobs = (count + 9) // 10
    async with controller(plane.kubeconfig_path, namespace, bench.name) as proc:

        async def all_reconciled() -> bool:
            return total(await proc.metrics(), "controller_runtime_reconcile_total") >= jobs

        await eventually(proc.ready, timeout=300, interval=0.1)
        await eventually(all_reconciled, timeout=300, interval=0.1)
        return proc.peak_rss_mb()


def against_the_floor(what: str, floor: float, controller: float, target: str = "") -> list[Row]:
    """The plain client's and the controller's seconds to `what`, and their ratio."""
    return [
        (f"plain client: {what}", f"{floor:.2f} s"),
        (f"controller: submit -> {what}", f"{controller:.2f} s"),
        ("ratio to the plain client", f"{controller / floor:.2f}", target),
    ]


def upstream_bound(bench: BenchKind, run: dict[str, float], jobs: int) -> str:
    """The least time the operator `bench` stands in for would take to send our requests
    through its client's default token bucket, beside our time to all Succeeded.

    A client-go operator may hold several clients of those limits (MPI Operator: one for
    Kubernetes' objects and Events, one for its MPIJobs' status), so the POSTs (children and
    Events) alone are bounded too.
    """
    if bench.upstream is None:
        return ""
    up, requests, posts = bench.upstream, run["requests"], run["posts"]
    return (
        f"bound implied by {up.operator}'s client defaults (QPS {up.qps:g}, burst {up.burst}), "
        f"not a measurement of it: our {requests:.0f} requests "
        f"({requests / jobs:.1f} per job x {jobs} jobs) would take >= "
        f"({requests:.0f} - {up.burst}) / {up.qps:g} = {up.shortest_seconds(requests):.1f} s "
        f"through one such client, the {posts:.0f} POSTs alone (children, Events) "
        f">= {up.shortest_seconds(posts):.1f} s; "
        f"ours: submit -> all jobs Succeeded in {run['succeeded']:.2f} s"
    )


async def main(
    *,
    kind: BenchKind,
    jobs: int,
    workers: int,
    rounds: int,
    cache_pods: int,
    max_concurrent_reconciles: int | None,
    template_env: int,
) -> None:
    configure_logging(format="console", level="warning")
    batch = Batch(with_template_env(kind, template_env), jobs, workers, template_env)
    options = (
        ["--max-concurrent-reconciles", str(max_concurrent_reconciles)]
        if max_concurrent_reconciles
        else []
    )
    runs, ratios, floors = [], [], []
    async with ControlPlane() as plane:
        if kind.needs_job_controller:
            await plane.start_controller_manager()
        client = await Client.from_kubeconfig(plane.kubeconfig_path)
        try:
            await install_crd(client, crd_for(kind.kind))
            for n in range(rounds):
                # The floor runs before and after the controller: neither meets a fuller etcd.
                before = await floor(plane, client, batch, f"floor-{n}-before")
                run = await run_jobs(plane, client, batch, f"jobs-{n}", *options)
                after = await floor(plane, client, batch, f"floor-{n}-after")
                runs.append(run)
                floors.append(Floor.mean(before, after))
                ratios.append(run["created"] / floors[-1].created)
            rss = await cached_pods_rss(plane, client, kind, cache_pods) if cache_pods else None
        finally:
            await client.close()
    median = median_index(ratios)
    run, plain = runs[median], floors[median]
    print(f"machine: {machine()}")
    print(
        f"{jobs} {kind.title} x {workers} workers"
        + (f" ({template_env} env entries per worker container)" if template_env else "")
        + ", driven to Succeeded by the simulated node; "
        f"the plain client creates their {batch.creations} objects;"
    )
    server = "API server + etcd"
    if kind.needs_job_controller:
        server += " + KCM"
        print(
            "kube-controller-manager (KCM) runs Kubernetes' Job controller (launcher pods) and "
            "garbage collector, for the floor as for the controller;"
        )
    print(
        f"{rounds} rounds, the round of median ratio shown; ratios: "
        + ", ".join(f"{r:.2f}" for r in ratios)
    )

    def per_round(figure: str, value: Callable[[Floor, dict[str, float]], str]) -> None:
        pairs = zip(floors, runs, strict=True)
        print(f"{figure}: " + ", ".join(value(floor, run) for floor, run in pairs))

    per_round(
        "all workers created, floor / controller",
        lambda f, r: f"{f.created:.2f} / {r['created']:.2f} s",
    )
    per_round(
        "CPU seconds stolen by the hypervisor in those windows, floor / controller",
        lambda f, r: f"{f.steal:.1f} / {r['steal_created']:.1f}",
    )
    per_round("ratios at all pods started", lambda f, r: f"{r['pods_started'] / f.started:.2f}")
    if options:
        print("jobcore run " + " ".join(options))
    rows: list[Row] = [
        *against_the_floor("all workers created", plain.created, run["created"], "<= 1.25"),
        *against_the_floor("all pods started", plain.started, run["pods_started"]),
        ("controller: submit -> all jobs Running", f"{run['running']:.2f} s"),
        ("controller: submit -> all jobs Succeeded", f"{run['succeeded']:.2f} s"),
        ("API requests by the controller", f"{run['requests']:.0f}"),
        ("  of which POST / PATCH", f"{run['posts']:.0f} / {run['patches']:.0f}"),
        (
            "  until all workers created",
            f"{run['posts_created']:.0f} / {run['patches_created']:.0f}",
        ),
        ("requests per job beyond its creations", f"{run['beyond']:.1f}", "<= 12"),
        ("controller CPU seconds", f"{run['cpu']:.1f} s"),
        ("  of which until all workers created", f"{run['cpu_created']:.1f} s"),
        (
            f"{server} CPU to all workers created: floor / controller",
            f"{plain.server_cpu:.1f} / {run['server_created']:.1f} s",
        ),
        (
            "  pods the node had started by then: floor / controller",
            f"{plain.node_started} / {run['node_started']:.0f}",
        ),
        ("controller peak RSS / RSS at the end", f"{run['rss']:.0f} / {run['rss_end']:.0f} MB"),
        ("reconciles per job", f"{run['reconciles']:.1f}"),
        ("reconcile p50 / p99", f"{run['p50']:.1f} / {run['p99']:.0f} ms"),
        (
            "controller CPU per reconcile",
            f"{run['cpu'] / (run['reconciles'] * jobs) * 1000:.1f} ms",
        ),
        ("event loop wake-ups > 0.1 s late", f"{run['late']:.0f}", "0"),
        ("  the latest within", f"{run['longest']:g} s"),
        ("reconcile errors", f"{run['errors']:.0f}", "0"),
    ]
    if rss is not None:
        rows.append((f"controller peak RSS, {cache_pods} pods cached", f"{rss:.0f} MB", "<= 200"))
    print_table(rows)
    if bound := upstream_bound(kind, run, jobs):
        print(bound)


if __name__ == "__main__":
    run_benchmark(
        main,
        __doc__,
        kind=(bench_kind, MPIJOB.name, "the jobs: mpijob (T9k's) or kubeflow-mpijob"),
        jobs=(int, 200),
        workers=(int, 8),
        rounds=(odd_count, 5),
        cache_pods=(int, 10_000),
        max_concurrent_reconciles=(int, None, "passed to jobcore run (default: its own)"),
        template_env=(int, 0, "env entries in each worker container's template"),
    )
