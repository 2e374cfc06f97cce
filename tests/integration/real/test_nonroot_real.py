"""Real non-root runs: each kind's workers run sshd as an unprivileged user on port 2222.

As Kubeflow's non-root pi example: the pods run as `mpiuser` (runAsUser, runAsGroup, fsGroup),
the job's keys are mounted at /home/mpiuser/.ssh, sshd listens on 2222. The user comes from
`scripts/frameworks.sh nonroot`; under CI, without it or the framework, these tests fail.
"""

from __future__ import annotations

import asyncio
import pwd
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controllers.sandbox import frameworks
from controllers.sandbox import realjobs
from jobcore import PODS
from jobcore import Client
from jobcore import Object
from jobcore.jobs import JobKind
from jobcore.testing import ProcessNode
from jobcore.testing import job_controller
from jobcore.testing import require
from jobkinds.colossalaijob import ColossalAIJobKind
from jobkinds.horovodjob import HorovodJobKind
from jobkinds.mpijob import MPIJobKind
from tests.support.realruns import run_to_end

pytestmark = [pytest.mark.integration]

SAY_WHO = 'echo "uid $(id -u) gid $(id -g) on $(hostname)"; exec "$@"'
"""Run by /bin/sh in front of each rank: the rank's user, then the rank itself."""


@pytest.fixture
def user() -> pwd.struct_passwd:
    require(frameworks.missing("nonroot"))
    return pwd.getpwnam(realjobs.NONROOT_USER)


@pytest.fixture
def folder() -> Iterator[Path]:
    """A folder the user can reach: pytest's tmp_path lies below a folder only root may enter."""
    path = Path(tempfile.mkdtemp(prefix="jobcore-nonroot-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def who(log: str) -> set[tuple[str, str, str]]:
    """Each rank's uid, gid and host (after the prefix horovodrun or torchrun may add)."""
    return set(re.findall(r"\buid (\d+) gid (\d+) on ([\w-]+)$", log, re.M))


async def assert_sshd_as_user_on_2222(client: Client, namespace: str, pod: str) -> None:
    """The worker pod says what the test relies on: sshd on 2222 as the user, keys in its home."""
    worker = (await client.get(PODS, pod, namespace))["spec"]
    sshd = worker["containers"][0]
    assert sshd["command"][:5] == ["/usr/sbin/sshd", "-D", "-e", "-p", "2222"], sshd
    assert sshd["readinessProbe"]["tcpSocket"] == {"port": 2222}
    assert {m["mountPath"] for m in sshd["volumeMounts"]} >= {"/home/mpiuser/.ssh"}


async def run_as(
    client: Client, node: ProcessNode, kind: JobKind[Any], job: Object, container: str
) -> tuple[dict[str, Any], str, Object]:
    """`job` run to its end by its kind's controller: its status, its launcher's output and its
    launcher pod; its first worker checked to run sshd as the user on 2222."""
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    async with job_controller(client, kind, namespace=namespace):
        status, log = await run_to_end(
            client, node, kind.resource, job, container=container, timeout=180
        )
        await assert_sshd_as_user_on_2222(client, namespace, f"{name}-worker-0")
        launcher = await client.get(PODS, f"{name}-launcher", namespace)
    return status, log, launcher


@pytest.mark.timeout(240)
async def test_each_kinds_launcher_and_workers_run_as_a_non_root_user(
    client: Client, namespace: str, process_node: ProcessNode, folder: Path, user: pwd.struct_passwd
) -> None:
    for framework in ("openmpi4", "horovod", "colossalai"):
        require(frameworks.missing(framework))
    folders = {name: folder / name for name in ("nonroot", "hvd", "cai")}
    for path in folders.values():
        path.mkdir(mode=0o755)
    ranks = ["/bin/sh", "-c", SAY_WHO, "sh", *realjobs.mpi_program("openmpi", folders["nonroot"])]
    mpi = realjobs.mpi_job(
        "openmpi", folders["nonroot"], ranks, name="nonroot", namespace=namespace
    )
    ranks = ["/bin/sh", "-c", SAY_WHO, "sh", *realjobs.horovod_allreduce(folders["hvd"])]
    horovod = realjobs.horovod_job(ranks, name="hvd", namespace=namespace)
    colossalai = realjobs.colossalai_job(folders["cai"], name="cai", namespace=namespace)
    # The three at once, to save the suite's time.
    runs = await asyncio.gather(
        run_as(client, process_node, MPIJobKind(), realjobs.nonroot(mpi, user), "mpi-launcher"),
        run_as(client, process_node, HorovodJobKind(), realjobs.nonroot(horovod, user), "launcher"),
        run_as(
            client,
            process_node,
            ColossalAIJobKind(),
            realjobs.nonroot(colossalai, user),
            "launcher",
        ),
    )
    ids = (str(user.pw_uid), str(user.pw_gid))
    for name, (status, log, _) in zip(folders, runs, strict=True):
        assert status["phase"] == "Succeeded", log
        assert who(log) == {(*ids, f"{name}-worker-0"), (*ids, f"{name}-worker-1")}, log
        assert len(re.findall(rf"rank \d of 4 on {name}-worker-\d: sum=10", log)) == 4, log
    _, _, launcher = runs[2]
    assert launcher["spec"]["securityContext"]["runAsUser"] == user.pw_uid
