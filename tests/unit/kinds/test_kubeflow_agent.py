"""Kubeflow's MPIJob with `jobcore.dev/transport: agent`, on plain objects: what its pods run in
place of sshd, what is refused, and a launch that reached too few workers failing the job."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import pytest

from jobcore import BATCH_JOBS
from jobcore import Object
from jobcore.jobs import AgentSource
from jobcore.jobs import Job
from jobcore.jobs import parse_job
from jobcore.launcher import AGENT
from jobcore.launcher import AGENT_KEY
from jobcore.testing import by_name
from jobcore.testing import env_of
from jobcore.testing import error_messages
from jobcore.testing import observed_of
from jobcore.testing import pod_of
from jobcore.testing import terminated
from jobkinds.kubeflow import KubeflowMPIJobKind
from jobkinds.kubeflow.children import launcher_job
from jobkinds.kubeflow.spec import KubeflowMPIJobSpec
from jobkinds.kubeflow.transport import TRANSPORT_ANNOTATION
from jobkinds.mpi.flavours import Implementation
from jobkinds.mpi.flavours import agent_shell_env
from jobkinds.mpi.flavours import flavour
from tests.support.kubeflowjobs import mpijob

KIND = KubeflowMPIJobKind()
SOURCE = AgentSource(image="registry.example/jobcore:1.2", path="/bin/jobcore-agent")


def manifest(transport: str | None = "agent", **spec: Any) -> Object:
    job = mpijob("ns", "pi", **spec)
    if transport is not None:
        job["metadata"]["annotations"] = {TRANSPORT_ANNOTATION: transport}
    return job


def agent_job(**spec: Any) -> Job[KubeflowMPIJobSpec]:
    job, errors = parse_job(KIND, manifest(**spec))
    assert job is not None and errors == [], errors
    return dataclasses.replace(job, agent=SOURCE)


def rendered(job: Job[KubeflowMPIJobSpec]) -> dict[str, Object]:
    ready = [pod_of(job, f"pi-worker-{i}", "worker", i, ready=True) for i in range(2)]
    return by_name(KIND.render(job, observed_of(*ready, resources=KIND.child_resources)))


def test_workers_serve_the_agent_in_place_of_sshd_and_the_secret_holds_its_key() -> None:
    children = rendered(agent_job())
    worker = children["pi-worker-0"]["spec"]
    init = worker["initContainers"][0]
    assert (init["image"], init["command"]) == (
        SOURCE.image,
        [SOURCE.path, "install", "/jobcore/agent"],
    )
    (container,) = worker["containers"]
    assert container["command"][:2] == [AGENT, "serve"] and "args" not in container
    assert container["readinessProbe"]["tcpSocket"]["port"] == 2222
    key = base64.b64decode(children["pi-ssh"]["data"][AGENT_KEY])
    assert len(base64.b64decode(key)) == 32


@pytest.mark.parametrize("mpi", ["OpenMPI", "MPICH", "Intel"])
def test_the_launcher_runs_its_command_under_the_agent_which_is_its_mpis_remote_shell(
    mpi: Implementation,
) -> None:
    spec = launcher_job(agent_job(mpiImplementation=mpi))["spec"]["template"]["spec"]
    assert spec["initContainers"][0]["command"][1] == "install"
    (container,) = spec["containers"]
    command = container["command"]
    assert command[:4] == [AGENT, "launch", "--hostfile", "/etc/mpi/hostfile"]
    assert command[command.index("--") + 1 :] == ["mpirun", "-n", "2", "/home/mpiuser/pi"]
    assert "args" not in container
    env = env_of(container)
    assert agent_shell_env(flavour(mpi)).items() <= env.items()  # test_agent_shell's table
    assert not [name for name in env if "ARGS" in name], env  # no ssh options


def test_over_ssh_nothing_of_the_agent_is_rendered() -> None:
    job, _ = parse_job(KIND, manifest(transport=None))
    assert job is not None
    children = rendered(job)
    assert "initContainers" not in children["pi-worker-0"]["spec"]
    spec = launcher_job(job)["spec"]["template"]["spec"]
    assert spec["containers"][0]["command"] == ["mpirun"]
    assert [c["name"] for c in spec["initContainers"]] == ["jobcore-wait-for-workers"]


def test_what_the_agent_cannot_launch_is_refused() -> None:
    field = f"metadata.annotations[{TRANSPORT_ANNOTATION}]"
    _, errors = parse_job(KIND, manifest("rsh"))
    assert error_messages(errors) == {
        field: 'Unsupported value: "rsh": supported values: "ssh", "agent"'
    }
    job = manifest(runLauncherAsWorker=True)
    del job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    _, errors = parse_job(KIND, job)
    assert set(error_messages(errors)) == {
        "spec.runLauncherAsWorker",
        "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].command",
    }


def finished(job: Job[KubeflowMPIJobSpec], message: str | None) -> list[Object]:
    launcher = launcher_job(job) | {
        "status": {"conditions": [{"type": "Complete", "status": "True"}]}
    }
    status = terminated("mpi-launcher", 0, reason="Completed", message=message or "")
    pod = pod_of(job, "pi-launcher-abcde", "launcher", phase="Succeeded", containers=[status])
    workers = [pod_of(job, f"pi-worker-{i}", "worker", i, ready=True) for i in range(2)]
    return [launcher, pod, *workers]


@pytest.mark.parametrize(
    ("args", "message", "state"),
    [
        ([], "launched: pi-worker-0,pi-worker-1", "succeeded"),
        ([], "launched: pi-worker-1", "failed"),
        (["-n", "1"], "launched: pi-worker-1", "succeeded"),  # one rank needs one worker
        ([], None, "succeeded"),  # the launcher said nothing: not checked
    ],
)
def test_a_completed_launch_that_reached_too_few_workers_fails(
    args: list[str], message: str | None, state: str
) -> None:
    job = agent_job()
    if args:
        launcher = job.obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
        launcher["containers"][0]["args"] = [*args, "/home/mpiuser/pi"]
        changed, _ = parse_job(KIND, job.obj)
        assert changed is not None
        job = changed
    observed = observed_of(*finished(job, message), resources=KIND.child_resources)
    outcome = KIND.interpret(job, observed)
    assert outcome.state == state, outcome
    if state == "failed":
        assert outcome.reason == "WorkersNotLaunched"
        assert "never reached: pi-worker-0." in outcome.message
    assert BATCH_JOBS in KIND.child_resources
