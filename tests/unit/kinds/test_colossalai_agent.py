"""ColossalAIJob with spec.transport agent, on plain objects: the pods it renders, and the
launcher's fan-out of torchrun to the workers run in a real sh with a stand-in agent."""

from __future__ import annotations

import dataclasses
import shlex
import signal
import subprocess
from pathlib import Path

import pytest

from jobcore import Object
from jobcore.jobs import AgentSource
from jobcore.jobs import Job
from jobcore.launcher import AGENT
from jobcore.testing import by_name
from jobcore.testing import container_named
from jobcore.testing import env_of
from jobcore.testing import job_manifest
from jobcore.testing import job_of
from jobcore.testing import observed_of
from jobcore.testing import pod_of
from jobkinds.colossalaijob import ColossalAIJobKind
from jobkinds.colossalaijob.spec import ColossalAIJobSpec
from jobkinds.colossalaijob.torchrun import FANOUT_SCRIPT
from jobkinds.colossalaijob.torchrun import worker_command

KIND = ColossalAIJobKind()
SOURCE = AgentSource(image="registry.example/jobcore:1.2", path="/bin/jobcore-agent")
HOSTS = [f"cai-worker-{i}.cai.ns.svc.cluster.local" for i in range(2)]


def agent_job() -> Job[ColossalAIJobSpec]:
    spec = {
        "transport": "agent",
        "launcher": {
            "image": "cai:1",
            "workingDir": "/train",
            "env": [{"name": "PATH", "value": "/venv/bin:/usr/bin"}],
        },
        "worker": {
            "replicas": 2,
            "procPerWorker": 4,
            "command": ["train.py", "two words", "$(touch /pwned)"],
            "torchArgs": ["--max_restarts=0", "--standalone"],
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "worker",
                            "image": "cai:1",
                            "env": [{"name": "PATH", "value": "/bin"}, {"name": "A", "value": "1"}],
                        }
                    ]
                }
            },
        },
    }
    job = job_of(KIND, job_manifest(KIND, spec, name="cai", namespace="ns"))
    return dataclasses.replace(job, agent=SOURCE)


def rendered() -> dict[str, Object]:
    job = agent_job()
    ready = [pod_of(job, f"cai-worker-{i}", "worker", i, ready=True) for i in range(2)]
    return by_name(KIND.render(job, observed_of(*ready)))


# Rendered pods --------------------------------------------------------------------------


def test_workers_serve_the_agent_in_the_launchers_environment_and_directory() -> None:
    children = rendered()
    worker = children["cai-worker-1"]
    assert worker["spec"]["initContainers"][0]["command"] == [
        SOURCE.path,
        "install",
        "/jobcore/agent",
    ]
    assert worker["spec"]["restartPolicy"] == "Never"
    main = container_named(worker, "worker")
    assert main["command"][:2] == [AGENT, "serve"]
    assert main["readinessProbe"]["tcpSocket"]["port"] == 2222
    assert not any("sshd" in str(c.get("command")) for c in worker["spec"]["containers"])
    # colossalai run exports its env and cds to its directory on each worker: here the agent
    # starts torchrun with them, spec.launcher's values winning.
    assert env_of(main) == {"A": "1", "PATH": "/venv/bin:/usr/bin"}
    assert main["workingDir"] == "/train"
    assert children["cai"]["spec"]["ports"][0]["port"] == 2222


def test_the_launcher_starts_colossalai_runs_torchrun_on_each_worker_through_the_agent() -> None:
    launcher = rendered()["cai-launcher"]
    container = container_named(launcher, "launcher")
    command = container["command"]
    assert command[:4] == [AGENT, "launch", "--hostfile", "/etc/colossalai/hostfile"]
    script = command.index(FANOUT_SCRIPT)
    assert command[script - 2 : script] == ["/bin/sh", "-c"]
    agent, *pairs = command[script + 2 :]
    assert agent == AGENT
    assert pairs[0::2] == HOSTS
    for rank, line in enumerate(pairs[1::2]):
        assert shlex.split(line) == [
            "exec",
            "torchrun",
            "--nproc_per_node=4",
            "--nnodes=2",
            f"--node_rank={rank}",
            f"--master_addr={HOSTS[0]}",
            "--master_port=29500",
            "--max_restarts=0",
            "--standalone",
            "train.py",
            "two words",
            "$(touch /pwned)",
        ]
    assert env_of(container)["JOBCORE_AGENT_LAUNCHED"] == "/jobcore/agent/launched"
    volumes = {v["name"] for v in launcher["spec"]["volumes"]}
    assert "jobcore-ssh" not in volumes and "jobcore-agent-key" in volumes


# The fan-out, in a real sh ----------------------------------------------------------------

STAND_IN_AGENT = (
    '#!/bin/sh\n[ "$1 $2" = "rsh -n" ] || exit 99\ncd "$(dirname "$0")"\nexec sh -c "$4"\n'
)
"""`AGENT rsh -n HOST COMMAND` as a worker's agent runs it: COMMAND in `sh -c`, here in the
stand-in's own folder."""


def fanout(tmp_path: Path, *commands: list[str]) -> list[str]:
    """The script and its arguments: the stand-in agent, and one host per command."""
    agent = tmp_path / "agent"
    agent.write_text(STAND_IN_AGENT)
    agent.chmod(0o755)
    args = [str(agent)]
    for i, words in enumerate(commands):
        args += [f"h{i}.cai.ns.svc", worker_command(words)]
    return ["/bin/sh", "-c", FANOUT_SCRIPT, "fanout", *args]


def test_the_fanout_runs_every_worker_at_once_and_exits_with_the_first_failing_ones_code(
    tmp_path: Path,
) -> None:
    # h0 succeeds only once h2 has started: one worker at a time would fail it.
    wait_for_h2 = "for i in $(seq 100); do [ -e h2 ] && exit 0; sleep 0.1; done; exit 9"
    written = ["two words", "$(touch pwned)", "it's;"]
    result = subprocess.run(
        fanout(
            tmp_path,
            ["sh", "-c", wait_for_h2],
            ["sh", "-c", 'printf "[%s]" "$@"; echo; exit 3', "sh", *written],
            ["sh", "-c", "touch h2; exit 5"],
        ),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    lines = result.stdout.splitlines()
    assert result.returncode == 3, result
    assert "[two words][$(touch pwned)][it's;]" in lines
    assert not (tmp_path / "pwned").exists()
    assert "jobcore: torchrun on h0 exited" not in result.stdout
    assert lines[-1] == "jobcore: torchrun failed on: h1 h2; exit code 3, the first one's"


@pytest.mark.parametrize(("on_term", "code"), [(7, 7), (0, 143)])
def test_the_fanout_passes_sigterm_on_to_every_worker_and_never_exits_0_after_it(
    tmp_path: Path, on_term: int, code: int
) -> None:
    loop = f'trap "echo TERM on $0; exit {on_term}" TERM; echo ready; while :; do sleep 0.1; done'
    stop = ["sh", "-c", loop]
    process = subprocess.Popen(
        fanout(tmp_path, [*stop, "h0"], [*stop, "h1"]), stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    started = [process.stdout.readline() for _ in range(3)]
    assert started[1:] == ["ready\n", "ready\n"], started
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=30)
    assert process.returncode == code
    assert {"TERM on h0", "TERM on h1"} <= set(output.splitlines())
