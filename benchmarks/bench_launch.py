"""Launching MPI through jobcore's agent beside ssh, on either node: time and memory.

    python -m benchmarks.bench_launch [--workers 2,16] [--rounds 3] [--node process|cluster]

For each transport (ssh, agent) and each worker count, an MPIJob (Open MPI 4, one slot per
worker, one rank per worker) whose ranks print the wall-clock time they started, run to its
end on a process node (real processes, real network namespaces: sshd or `jobcore-agent serve`
in every worker), or, with `--node cluster`, on the real cluster (kubelet, containerd, runc;
the controller deployed from manifests/, the agent from its image, the ssh jobs in the Open
MPI image, the agent jobs in its sshd-free one; it takes the machine's cluster and needs
`scripts/cluster.sh`'s set-up). Prints, as medians of --rounds: submit to all ranks
started; the launch's overhead, from the launcher pod's creation (first seen by polling every
20 ms) to all ranks started, which covers the launcher's start, its wait for the workers and
mpirun's daemons started through sshd or the agent; the agent's size; and each worker's
server memory (VmRSS of its sshd, or agent, once the job runs: the listener and the session
serving the rank). Target (issue 32): the agent no slower than ssh, under 5 MB RSS per
worker. Needs root and `scripts/frameworks.sh`'s Open MPI 4; builds the agent with
`scripts/agent.sh`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Awaitable
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._common import Row
from benchmarks._common import cluster
from benchmarks._common import machine
from benchmarks._common import median_index
from benchmarks._common import odd_count
from benchmarks._common import print_table
from benchmarks._common import run_benchmark
from benchmarks._common import status_mb
from controllers.sandbox import clusterjobs
from controllers.sandbox import realjobs
from controllers.sandbox.cluster import deploy
from jobcore import NAMESPACES
from jobcore import PODS
from jobcore import Client
from jobcore import NotFoundError
from jobcore.jobs import AgentSource
from jobcore.launcher import Transport
from jobcore.testing import ProcessNode
from jobcore.testing import RealCluster
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import images_folder
from jobcore.testing import job_controller
from jobcore.testing import wait_for_end
from jobkinds.mpijob import MPIJobKind

ROOT = Path(__file__).resolve().parents[1]
KIND = MPIJobKind()
NAMESPACE = "bench"
TRANSPORTS: tuple[Transport, ...] = ("ssh", "agent")
RANK = ["/bin/sh", "-c", "echo rank-started $(date +%s.%N); sleep 2"]
"""Each rank: its start time, then 2 s alive, so the servers' memory is read mid-session."""


def agent_source() -> tuple[AgentSource, int]:
    """The agent `scripts/agent.sh` builds, and its size in bytes."""
    built = subprocess.run(
        ["bash", str(ROOT / "scripts" / "agent.sh")], capture_output=True, text=True, check=True
    )
    path = built.stdout.strip().splitlines()[-1]
    return AgentSource(image="jobcore:bench", path=path), os.path.getsize(path)


def server_rss_mb(transport: Transport, pods: list[dict[str, Any]], process_node: bool) -> float:
    """VmRSS of the server processes of `transport` (sshd's listener and its sessions, or the
    agent) of `pods`: on the process node, those in their network namespaces; on the real
    cluster, those in their pods' cgroups."""
    namespaces = pod_namespaces(pods) if process_node else set()
    uids = {pod["metadata"]["uid"] for pod in pods}
    cgroups = uids | {uid.replace("-", "_") for uid in uids}
    total = 0.0
    for proc in Path("/proc").iterdir():
        try:
            if process_node:
                if os.stat(proc / "ns" / "net").st_ino not in namespaces:
                    continue
            elif not any(uid in (proc / "cgroup").read_text() for uid in cgroups):
                continue
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            serving = argv[0].endswith(b"jobcore-agent") and b"serve" in argv
            if serving if transport == "agent" else argv[0].split(b" ")[0].endswith(b"sshd:"):
                total += status_mb(int(proc.name), "VmRSS:")
        except (OSError, ValueError):
            continue
    return total


def pod_namespaces(pods: list[dict[str, Any]]) -> set[int]:
    """The process node's network namespaces of `pods`."""
    found = set()
    for pod in pods:
        with contextlib.suppress(OSError):
            uid = pod["metadata"]["uid"].replace("-", "")[:8]
            found.add(os.stat(f"/run/netns/jc-{uid}").st_ino)
    return found


async def gone(client: Client, pod: str) -> bool:
    try:
        await client.get(PODS, pod, NAMESPACE)
    except NotFoundError:
        return True
    return False


@dataclasses.dataclass
class Node:
    """Where the jobs run: how to read a launcher's output, the jobs' images, and whether the
    host's processes are the workers' only (the real cluster runs nothing else of theirs)."""

    logs: Callable[[str], Awaitable[str]]
    installs: Callable[[Transport], realjobs.Installs]
    process_node: bool


