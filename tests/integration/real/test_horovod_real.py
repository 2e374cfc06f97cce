"""Real Horovod: HorovodJobs run the real horovodrun over ssh between process-backed pods.

The HorovodJob controller and a real API server; each pod is a set of host processes in its
own network namespace (ProcessNode). Horovod is `scripts/frameworks.sh horovod`'s build, and
the training programs are written to a folder every pod can read.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from controllers.sandbox import realjobs
from jobcore import Client
from jobcore import Object
from jobcore.testing import ProcessNode
from jobcore.testing import condition
from jobkinds.horovodjob import HorovodJobKind
from tests.support import mpioutput
from tests.support.fixtures import controller_fixture
from tests.support.realruns import run_to_end

pytestmark = pytest.mark.integration

KIND = HorovodJobKind()
HOROVODJOBS = KIND.resource

FAIL = """\
import sys

import horovod.torch as hvd

hvd.init()
sys.exit(3 if hvd.rank() == 1 else 0)
"""


@pytest.fixture
def programs(tmp_path: Path) -> Path:
    """A folder every pod can read, holding the training programs."""
    folder = tmp_path / "programs"
    folder.mkdir()
    (folder / "fail.py").write_text(FAIL)
    for path in (tmp_path, folder):
        path.chmod(0o755)
    return folder


controller = controller_fixture(KIND, framework="horovod")


def horovodjob(namespace: str, name: str, cmd: list[str], **spec: Any) -> Object:
    """The sandbox's 2 x 2 HorovodJob running `cmd`, with `spec` fields added or replaced."""
    job = realjobs.horovod_job(cmd, name=name, namespace=namespace)
    job["spec"].update(spec)
    return job


# Static ----------------------------------------------------------------------------------


@pytest.mark.timeout(240)
@pytest.mark.usefixtures("controller")
async def test_static_jobs_allreduce_over_gloo_and_mpi_and_a_rank_exiting_3_fails_its_job(
    client: Client, namespace: str, process_node: ProcessNode, programs: Path
) -> None:
    cmd = realjobs.horovod_allreduce(programs)
    backends = ("gloo", "mpi")
    jobs = [
        horovodjob(namespace, backend, cmd, horovod={"backend": backend}) for backend in backends
    ]
    jobs.append(horovodjob(namespace, "f", ["python", str(programs / "fail.py")]))
    # All three at once, to save the suite's time.
    *ended, (failed, failed_log) = await asyncio.gather(
        *(
            run_to_end(client, process_node, HOROVODJOBS, job, container="launcher", timeout=180)
            for job in jobs
        )
    )
    for backend, (status, log) in zip(backends, ended, strict=True):
        assert condition(status, "Completed")["reason"] == "Succeeded", log
        started = f"starting: horovodrun -np 4 --hostfile /etc/horovod/hostfile --{backend} python"
        assert started in log, log
        assert mpioutput.ranks(log, prefix=".*") == mpioutput.on_two_workers(backend), log

    # A rank exiting 3 makes gloo's horovodrun exit 1: the job fails with that code.
    assert failed["phase"] == "Failed", failed_log
    assert "Process 1 exit with status code 3." in failed_log, failed_log
    assert "RuntimeError: Horovod detected that one or more processes exited" in failed_log
    failure = condition(failed, "ReplicaFailure")["message"]
    assert failure == "Pod[f-launcher] exited with error code 1 (container launcher)"
