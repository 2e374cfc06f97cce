"""Kubeflow's launcher waits for its workers' names before the user's command: the init container
as rendered, and its script run with a hostfile whose names resolve or never do."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobcore.testing import job_manifest
from jobcore.testing import job_of
from jobcore.testing import run_command
from jobkinds.kubeflow import KubeflowMPIJobKind
from jobkinds.kubeflow.children import launcher_job
from jobkinds.kubeflow.wait import WAIT_CONTAINER
from jobkinds.kubeflow.wait import wait_container
from tests.support.jobdocs import sample

KIND = KubeflowMPIJobKind()
UNRESOLVED = "pi-worker-1.pi.default.svc.cluster.invalid"
"""A name no resolver answers (`.invalid` is reserved)."""


def test_the_launcher_pod_waits_in_its_own_image_and_runs_the_users_command() -> None:
    spec = sample("kubeflow-mpijob-pi-nonroot")["spec"]
    pod = launcher_job(job_of(KIND, job_manifest(KIND, spec, name="pi", namespace="default")))
    pod_spec = pod["spec"]["template"]["spec"]
    (launcher,) = pod_spec["containers"]
    (wait,) = pod_spec["initContainers"]
    assert (launcher["command"], launcher["args"]) == (["mpirun"], ["-n", "2", "/home/mpiuser/pi"])
    assert wait["name"] == WAIT_CONTAINER
    assert (wait["image"], wait["resources"]) == (launcher["image"], launcher["resources"])
    assert wait["command"][:2] == ["/bin/sh", "-c"]
    assert wait["command"][-2:] == ["/etc/mpi/hostfile", "300"]
    assert wait["volumeMounts"] == [
        {"name": "mpi-job-config", "mountPath": "/etc/mpi", "readOnly": True}
    ]


def waited(tmp_path: Path, hosts: list[str], seconds: str) -> tuple[int, str, str]:
    """The wait run by sh over a hostfile of `hosts` (Open MPI's lines), JOBCORE_WAIT_SECONDS
    set to `seconds`: its exit code, output and errors."""
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("".join(f"{host} slots=1\n" for host in hosts))
    container = wait_container({"image": "x"}, str(hostfile), [])
    result = run_command(container["command"], tmp_path, env={"JOBCORE_WAIT_SECONDS": seconds})
    return result.returncode, result.stdout, result.stderr


def test_resolving_names_are_not_waited_for(tmp_path: Path) -> None:
    assert waited(tmp_path, ["localhost", "127.0.0.1"], "5") == (
        0,
        "jobcore: every worker's name resolves (waited 0s)\n",
        "",
    )


def test_a_name_that_never_resolves_ends_the_wait_with_124(tmp_path: Path) -> None:
    code, out, err = waited(tmp_path, ["localhost", UNRESOLVED], "1")
    assert code == 124
    assert out == f"jobcore: worker {UNRESOLVED} does not resolve yet; waiting up to 1s\n"
    assert err == f"jobcore: gave up after 1s: worker {UNRESOLVED} does not resolve\n"


@pytest.mark.parametrize("seconds", ["soon", "1;reboot", "$(id)"])
def test_a_time_that_is_no_number_is_refused(tmp_path: Path, seconds: str) -> None:
    code, _, err = waited(tmp_path, ["localhost"], seconds)
    assert code == 124
    assert err.startswith("jobcore: JOBCORE_WAIT_SECONDS must be a whole number of seconds"), err
