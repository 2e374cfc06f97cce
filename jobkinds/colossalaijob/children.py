"""ColossalAIJob's children: hostfile, headless Service, worker and launcher pods, launch command.

Split from the kind so the launcher's command reads, and runs in tests, on its own. With
spec.transport agent the launcher starts torchrun on the workers itself (see
`jobkinds.colossalaijob.torchrun`); what follows is `colossalai run`'s, over ssh.
Every user-provided string reaches `colossalai run` as a positional argument of
`bash -c`, never as script text; the script, its arguments and the torchrun options are
escaped once more, because `colossalai run` joins them into the shell command it runs on every
worker. It also writes its working directory and environment into that command: the kind
validates the directory and the names; the values stay the user's (see `launcher_pod`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any

from jobcore import Object
from jobcore.jobs import Job
from jobcore.jobs import child_meta
from jobcore.jobs import worker_host
from jobcore.launcher import LAUNCHER
from jobcore.launcher import SSH_PORT_ENV
from jobcore.launcher import SSH_VOLUME
from jobcore.launcher import SSHAccess
from jobcore.launcher import agent_client_env
from jobcore.launcher import agent_worker_pod
from jobcore.launcher import hostfile_name
from jobcore.launcher import launcher_name
from jobcore.launcher import ssh_mount
from jobcore.launcher import ssh_secret_name
from jobcore.launcher import ssh_secret_volume
from jobcore.launcher import ssh_wait_script
from jobcore.launcher import sshd_worker_pod
from jobcore.launcher import with_agent
from jobkinds.colossalaijob.spec import LAUNCHER_CONTAINER
from jobkinds.colossalaijob.spec import WORKER_CONTAINER
from jobkinds.colossalaijob.spec import ColossalAIJobSpec
from jobkinds.colossalaijob.torchrun import MASTER_PORT
from jobkinds.colossalaijob.torchrun import agent_launcher_command

HOSTFILE_VOLUME = "jobcore-hostfile"
HOSTFILE_DIR = "/etc/colossalai"
HOSTFILE_KEY = "hostfile"
HOSTFILE = f"{HOSTFILE_DIR}/{HOSTFILE_KEY}"
RESERVED_TORCH_ARGS = frozenset(
    {"nproc_per_node", "nnodes", "node_rank", "master_addr", "master_port"}
)
"""torchrun options `colossalai run` sets itself on every worker (spelled with `_`)."""

LAUNCHER_SCRIPT = (
    ssh_wait_script("JOBCORE_COLOSSALAI_HOSTFILE", HOSTFILE, "JOBCORE_COLOSSALAI_WAIT_SECONDS")
    # colossalai run exports its whole environment on every worker: the launcher's HOSTNAME
    # would name the launcher there.
    + r"""echo "jobcore: all ${#workers[@]} worker(s) reachable; starting: colossalai $*"
unset HOSTNAME
exec colossalai "$@"
"""
)
_SHELL_SAFE = re.compile(r"[A-Za-z0-9_@%+=:,./-]")


# Names -----------------------------------------------------------------------------------


def worker_hosts(job: Job[ColossalAIJobSpec]) -> list[str]:
    """The workers' DNS names through the headless Service, as the hostfile lists them."""
    return [worker_host(job, i) for i in range(job.spec.worker.replicas)]


# The launch command ----------------------------------------------------------------------


def shell_word(arg: str) -> str:
    """`arg` as one word of a POSIX shell: each character outside `_SHELL_SAFE` escaped.

    `colossalai run` joins the script and its arguments with spaces into the command a shell
    runs on each worker. Escaping character by character (a newline quoted, as a backslash
    would join lines) keeps a trailing `.py`, which colossalai run checks before any shell.
    """
    if not arg:
        return "''"
    return "".join(
        c if _SHELL_SAFE.fullmatch(c) else "'\n'" if c == "\n" else f"\\{c}" for c in arg
    )


def torch_arg_error(arg: str) -> str | None:
    """Why one torchArgs entry cannot reach torchrun through `--extra_launch_args`, if it cannot.

    `colossalai run` splits that option's value at `,` and each item at `=` (exactly one), and
    turns `k=v` into `--k=v` and `k` into `--k`; an empty value would become a flag.
    """
    if not arg.startswith("--") or arg == "--":
        return f"{arg!r}: write each torchrun option as --name=value or --name"
    name, eq, value = arg[2:].partition("=")
    if not name or "," in arg or "=" in value or (eq and not value) or name.startswith("-"):
        return (
            f"{arg!r}: must be --name=value or --name, with no ',' anywhere and no '=' or "
            "empty value after the first '='"
        )
    if name.replace("-", "_") in RESERVED_TORCH_ARGS:
        return f"{arg!r}: colossalai run sets --{name} itself"
    return None


def extra_launch_args(torch_args: Sequence[str]) -> str | None:
    """`["--max_restarts=3", "--standalone"]` → `max_restarts=3,standalone`; None when empty.

    colossalai run splits the value at `,` and `=` and writes `--name=value` unquoted into the
    workers' shell command, so name and value are each a `shell_word` (which keeps `,` and `=`;
    `torch_arg_error` refuses options that hold a `,` or a second `=`).
    """
    words = []
    for arg in torch_args:
        name, eq, value = arg[2:].partition("=")
        words.append(shell_word(name) + (f"={shell_word(value)}" if eq else ""))
    return ",".join(words) or None


