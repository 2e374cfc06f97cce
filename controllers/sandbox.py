"""The local sandbox: a real control plane, a simulated node, the controller and a sample MPIJob."""

from __future__ import annotations

import asyncio
import copy
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

import yaml

from controllers.allreduce import compile_allreduce
from controllers.kinds import installed_kinds
from jobcore import (
    REPLICA_TYPE_LABEL,
    Client,
    JobKind,
    Manager,
    NotFoundError,
    Object,
    Resource,
    add_job_controller,
    crd_for,
)
from jobcore.testing import (
    ControlPlane,
    ProcessNode,
    SimulatedNode,
    background,
    install_crd,
    process_node_available,
)

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


SAMPLE = Resource("batch.tensorstack.dev", "v1beta1", "MPIJob", "mpijobs")


def _show(job: Object, started: float, out: TextIO) -> None:
    status = job.get("status") or {}
    tasks = " ".join(
        f"{task['type']}=" + ",".join(replica["phase"] for replica in task.get("status") or ())
        for task in status.get("tasks") or ()
    )
    out.write(
        f"[{time.monotonic() - started:5.1f}s] {job['metadata']['name']}: "
        f"phase={status.get('phase', '-')} ready={status.get('ready', '-')} {tasks}\n"
    )
    out.flush()


def _missing_mpi() -> str | None:
    missing = [tool for tool in ("mpicc", "mpirun", "ssh") if shutil.which(tool) is None]
    if not Path("/usr/sbin/sshd").exists():
        missing.append("/usr/sbin/sshd")
    if missing:
        return (
            f"{', '.join(missing)} not found; install Open MPI and OpenSSH "
            "(scripts/host-packages.sh does, as root)"
        )
    return None


def real_job(program: Path) -> Object:
    """The sample job for real: 2 workers x 2 ranks of a compiled allreduce, as root."""
    job = copy.deepcopy(SAMPLE_JOB)
    worker = job["spec"]["worker"]
    worker.update(replicas=2, extraMPIArgs=["-N", "2"], cmd=[str(program)])
    (container,) = worker["template"]["spec"]["containers"]
    container.update(image="host", workingDir=str(program.parent))
    container["env"] = [
        {"name": "OMPI_ALLOW_RUN_AS_ROOT", "value": "1"},
        {"name": "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "value": "1"},
    ]
    job["spec"]["mpiHome"] = "/usr"
    return job


async def run_sandbox(
    *, keep: bool = False, real: bool = False, run_seconds: float = 3.0, out: TextIO = sys.stdout
) -> str:
    """Run the sample job to its end, showing its status live; return its final phase.

    With `real`, pods run as host processes in their own network namespaces (ProcessNode)
    and the job runs a real mpirun over ssh; the launcher's output is printed at the end.
    """
    if real and (reason := process_node_available() or _missing_mpi()):
        raise SandboxError(f"cannot run pods for real here: {reason}")
    kinds = [installed.kind for installed in installed_kinds()]
    with tempfile.TemporaryDirectory(prefix="jobcore-sandbox-") as scratch:
        sample = real_job(compile_allreduce(Path(scratch))) if real else SAMPLE_JOB
        async with ControlPlane() as plane:
            out.write(f"control plane up: {plane.url}\n")
            out.write(f"try: kubectl --kubeconfig {plane.kubeconfig_path} get mpijobs,pods\n")
            client = await Client.from_kubeconfig(plane.kubeconfig_path)
            try:
                return await _run(
                    client,
                    kinds=kinds,
                    sample=sample,
                    keep=keep,
                    real=real,
                    run_seconds=run_seconds,
                    out=out,
                )
            finally:
                await client.close()


async def _run(
    client: Client,
    *,
    kinds: list[JobKind[Any]],
    sample: Object,
    keep: bool,
    real: bool,
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
        add_job_controller(manager, kind)
    name = sample["metadata"]["name"]
    async with background(node.run()), background(manager.run()):
        await client.create(SAMPLE, sample)
        started, phase = time.monotonic(), ""
        while phase not in ("Succeeded", "Failed") or keep:
            await asyncio.sleep(0.5)
            try:
                job = await client.get(SAMPLE, name, "default")
            except NotFoundError:
                break
            _show(job, started, out)
            phase = job.get("status", {}).get("phase", "")
        if isinstance(node, ProcessNode):
            out.write(
                "launcher output:\n" + node.logs("default", f"{name}-launcher", "mpi-launcher")
            )
    return phase
