"""HorovodJob with spec.transport agent, on plain objects: its pods run the agent in sshd's
place, horovodrun and mpirun reach the workers through it, and a launch that reached too few
workers fails the job."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from typing import Any

import pytest

from jobcore import Object
from jobcore.jobs import AgentSource
from jobcore.jobs import Job
from jobcore.jobs import Outcome
from jobcore.launcher import AGENT
from jobcore.launcher import AGENT_DIR
from jobcore.launcher import SSH_PORT_ENV
from jobcore.testing import by_name
from jobcore.testing import container_named
from jobcore.testing import env_of
from jobcore.testing import job_manifest
from jobcore.testing import job_of
from jobcore.testing import observed_of
from jobcore.testing import pod_of
from jobcore.testing import terminated
from jobkinds.horovodjob import HorovodJobKind
from jobkinds.horovodjob.spec import HorovodJobSpec
from jobkinds.mpi.flavours import OPEN_MPI
from jobkinds.mpi.flavours import agent_shell_env
from jobkinds.mpi.openmpi import UNSAFE_ENV_EXIT
from tests.support.shell_canary import real_agent

KIND = HorovodJobKind()
SOURCE = AgentSource(image="registry.example/jobcore:1.2", path="/bin/jobcore-agent")
ELASTIC = {"minReplicas": 1, "maxReplicas": 3}


def agent_job(backend: str = "gloo", **spec: Any) -> Job[HorovodJobSpec]:
    raw = {
        "transport": "agent",
        "horovod": {"backend": backend},
        "ssh": {"port": 2022, "sshAuthMountPath": "/home/me/.ssh"},  # unused by the agent
        "worker": {
            "replicas": 2,
            "cmd": ["python", "train.py"],
            "template": {"spec": {"containers": [{"name": "worker", "image": "hvd:1"}]}},
        },
        **spec,
    }
    job = job_of(KIND, job_manifest(KIND, raw, name="hvd", namespace="ns"))
    return dataclasses.replace(job, agent=SOURCE)


def rendered(job: Job[HorovodJobSpec]) -> dict[str, Object]:
    ready = [pod_of(job, f"hvd-worker-{i}", "worker", i, ready=True) for i in range(2)]
    return by_name(KIND.render(job, observed_of(*ready)))


def launch_script(launcher: Object) -> tuple[list[str], str, list[str]]:
    """The launcher container's agent command, bash's script, and horovodrun's arguments."""
    command = container_named(launcher, "launcher")["command"]
    rest = command[command.index("--") + 1 :]
    assert rest[:2] == ["/bin/bash", "-c"]
    return command[: command.index("--")], rest[2], rest[4:]


def test_the_job_defaults_to_ssh_and_accepts_agent() -> None:
    assert HorovodJobSpec.model_validate(agent_job().spec.to_api()).transport == "agent"
    del_transport = {k: v for k, v in agent_job().spec.to_api().items() if k != "transport"}
    assert HorovodJobSpec.model_validate(del_transport).transport == "ssh"
    with pytest.raises(ValueError):
        HorovodJobSpec.model_validate({**del_transport, "transport": "rsh"})


def test_workers_serve_the_agent_and_run_no_sshd() -> None:
    children = rendered(agent_job())
    worker = children["hvd-worker-0"]
    assert worker["spec"]["initContainers"][0]["command"] == [SOURCE.path, "install", AGENT_DIR]
    main = container_named(worker, "worker")
    assert main["command"][:2] == [AGENT, "serve"]
    assert main["readinessProbe"]["tcpSocket"]["port"] == 2222
    assert not any("sshd" in " ".join(c.get("command", ())) for c in worker["spec"]["containers"])
    assert children["hvd"]["spec"]["ports"][0]["port"] == 2222  # the headless Service


