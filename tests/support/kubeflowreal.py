"""Real Kubeflow MPIJobs on the process node: what Kubeflow's pi images hold, built on the
host, and a job run to its end as a Kubeflow user watches it (the launcher Job's pod and its
output, the Kubeflow status). Shared by the ssh and the agent tests.

There are no images: what Kubeflow's images hold is in `tests/support/programs/kubeflow`, copied
into a folder every pod's user can reach (`Image`), and a container's `command` names what an
image's ENTRYPOINT would run.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controllers.sandbox import frameworks
from jobcore import Client
from jobcore import Object
from jobcore.testing import ProcessNode
from jobcore.testing import condition
from jobcore.testing import eventually
from jobcore.testing import job_status
from jobcore.testing import require
from tests.support.kubeflowjobs import MPIJOBS
from tests.support.kubeflowjobs import launcher_pods
from tests.support.kubeflowjobs import wait_for_replicas

PROGRAMS = Path(__file__).resolve().parent / "programs" / "kubeflow"
SSH_PORT = 2222
"""The non-root sshd's port: Kubeflow's images set it in their sshd_config and ssh_config."""


@dataclass(frozen=True)
class MPI:
    """An MPI as a Kubeflow MPIJob names it, its install, and the install whose mpicc builds
    the pi program (Intel's runtime has no compiler: MPICH's build runs on Intel MPI's
    libmpi.so.12, which is MPICH's ABI)."""

    implementation: str
    framework: str
    compiler: str

    def env(self) -> list[dict[str, str]]:
        """The launcher's environment: the install first on PATH (and its libraries first)."""
        home = frameworks.home(self.framework)
        path = dict.fromkeys([str(home / "bin"), "/usr/local/bin", "/usr/bin", "/bin"])
        env = [{"name": "PATH", "value": ":".join(path)}]
        if self.framework != self.compiler:
            env.append({"name": "LD_LIBRARY_PATH", "value": str(home / "lib")})
        return env


MPIS = {
    "openmpi": MPI("OpenMPI", "openmpi4", "openmpi4"),
    "mpich": MPI("MPICH", "mpich", "mpich"),
    "intel": MPI("Intel", "intel", "mpich"),
    "openmpi5": MPI("OpenMPI", "openmpi5", "openmpi5"),
}


@dataclass(frozen=True)
class Image:
    """What Kubeflow's pi image for `mpi` holds, in a folder on the host: the pi program, the
    image's entrypoint, sshd_config and ssh_config."""

    mpi: MPI
    folder: Path

    def __truediv__(self, name: str) -> str:
        return str(self.folder / name)


@contextlib.contextmanager
def pi_image(mpi: str) -> Iterator[Image]:
    """The pi image of `mpi`, in a folder the non-root user can reach (pytest's tmp_path lies
    below a folder only root may enter); the test fails, or skips outside CI, without it."""
    chosen = MPIS[mpi]
    require(frameworks.missing(chosen.framework))
    require(frameworks.missing(chosen.compiler))
    folder = Path(tempfile.mkdtemp(prefix="jobcore-kubeflow-"))
    try:
        folder.chmod(0o755)
        for name in ("entrypoint.sh", "sshd_config", "ssh_config"):
            shutil.copy(PROGRAMS / name, folder / name)
        mpicc = frameworks.home(chosen.compiler) / "bin" / "mpicc"
        subprocess.run(
            [str(mpicc), "-O2", "-o", str(folder / "pi"), str(PROGRAMS / "pi.c")], check=True
        )
        yield Image(chosen, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class Run:
    """An MPIJob run to its end: its status, its launcher pod and that pod's output."""

    namespace: str
    name: str
    status: dict[str, Any]
    launcher: Object
    log: str


def finished(status: dict[str, Any]) -> str | None:
    """Which of Succeeded and Failed is True in a Kubeflow status, if either."""
    for found in status.get("conditions") or ():
        if found["type"] in ("Succeeded", "Failed") and found["status"] == "True":
            return str(found["type"])
    return None


async def launcher_logs(
    client: Client, node: ProcessNode, namespace: str, name: str
) -> list[tuple[Object, str]]:
    """The job's launcher pods, oldest first, each with its first container's output."""
    found = []
    for pod in await launcher_pods(client, namespace, name):
        container = pod["spec"]["containers"][0]["name"]
        try:
            found.append((pod, node.logs(namespace, pod["metadata"]["name"], container)))
        except KeyError:
            found.append((pod, "(it has not run)"))
    return found


async def run_to_end(client: Client, node: ProcessNode, job: Object, *, timeout: float = 90) -> Run:
    """Create `job` and wait until it Succeeded or Failed; fail the test, with the launcher's
    output, if it does not end in `timeout` or if its launcher Job made more than one pod (a
    first launcher that failed and was replaced)."""
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    await client.create(MPIJOBS, job)

    async def ended() -> bool:
        return finished(await job_status(client, MPIJOBS, namespace, name)) is not None

    try:
        await eventually(ended, timeout=timeout, interval=0.2)
    except TimeoutError:
        status = await job_status(client, MPIJOBS, namespace, name)
        logs = await launcher_logs(client, node, namespace, name)
        raise AssertionError(f"{name} did not end in {timeout} s: {status}\n{logs}") from None
    status = await job_status(client, MPIJOBS, namespace, name)
    launchers = await launcher_logs(client, node, namespace, name)
    assert len(launchers) == 1, (launchers, status)
    ((launcher, log),) = launchers
    return Run(namespace, name, status, launcher, log)


async def assert_succeeded(client: Client, run: Run) -> None:
    """The status the seed shows for a job that ran to success: Created, Running (no longer)
    and Succeeded; the launcher succeeded, no worker counted once they are gone."""
    namespace, name, status = run.namespace, run.name, run.status
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or ()}
    assert conditions == {"Created": "True", "Running": "False", "Succeeded": "True"}, status
    succeeded = condition(status, "Succeeded")
    assert succeeded["reason"] == "MPIJobSucceeded", status
    assert succeeded["message"] == f"MPIJob {namespace}/{name} successfully completed.", status
    await wait_for_replicas(client, namespace, name, {"Launcher": {"succeeded": 1}, "Worker": {}})
