"""Real non-root runs: each kind's workers run sshd as an unprivileged user on port 2222.

As Kubeflow's non-root pi example: the pods run as `mpiuser` (runAsUser, runAsGroup, fsGroup),
the job's keys are mounted at /home/mpiuser/.ssh, sshd listens on 2222. The user comes from
`scripts/frameworks.sh nonroot`; under CI, without it or the framework, these tests fail.
"""

from __future__ import annotations

import pwd
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from controllers import frameworks
from controllers import realjobs
from jobcore import PODS
from jobcore import Client
from jobcore.testing import ProcessNode
from jobcore.testing import job_controller
from jobcore.testing import require
from jobkinds.colossalaijob import ColossalAIJobKind
from jobkinds.horovodjob import HorovodJobKind
from jobkinds.mpijob import MPIJobKind
from tests.realruns import run_to_end

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


@pytest.mark.timeout(180)
async def test_an_mpijob_runs_open_mpi_as_a_non_root_user(
    client: Client, namespace: str, process_node: ProcessNode, folder: Path, user: pwd.struct_passwd
) -> None:
    require(frameworks.missing("openmpi4"))
    program = realjobs.mpi_program("openmpi", folder)
    command = ["/bin/sh", "-c", SAY_WHO, "sh", *program]
    job = realjobs.mpi_job("openmpi", folder, command, name="nonroot", namespace=namespace)
    job = realjobs.nonroot(job, user)
    async with job_controller(client, MPIJobKind(), namespace=namespace):
        status, log = await run_to_end(
            client, process_node, MPIJobKind.resource, job, container="mpi-launcher"
        )
        await assert_sshd_as_user_on_2222(client, namespace, "nonroot-worker-0")
    assert status["phase"] == "Succeeded", log
    ids = (str(user.pw_uid), str(user.pw_gid))
    assert who(log) == {(*ids, "nonroot-worker-0"), (*ids, "nonroot-worker-1")}, log
    ranks = [line for line in log.splitlines() if line.startswith("rank ")]
    assert len(ranks) == 4 and all(line.endswith("sum=10") for line in ranks), log


@pytest.mark.timeout(240)
async def test_a_horovodjob_runs_horovodrun_as_a_non_root_user(
    client: Client, namespace: str, process_node: ProcessNode, folder: Path, user: pwd.struct_passwd
) -> None:
    require(frameworks.missing("horovod"))
    command = ["/bin/sh", "-c", SAY_WHO, "sh", *realjobs.horovod_allreduce(folder)]
    job = realjobs.nonroot(realjobs.horovod_job(command, name="hvd", namespace=namespace), user)
    async with job_controller(client, HorovodJobKind(), namespace=namespace):
        status, log = await run_to_end(
            client, process_node, HorovodJobKind.resource, job, container="launcher", timeout=180
        )
        await assert_sshd_as_user_on_2222(client, namespace, "hvd-worker-0")
    assert status["phase"] == "Succeeded", log
    ids = (str(user.pw_uid), str(user.pw_gid))
    assert who(log) == {(*ids, "hvd-worker-0"), (*ids, "hvd-worker-1")}, log
    assert len(re.findall(r"rank \d of 4 on hvd-worker-\d: sum=10", log)) == 4, log


@pytest.mark.timeout(240)
async def test_a_colossalaijob_runs_colossalai_run_as_a_non_root_user(
    client: Client, namespace: str, process_node: ProcessNode, folder: Path, user: pwd.struct_passwd
) -> None:
    require(frameworks.missing("colossalai"))
    job = realjobs.nonroot(realjobs.colossalai_job(folder, name="cai", namespace=namespace), user)
    async with job_controller(client, ColossalAIJobKind(), namespace=namespace):
        status, log = await run_to_end(
            client, process_node, ColossalAIJobKind.resource, job, container="launcher", timeout=180
        )
        await assert_sshd_as_user_on_2222(client, namespace, "cai-worker-0")
        launcher = await client.get(PODS, "cai-launcher", namespace)
    assert status["phase"] == "Succeeded", log
    ids = (str(user.pw_uid), str(user.pw_gid))
    assert who(log) == {(*ids, "cai-worker-0"), (*ids, "cai-worker-1")}, log
    assert len(re.findall(r"rank \d of 4 on cai-worker-\d: sum=10", log)) == 4, log
    assert launcher["spec"]["securityContext"]["runAsUser"] == user.pw_uid
