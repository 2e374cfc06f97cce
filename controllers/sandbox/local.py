"""The local sandbox: a real control plane, a node, the controllers and a sample job.

The node is simulated, or with `real` runs pods as host processes with real frameworks.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import TextIO

import yaml

from controllers.dashboard.server import serve
from controllers.dashboard.view import ClusterView
from controllers.kinds import InstalledKind
from controllers.kinds import installed_kinds
from controllers.sandbox import frameworks
from controllers.sandbox import realjobs
from jobcore import Client
from jobcore import Manager
from jobcore import NotFoundError
from jobcore import Object
from jobcore.jobs import DEFAULT_AGENT
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import AgentSource
from jobcore.jobs import JobKind
from jobcore.jobs import add_job_controller
from jobcore.jobs import crd_for
from jobcore.launcher import Transport
from jobcore.testing import ControlPlane
from jobcore.testing import ProcessNode
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import install_crd
from jobcore.testing import process_node_available

SAMPLE_JOB: Object = yaml.safe_load(
    """
apiVersion: batch.tensorstack.dev/v1beta1
kind: MPIJob
metadata:
  name: mpi-example
  namespace: default
spec:
  worker:
    replicas: 5
    extraMPIArgs: ["-N", "3", "--allow-run-as-root", "-bind-to", "none"]
    cmd: ["./random_walk", "20", "40", "2"]
    template:
      spec:
        containers:
          - name: mpi-worker
            image: t9kpublic/mpi-tutorial:2021022-2
            workingDir: /usr/local/code
  mca:
    btl: ^openib
  runPolicy:
    cleanUpWorkers: true
  ssh:
    sshdPath: /usr/sbin/sshd
  mpiHome: /usr/local
"""
)


class SandboxError(Exception):
    """The sandbox cannot run here; the message says why."""


def _status_line(job: Object) -> str:
    status = job.get("status") or {}
    tasks = " ".join(
        f"{task['type']}=" + ",".join(replica["phase"] for replica in task.get("status") or ())
        for task in status.get("tasks") or ()
    )
    return (
        f"{job['metadata']['name']}: "
        f"phase={status.get('phase', '-')} ready={status.get('ready', '-')} {tasks}"
    )


async def run_sandbox(
    *,
    keep: bool = False,
    real: bool = False,
    kind: str = "mpijob",
    mpi: str = "openmpi",
    agent: AgentSource | None = None,
    run_seconds: float = 3.0,
    out: TextIO = sys.stdout,
) -> str:
    """Run a sample job to its end, showing its status live; return its final phase.

    With `real`, pods run as host processes in their own network namespaces (ProcessNode)
    and `kind`'s sample (`realjobs`; an MPIJob with `mpi`) runs its real launcher
    over ssh, or with `agent` (the host's agent binary: the node ignores images) through
    jobcore's agent; the launcher's output is printed at the end. Without, the MPIJob sample
    runs on a simulated node.
    """
    framework = realjobs.framework(kind, mpi)
    if real and (reason := process_node_available() or frameworks.missing(framework)):
        raise SandboxError(f"cannot run the {kind} sample for real here: {reason}")
    kinds = [installed.kind for installed in installed_kinds()]
    with tempfile.TemporaryDirectory(prefix="jobcore-sandbox-") as scratch:
        folder = Path(scratch)
        transport: Transport = "ssh" if agent is None else "agent"
        sample = (
            realjobs.sample(kind, mpi, folder, transport=transport)
            if real
            else realjobs.Sample(realjobs.MPIJOBS, SAMPLE_JOB, "mpi-launcher")
        )
        async with ControlPlane() as plane:
            out.write(f"control plane up: {plane.url}\n")
            out.write(
                f"try: kubectl --kubeconfig {plane.kubeconfig_path} "
                f"get {sample.resource.plural},pods\n"
            )
            client = await Client.from_kubeconfig(plane.kubeconfig_path)
            try:
                return await _run(
                    client,
                    kinds=kinds,
                    sample=sample,
                    keep=keep,
                    real=real,
                    agent=agent or DEFAULT_AGENT,
                    run_seconds=run_seconds,
                    out=out,
                )
            finally:
                await client.close()


async def _run(
    client: Client,
    *,
    kinds: list[JobKind[Any]],
    sample: realjobs.Sample,
    keep: bool,
    real: bool,
    agent: AgentSource,
    run_seconds: float,
    out: TextIO,
) -> str:
    for kind in kinds:
        await install_crd(client, crd_for(kind))
    node: ProcessNode | SimulatedNode
    if real:
        node = ProcessNode(client)
    else:
        node = SimulatedNode(client, ready_after=0.5)
        node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=run_seconds)
    manager = Manager(client, metrics_address=("127.0.0.1", 0), health_address=None)
    for kind in kinds:
        add_job_controller(manager, kind, agent=agent)
    name = sample.job["metadata"]["name"]
    async with (
        background(node.run()),
        background(manager.run()),
        dashboard(client, installed_kinds(), out),
    ):
        await client.create(sample.resource, sample.job)
        phase = await follow(client, sample, keep=keep, out=out)
        if isinstance(node, ProcessNode):
            launcher = node.logs("default", f"{name}-launcher", sample.launcher_container)
            out.write(f"launcher output:\n{launcher}")
    return phase


@contextlib.asynccontextmanager
async def dashboard(
    client: Client, kinds: Sequence[InstalledKind], out: TextIO
) -> AsyncIterator[None]:
    """The dashboard over `kinds`' jobs, on a free local port while the block runs; its address
    is printed first, so the user can watch the sample from a browser."""
    async with serve(ClusterView(client, kinds), port=0) as url:
        out.write(f"dashboard: {url}\n")
        yield


async def follow(client: Client, sample: realjobs.Sample, *, keep: bool, out: TextIO) -> str:
    """Print the created sample's status each time it changes, until it ended (or, with
    `keep`, until it is deleted); its last phase."""
    metadata = sample.job["metadata"]
    started, phase, shown = time.monotonic(), "", ""
    while phase not in ("Succeeded", "Failed") or keep:
        await asyncio.sleep(0.5)
        try:
            job = await client.get(sample.resource, metadata["name"], metadata["namespace"])
        except NotFoundError:
            break
        line = _status_line(job)
        if line != shown:  # each change once, as it happens
            out.write(f"[{time.monotonic() - started:5.1f}s] {line}\n")
            out.flush()
            shown = line
        phase = job.get("status", {}).get("phase", "")
    return phase
