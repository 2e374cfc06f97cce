"""MPIJob with spec.transport agent, on plain objects: what its pods run instead of ssh, and
a launch that reached too few workers failing the job."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import pytest

from jobcore import Object
from jobcore._jobs.plan import plan
from jobcore.jobs import AgentSource
from jobcore.jobs import Job
from jobcore.jobs import ResumeSpec
from jobcore.launcher import AGENT
from jobcore.launcher import AGENT_KEY
from jobcore.testing import by_name
from jobcore.testing import container_named
from jobcore.testing import env_of
from jobcore.testing import job_manifest
from jobcore.testing import job_of
from jobcore.testing import observed_of
from jobcore.testing import pod_of
from jobcore.testing import terminated
from jobkinds.mpi.flavours import Implementation
from jobkinds.mpi.flavours import agent_shell_env
from jobkinds.mpi.flavours import flavour
from jobkinds.mpijob import MPIJobKind
from jobkinds.mpijob.spec import MPIJobSpec

KIND = MPIJobKind()
SOURCE = AgentSource(image="registry.example/jobcore:1.2", path="/bin/jobcore-agent")


def agent_job(mpi: str = "OpenMPI", args: list[str] | None = None) -> Job[MPIJobSpec]:
    spec = {
        "transport": "agent",
        "mpiImplementation": mpi,
        "worker": {
            "replicas": 2,
            "extraMPIArgs": args or [],
            "cmd": ["./pi"],
            "template": {"spec": {"containers": [{"name": "mpi-worker", "image": "mpi:1"}]}},
        },
    }
    return dataclasses.replace(
        job_of(KIND, job_manifest(KIND, spec, name="pi", namespace="ns")), agent=SOURCE
    )


def rendered(job: Job[MPIJobSpec]) -> dict[str, Object]:
    ready = [pod_of(job, f"pi-worker-{i}", "worker", i, ready=True) for i in range(2)]
    return by_name(KIND.render(job, observed_of(*ready)))


def test_workers_serve_the_agent_copied_from_the_controllers_image_and_run_no_sshd() -> None:
    children = rendered(agent_job())
    worker = children["pi-worker-0"]
    init = worker["spec"]["initContainers"][0]
    assert (init["image"], init["command"]) == (
        SOURCE.image,
        [SOURCE.path, "install", "/jobcore/agent"],
    )
    main = container_named(worker, "mpi-worker")
    assert main["command"][:2] == [AGENT, "serve"]
    assert main["readinessProbe"]["tcpSocket"]["port"] == 2222
    assert not any("sshd" in " ".join(c.get("command", ())) for c in worker["spec"]["containers"])
    key = base64.b64decode(children["pi-ssh"]["data"][AGENT_KEY])
    assert len(base64.b64decode(key)) == 32


@pytest.mark.parametrize("mpi", ["OpenMPI", "MPICH", "IntelMPI"])
def test_the_launchers_mpi_gets_the_agent_as_its_remote_shell(mpi: Implementation) -> None:
    launcher = container_named(rendered(agent_job(mpi))["pi-launcher"], "mpi-launcher")
    env = env_of(launcher)
    assert agent_shell_env(flavour(mpi)).items() <= env.items()  # test_agent_shell's table
    assert not any("ssh_args" in name or "EXTRA_ARGS" in name for name in env)
    command = launcher["command"]
    assert command[:3] == [AGENT, "launch", "--hostfile"]
    shell = command[command.index("--") + 1]
    assert shell == "/bin/sh"  # no bash: the agent checks Open MPI's environment
    assert ("--env-check" in command) == (mpi == "OpenMPI")


def finished(job: Job[MPIJobSpec], message: str | None) -> list[Object]:
    status = terminated("mpi-launcher", 0, reason="Completed", message=message or "")
    launcher = pod_of(job, "pi-launcher", "launcher", phase="Succeeded", containers=[status])
    workers = [pod_of(job, f"pi-worker-{i}", "worker", i, ready=True) for i in range(2)]
    return [launcher, *workers]


def outcome_of(job: Job[MPIJobSpec], message: str | None) -> Any:
    return KIND.interpret(job, observed_of(*finished(job, message)))


def test_a_launcher_that_reached_every_worker_succeeds() -> None:
    assert outcome_of(agent_job(), "launched: pi-worker-1,pi-worker-0").state == "succeeded"


def test_a_launcher_that_exited_0_without_reaching_a_worker_fails_the_job_naming_it() -> None:
    outcome = outcome_of(agent_job(), "launched: pi-worker-0\n")
    assert (outcome.state, outcome.reason) == ("failed", "WorkersNotLaunched")
    assert "reached 1 of the 2 workers" in outcome.message
    assert "pi-worker-1" in outcome.message and "pi-worker-0" not in outcome.message
    none = outcome_of(agent_job(), "launched:")
    assert "reached 0 of the 2 workers" in none.message


@pytest.mark.parametrize(
    ("args", "reached", "state"),
    [
        (["-np", "1"], "", "failed"),  # one rank needs one worker
        (["-np", "1"], "pi-worker-1", "succeeded"),  # whichever the MPI picked
        (["-N", "2", "-np", "3"], "pi-worker-0", "failed"),  # 3 ranks at 2 slots need 2
        (["-N", "2", "-np", "2"], "pi-worker-0", "succeeded"),
        (["-np", "many"], "", "succeeded"),  # not a number: not checked
    ],
)
def test_a_process_count_needs_as_many_workers_as_hold_its_ranks(
    args: list[str], reached: str, state: str
) -> None:
    assert outcome_of(agent_job(args=args), f"launched: {reached}").state == state


def test_a_launcher_that_says_nothing_or_too_many_to_list_is_not_checked() -> None:
    assert outcome_of(agent_job(), None).state == "succeeded"
    assert outcome_of(agent_job(), "launched: pi-worker-0,+1 more").state == "succeeded"


def test_debug_mode_keeps_the_agent_for_a_launch_by_hand_even_skipping_init_containers() -> None:
    """The launcher sleeps, with the agent and its settings, so that `mpirun` typed in it
    reaches the workers' agents; a worker whose init containers are skipped keeps the agent's,
    which its command runs."""
    job = agent_job()
    debug = {"enabled": True, "replicaSpecs": [{"type": "worker", "skipInitContainer": True}]}
    spec = {**job.obj["spec"], "runMode": {"debug": debug}}
    job = job_of(KIND, job_manifest(KIND, spec, name="pi", namespace="ns"))
    planned = by_name(plan(KIND, dataclasses.replace(job, agent=SOURCE), observed_of()))
    launcher = container_named(planned["pi-launcher"], "mpi-launcher")
    assert launcher["command"] == ["sleep", "inf"]
    assert env_of(launcher)["OMPI_MCA_plm_rsh_agent"] == f"{AGENT} rsh"
    worker = planned["pi-worker-0"]
    assert [c["name"] for c in worker["spec"]["initContainers"]] == ["jobcore-agent"]
    assert container_named(worker, "mpi-worker")["command"][:2] == [AGENT, "serve"]


def test_a_paused_agent_job_has_no_pods_and_resumed_gets_them_back_with_the_agent() -> None:
    """Pause and resume act on pods, whatever the transport: paused, the job keeps its
    Secret (and its agent key) and loses its pods; resumed with a command, the launcher runs
    it with the agent still its MPI's remote shell."""
    job = agent_job()
    paused = {**job.obj["spec"], "runMode": {"pause": {"enabled": True}}}
    held = job_of(KIND, job_manifest(KIND, paused, name="pi", namespace="ns"))
    kinds = {o["kind"] for o in plan(KIND, dataclasses.replace(held, agent=SOURCE), observed_of())}
    assert "Pod" not in kinds and "Secret" in kinds
    resume = [{"type": "launcher", "command": ["mpirun", "-n", "2", "./pi"]}]
    ready = [pod_of(job, f"pi-worker-{i}", "worker", i, ready=True) for i in range(2)]
    planned = by_name(
        plan(
            KIND,
            job,
            observed_of(*ready),
            resume_specs=[ResumeSpec.model_validate(r) for r in resume],
        )
    )
    launcher = container_named(planned["pi-launcher"], "mpi-launcher")
    assert launcher["command"] == ["mpirun", "-n", "2", "./pi"]
    assert env_of(launcher)["OMPI_MCA_plm_rsh_agent"] == f"{AGENT} rsh"
    worker = container_named(planned["pi-worker-0"], "mpi-worker")
    assert worker["command"][:2] == [AGENT, "serve"]