def colossalai_args(job: Job[ColossalAIJobSpec]) -> list[str]:
    """`colossalai run`'s arguments: hostfile, processes, master, torchrun options, `--`, script.

    The `--` ends click's option parsing, so a script argument that happens to be one of
    colossalai run's own options (`--hostfile`, `--master_port`, ...) reaches the script; the
    script, its arguments and the torchrun options' names and values are `shell_word`s, so
    each reaches torchrun or the script as one argument, as written.
    """
    worker = job.spec.worker
    args = [
        "run",
        "--hostfile",
        HOSTFILE,
        "--nproc_per_node",
        str(worker.proc_per_worker),
        "--master_addr",
        worker_hosts(job)[0],
        "--master_port",
        str(MASTER_PORT),
    ]
    extra = extra_launch_args(worker.torch_args)
    if extra:
        args += ["--extra_launch_args", extra]
    return [*args, "--", *map(shell_word, worker.command)]


def launcher_command(colossalai: Sequence[str]) -> list[str]:
    """bash runs the shared wait, then `exec colossalai "$@"` with the arguments positional."""
    return ["/bin/bash", "-c", LAUNCHER_SCRIPT, "jobcore-colossalai-launcher", *colossalai]


# Children ------------------------------------------------------------------------------


def hostfile_configmap(job: Job[ColossalAIJobSpec]) -> Object:
    """ColossalAI's hostfile: one worker name per line, no slots."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": child_meta(job, hostfile_name(job), job.labels()),
        "data": {HOSTFILE_KEY: "".join(f"{host}\n" for host in worker_hosts(job))},
    }


def worker_pod(job: Job[ColossalAIJobSpec], index: int, ssh: SSHAccess) -> Object:
    """The template with sshd (or, with spec.transport agent, jobcore's agent) in place of the
    worker container's command; Ready on its port.

    restartPolicy is always Never: `colossalai run` cannot re-admit a restarted worker, so a
    worker's failure is the job's.
    """
    if job.spec.transport == "agent":
        pod = agent_worker_pod(job, index, container=WORKER_CONTAINER, restart_policy="Never")
        return _with_launcher_env(job, pod)
    return sshd_worker_pod(
        job,
        index,
        container=WORKER_CONTAINER,
        ssh=ssh,
        restart_policy="Never",
    )


def _with_launcher_env(job: Job[ColossalAIJobSpec], pod: Object) -> Object:
    """`pod` (changed in place) whose worker container has spec.launcher's env (its values
    winning) and workingDir: the agent starts torchrun in that environment and directory, as
    colossalai run would have exported and `cd`ed to them."""
    launcher = job.spec.launcher
    names = {str(e.get("name")) for e in launcher.env}
    for container in pod["spec"]["containers"]:
        if container["name"] == WORKER_CONTAINER:
            own = [e for e in container.get("env", ()) if e.get("name") not in names]
            container["env"] = [*own, *copy.deepcopy(launcher.env)]
            if launcher.working_dir:
                container["workingDir"] = launcher.working_dir
    return pod


def launcher_pod(job: Job[ColossalAIJobSpec], ssh: SSHAccess) -> Object:
    """spec.launcher's container running `colossalai run` once every worker accepts ssh (with
    spec.transport agent, torchrun on every worker through the agent: see `torchrun`).

    colossalai run hands its own environment (less HOSTNAME: see LAUNCHER_SCRIPT) to the
    training processes and `cd`s them into its working directory, so spec.launcher.env and
    workingDir apply on the workers too. It does so in the command each worker's shell runs,
    as `export NAME="value"`: a value's `$`, backquotes, `\\` and `"` act in that shell. The
    launcher runs as the workers' pod securityContext says (user, groups, fsGroup).
    """
    launcher = job.spec.launcher
    agent = job.spec.transport == "agent"
    if agent:
        command = agent_launcher_command(job, worker_hosts(job), hostfile=HOSTFILE)
        ours = agent_client_env()
    else:
        command = launcher_command(colossalai_args(job))
        ours = {"JOBCORE_COLOSSALAI_HOSTFILE": HOSTFILE, SSH_PORT_ENV: str(ssh.port)}
    user_names = {str(e.get("name")) for e in launcher.env}
    hostfile_mount = {"name": HOSTFILE_VOLUME, "mountPath": HOSTFILE_DIR, "readOnly": True}
    container: dict[str, Any] = {
        "name": LAUNCHER_CONTAINER,
        "image": launcher.image,
        "command": command,
        # The user's own value of one of our variables wins.
        "env": [
            *({"name": k, "value": v} for k, v in ours.items() if k not in user_names),
            *copy.deepcopy(launcher.env),
        ],
        "volumeMounts": [hostfile_mount]
        if agent
        else [ssh_mount(SSH_VOLUME, ssh.mount_path), hostfile_mount],
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    if launcher.working_dir:
        container["workingDir"] = launcher.working_dir
    if launcher.resources:
        container["resources"] = copy.deepcopy(launcher.resources)
    hostfile_volume = {"name": HOSTFILE_VOLUME, "configMap": {"name": hostfile_name(job)}}
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [container],
        "volumes": [hostfile_volume]
        if agent
        else [ssh_secret_volume(SSH_VOLUME, ssh_secret_name(job)), hostfile_volume],
    }
    # As the workers' user, whose ~/.ssh the keys are mounted at: fabric reads them there.
    security = job.spec.worker.template.api["spec"].get("securityContext")
    if security:
        spec["securityContext"] = security
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": child_meta(job, launcher_name(job), job.labels(LAUNCHER, 0)),
        "spec": spec,
    }
    if agent:
        with_agent(pod, job.agent, ssh_secret_name(job), [LAUNCHER_CONTAINER])
    return pod