@pytest.mark.parametrize("backend", ["gloo", "mpi"])
def test_a_static_launcher_waits_for_every_agent_and_runs_horovodrun_with_the_agents_ssh(
    backend: str,
) -> None:
    launcher = rendered(agent_job(backend))["hvd-launcher"]
    agent, script, args = launch_script(launcher)
    assert agent[:4] == [AGENT, "launch", "--hostfile", "/etc/horovod/hostfile"]
    assert agent[agent.index("--port") + 1] == "2222"
    assert script.startswith(f'export PATH="{AGENT_DIR}:$PATH"\n')  # horovodrun's `ssh`
    assert "exec horovodrun" in script
    assert "not starting horovodrun" not in script  # bash checks nothing: the agent does
    assert ("--env-check" in agent) == (backend == "mpi")
    assert args[:4] == ["-np", "2", "--hostfile", "/etc/horovod/hostfile"]
    assert "--ssh-port" not in args and "--ssh-identity-file" not in args
    assert launcher["spec"]["initContainers"][0]["command"][1] == "install"
    env = env_of(container_named(launcher, "launcher"))
    assert env["JOBCORE_AGENT_PORT"] == "2222"
    assert SSH_PORT_ENV not in env
    if backend == "mpi":  # mpirun's own remote shell is the agent, as with MPIJob
        assert agent_shell_env(OPEN_MPI).items() <= env.items()  # test_agent_shell's table
        assert env["OMPI_MCA_orte_keep_fqdn_hostnames"] == "true"
    assert not any("rsh_args" in name or "ssh_args" in name for name in env)


def test_with_mpi_the_agent_refuses_variables_open_mpi_would_copy_unsafely() -> None:
    """From valueFrom, envFrom or the image: validation cannot see them. The real agent checks
    them before it waits for a worker, as for MPIJob, and starts nothing; gloo, which starts
    no Open MPI, is not checked."""
    hostile = {"OMPI_MCA_plm_rsh_agent": "ssh $(id)", "OPAL_PREFIX": "/opt/a b"}

    def launch(backend: str) -> subprocess.CompletedProcess[str]:
        command = container_named(rendered(agent_job(backend))["hvd-launcher"], "launcher")
        agent, *args = command["command"]
        assert agent == AGENT
        env = {"PATH": os.environ["PATH"], "JOBCORE_WAIT_SECONDS": "1", **hostile}
        real = [str(real_agent()), *args]
        return subprocess.run(
            real, env=env, capture_output=True, text=True, timeout=30, check=False
        )

    refused = launch("mpi")
    assert refused.returncode == UNSAFE_ENV_EXIT, refused.stderr
    assert refused.stderr.startswith(
        "jobcore: not starting horovodrun: unsafe for the workers' shell: "
        "OMPI_MCA_plm_rsh_agent OPAL_PREFIX (Open MPI writes these variables"
    )
    gloo = launch("gloo")  # waits for the hostfile's agents, and gives up: no such file here
    assert gloo.returncode != UNSAFE_ENV_EXIT and "not starting" not in gloo.stderr


def test_an_elastic_launcher_waits_for_no_hostfile_and_discovers_the_workers_agents() -> None:
    children = rendered(agent_job(elastic=ELASTIC))
    agent, script, args = launch_script(children["hvd-launcher"])
    assert agent == [AGENT, "launch", "--port", "2222"]
    assert script.startswith(f'export PATH="{AGENT_DIR}:$PATH"\n')
    assert "--host-discovery-script" in args
    discovery = children["hvd-discovery"]["data"]["discover_hosts.sh"]
    assert '"/dev/tcp/$0/2222"' in discovery
    assert discovery.count("probe '") == 3


def finished(job: Job[HorovodJobSpec], message: str) -> Outcome:
    status = terminated("launcher", 0, reason="Completed", message=message)
    launcher = pod_of(job, "hvd-launcher", "launcher", phase="Succeeded", containers=[status])
    workers = [pod_of(job, f"hvd-worker-{i}", "worker", i, ready=True) for i in range(2)]
    return KIND.interpret(job, observed_of(launcher, *workers))


@pytest.mark.parametrize(
    ("elastic", "reached", "state"),
    [
        (None, "hvd-worker-0,hvd-worker-1", "succeeded"),
        (None, "hvd-worker-1", "failed"),  # a static job needs every worker
        (ELASTIC, "hvd-worker-2", "succeeded"),  # minReplicas of those it may have had
        (ELASTIC, "", "failed"),
    ],
)
def test_a_launch_that_reached_too_few_workers_fails_the_job_naming_them(
    elastic: dict[str, int] | None, reached: str, state: str
) -> None:
    job = agent_job(elastic=elastic) if elastic else agent_job()
    outcome = finished(job, f"launched: {reached}")
    assert outcome.state == state
    if state == "failed":
        assert outcome.reason == "WorkersNotLaunched"
        assert "hvd-worker-0" in outcome.message
    assert finished(job, "").state == "succeeded"  # nothing reported: not checked


def test_over_ssh_nothing_is_checked() -> None:
    job = agent_job()
    ssh = dataclasses.replace(job, spec=job.spec.model_copy(update={"transport": "ssh"}))
    assert finished(ssh, "launched: ").state == "succeeded"