async def one_run(
    client: Client, node: Node, transport: Transport, workers: int, name: str
) -> tuple[float, float, float]:
    """Submit to all ranks started, launcher to all ranks started (s), and the workers'
    server memory per worker (MB) while the ranks run."""
    folder = Path(tempfile.mkdtemp(prefix="jobcore-bench-launch-"))
    os.chmod(folder, 0o755)
    manifest = realjobs.mpi_job(
        "openmpi",
        folder,
        RANK,
        name=name,
        namespace=NAMESPACE,
        workers=workers,
        slots=1,
        installs=node.installs(transport),
    )
    if not node.process_node:  # nothing of the host's folder in the cluster's pods
        del manifest["spec"]["worker"]["template"]["spec"]["containers"][0]["workingDir"]
    submitted = time.time()
    await client.create(
        KIND.resource, realjobs.through_agent(manifest) if transport == "agent" else manifest
    )
    launcher = f"{name}-launcher"
    while True:
        try:
            await client.get(PODS, launcher, NAMESPACE)
            break
        except NotFoundError:
            await asyncio.sleep(0.02)
    created = time.time()

    async def ranks_started() -> bool:
        return (await node.logs(launcher)).count("rank-started") >= workers

    await eventually(ranks_started, timeout=180, interval=0.1)
    pods = [await client.get(PODS, f"{name}-worker-{i}", NAMESPACE) for i in range(workers)]
    memory = await asyncio.to_thread(server_rss_mb, transport, pods, node.process_node)
    status = await wait_for_end(client, KIND.resource, NAMESPACE, name, timeout=180)
    log = await node.logs(launcher)
    if status.get("phase") != "Succeeded":
        raise RuntimeError(f"{name} ended {status.get('phase')}: {log}")
    # Its workers, which outlive the launcher, would load the next runs.
    await client.delete(KIND.resource, name, NAMESPACE)
    for pod in pods:
        with contextlib.suppress(NotFoundError):
            await client.delete(PODS, pod["metadata"]["name"], NAMESPACE, grace_period_seconds=0)
    await eventually(lambda: gone(client, f"{name}-worker-0"), timeout=120, interval=0.5)
    started = max(float(t) for t in re.findall(r"rank-started (\d+\.\d+)", log))
    return started - submitted, started - created, memory / workers


async def measure(client: Client, node: Node, workers: str, rounds: int) -> list[Row]:
    rows: list[Row] = []
    for count in (int(n) for n in workers.split(",")):
        for transport in TRANSPORTS:
            names = [f"{transport}-{count}-{n}" for n in range(rounds)]
            runs = sorted([await one_run(client, node, transport, count, n) for n in names])
            total, overhead, rss = runs[median_index([r[0] for r in runs])]
            label = f"{count} workers, {transport}"
            rows.append((f"{label}: submit to all ranks started", f"{total:.2f} s"))
            rows.append((f"{label}: launcher to all ranks started", f"{overhead:.2f} s"))
            rows.append((f"{label}: server VmRSS per worker", f"{rss:.1f} MB"))
    return rows


async def on_process_node(workers: str, rounds: int, agent: AgentSource) -> list[Row]:
    async with cluster(NAMESPACE) as client:
        process_node = ProcessNode(client, name="bench-launch", namespace=NAMESPACE)
        async with background(process_node.run()):
            await eventually(process_node.pods.has_synced, timeout=30)

            async def logs(pod: str) -> str:
                with contextlib.suppress(KeyError):  # not started yet
                    return process_node.logs(NAMESPACE, pod, "mpi-launcher")
                return ""

            node = Node(logs, lambda _: realjobs.HOST, process_node=True)
            async with job_controller(client, KIND, namespace=NAMESPACE, agent=agent):
                return await measure(client, node, workers, rounds)


async def on_real_cluster(workers: str, rounds: int) -> list[Row]:
    real = RealCluster(images_folder())
    await real.start(wait=1800)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            manifests = Path(scratch) / "manifests"
            shutil.copytree(ROOT / "manifests", manifests)
            await deploy(real, manifests)
        client = await Client.from_kubeconfig(real.kubeconfig_path)

        async def logs(pod: str) -> str:
            args = ("logs", "-n", NAMESPACE, pod, "-c", "mpi-launcher")
            return str((await real.commands.kubectl(*args, check=False)).stdout)

        try:
            await client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
            node = Node(logs, clusterjobs.installs, process_node=False)
            return await measure(client, node, workers, rounds)
        finally:
            await client.close()
    finally:
        await real.stop()


async def main(workers: str, rounds: int, node: str) -> None:
    print(f"machine: {machine()}; node: {node}")
    agent, size = agent_source()
    rows: list[Row] = [("agent binary (static, stripped)", f"{size:,} B")]
    if node == "cluster":
        rows += await on_real_cluster(workers, rounds)
    else:
        rows += await on_process_node(workers, rounds, agent)
    print_table(rows)


if __name__ == "__main__":
    run_benchmark(
        main,
        __doc__ or "",
        workers=(str, "2,16", "worker counts, comma-separated"),
        rounds=(odd_count, 3, "runs of each (odd: the median is one of them)"),
        node=(str, "process", "process (the process node) or cluster (the real cluster)"),
    )
