"""The launch agent's part in a job's pods: jobcore's own `jobcore-agent` in place of ssh.

An init container of the controller's agent image (`Job.agent`) copies the static agent, with
its rsh names beside it, into an emptyDir that the pod's containers mount at AGENT_DIR, so the
job's image needs neither sshd nor anything else of jobcore's. The job's Secret holds the job's
own agent key (AGENT_KEY), mounted read-only at AGENT_KEY_DIR: only a launcher holding it can
start anything on the job's workers. A worker runs `jobcore-agent serve` in place of sshd; the
launcher's MPI is given the agent as its remote shell; the launcher's command runs under
`jobcore-agent launch`, which waits for every worker's agent first and, once the command has
ended, writes the workers it reached into the launcher's termination message (`launched`).
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Literal

from jobcore._jobs.kind import AGENT_INIT_CONTAINER
from jobcore._jobs.kind import AgentSource
from jobcore._runtime.resources import Object

Transport = Literal["ssh", "agent"]
"""How a launcher reaches its workers: their sshd, or jobcore's agent."""
AGENT_DIR = "/jobcore/agent"
"""Where every container of an agent job's pods finds the agent, and the launcher its record
of the workers reached (an emptyDir: writable under a read-only root filesystem)."""
AGENT = f"{AGENT_DIR}/jobcore-agent"
AGENT_RSH = f"{AGENT_DIR}/jobcore-rsh"
"""The agent under a name that acts as `jobcore-agent rsh`: for launchers that take one program
path as their remote shell (Hydra's launcher exec)."""
AGENT_LAUNCHED = f"{AGENT_DIR}/launched"
AGENT_KEY = "agent-key"
"""The job Secret's key holding the job's agent key."""
AGENT_KEY_DIR = "/jobcore/agent-key"
AGENT_KEY_FILE = f"{AGENT_KEY_DIR}/{AGENT_KEY}"
AGENT_PORT = 2222
"""The port the workers' agents listen on: above 1023, so any user may bind it."""
AGENT_VOLUME = "jobcore-agent"
AGENT_KEY_VOLUME = "jobcore-agent-key"
AGENT_CONTAINER = AGENT_INIT_CONTAINER
"""The init container that copies the agent into AGENT_DIR."""
_LAUNCHED = "launched:"


def agent_key() -> str:
    """A fresh agent key as a Secret's `data` holds it: base64 of the key file's text, which
    is itself base64 of 32 random bytes."""
    text = base64.b64encode(secrets.token_bytes(32))
    return base64.b64encode(text).decode()


def agent_volumes(secret: str) -> list[dict[str, Any]]:
    """The emptyDir the agent is copied into, and the Secret's agent key alone, readable by
    whichever user the job's containers run as (any process of the pod is the job's)."""
    return [
        {"name": AGENT_VOLUME, "emptyDir": {}},
        {
            "name": AGENT_KEY_VOLUME,
            "secret": {
                "secretName": secret,
                "items": [{"key": AGENT_KEY, "path": AGENT_KEY}],
                "defaultMode": 0o444,
            },
        },
    ]


def agent_mounts() -> list[dict[str, Any]]:
    return [
        {"name": AGENT_VOLUME, "mountPath": AGENT_DIR},
        {"name": AGENT_KEY_VOLUME, "mountPath": AGENT_KEY_DIR, "readOnly": True},
    ]


def agent_init_container(agent: AgentSource) -> dict[str, Any]:
    """Copies the agent from the controller's image into the pod's AGENT_DIR."""
    return {
        "name": AGENT_CONTAINER,
        "image": agent.image,
        "imagePullPolicy": "IfNotPresent",
        "command": [agent.path, "install", AGENT_DIR],
        "volumeMounts": [{"name": AGENT_VOLUME, "mountPath": AGENT_DIR}],
    }


def with_agent(pod: Object, agent: AgentSource, secret: str, containers: Sequence[str]) -> Object:
    """`pod` (changed in place) with the agent installed first and mounted, with the job's
    key, in `containers`."""
    spec = pod["spec"]
    spec["volumes"] = [*spec.get("volumes", ()), *agent_volumes(secret)]
    spec["initContainers"] = [agent_init_container(agent), *spec.get("initContainers", ())]
    for container in spec["containers"]:
        if container["name"] in containers:
            container["volumeMounts"] = [*container.get("volumeMounts", ()), *agent_mounts()]
    return pod


def agent_serve_command(port: int = AGENT_PORT) -> list[str]:
    """A worker's command: the agent serving the job's launcher."""
    return [AGENT, "serve", "--port", str(port), "--key-file", AGENT_KEY_FILE]


def agent_launch_command(
    command: Sequence[str],
    *,
    hostfile: str | None,
    timeout: int,
    port: int = AGENT_PORT,
    env_check: str | None = None,
) -> list[str]:
    """The launcher's `command` once every `hostfile` host's agent answers (else exit 124
    after `timeout` seconds), reporting the workers it reached when it ends. With no
    hostfile it waits for none: a launcher whose hosts come and go waits in its own way.
    `env_check`, the agent's JSON rules for the environment, refuses an unsafe one first."""
    check = [] if env_check is None else ["--env-check", env_check]
    wait = [] if hostfile is None else ["--hostfile", hostfile, "--timeout", str(timeout)]
    return [AGENT, "launch", *wait, "--port", str(port), *check, "--", *command]


def agent_client_env(port: int = AGENT_PORT) -> dict[str, str]:
    """What the agent's rsh reads on the launcher: the port, the key, the launched record."""
    return {
        "JOBCORE_AGENT_PORT": str(port),
        "JOBCORE_AGENT_KEY_FILE": AGENT_KEY_FILE,
        "JOBCORE_AGENT_LAUNCHED": AGENT_LAUNCHED,
    }


def launched(pod: Object | None, container: str) -> list[str] | None:
    """The workers (their hostnames' first labels) the launcher's agent reached, as its
    terminated `container` says; None if it has said nothing, or too many to list."""
    for status in ((pod or {}).get("status") or {}).get("containerStatuses") or ():
        if not isinstance(status, Mapping) or status.get("name") != container:
            continue
        message = ((status.get("state") or {}).get("terminated") or {}).get("message")
        if isinstance(message, str) and message.startswith(_LAUNCHED):
            hosts = [host for host in message.removeprefix(_LAUNCHED).strip().split(",") if host]
            return None if any(host.startswith("+") for host in hosts) else hosts
    return None
