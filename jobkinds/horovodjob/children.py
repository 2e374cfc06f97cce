"""HorovodJob's children: hostfile or discovery script, Service, worker and launcher pods.

Split from the kind so the horovodrun command line and the host discovery
script read, and run in tests, on their own. Every user-provided string reaches horovodrun as
a positional argument, never as script text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jobcore import Object
from jobcore.jobs import Job
from jobcore.jobs import child_meta
from jobcore.jobs import worker_host
from jobcore.launcher import AGENT_DIR
from jobcore.launcher import AGENT_PORT
from jobcore.launcher import LAUNCHER
from jobcore.launcher import SSH_MOUNT
from jobcore.launcher import SSH_PORT
from jobcore.launcher import SSH_PORT_ENV
from jobcore.launcher import SSH_PRIVATE_KEY
from jobcore.launcher import SSH_WAIT_SECONDS
from jobcore.launcher import WORKER
from jobcore.launcher import SSHAccess
from jobcore.launcher import agent_client_env
from jobcore.launcher import agent_launch_command
from jobcore.launcher import agent_worker_pod
from jobcore.launcher import copied_launcher_pod
from jobcore.launcher import hostfile_name
from jobcore.launcher import ssh_client_args
from jobcore.launcher import ssh_secret_name
from jobcore.launcher import ssh_wait_script
from jobcore.launcher import sshd_worker_pod
from jobcore.launcher import with_agent
from jobkinds.horovodjob.spec import HorovodJobSpec
from jobkinds.mpi.openmpi import open_mpi_env_check
from jobkinds.mpi.openmpi import open_mpi_env_script
from jobkinds.mpi.openmpi import open_mpi_shell_env

WORKER_CONTAINER = WORKER
"""The template's container that runs sshd on workers and horovodrun on the launcher."""
LAUNCHER_CONTAINER = LAUNCHER
CONFIG_VOLUME = "jobcore-horovod"
CONFIG_DIR = "/etc/horovod"
HOSTFILE_KEY = "hostfile"
HOSTFILE = f"{CONFIG_DIR}/{HOSTFILE_KEY}"
DISCOVERY_KEY = "discover_hosts.sh"
DISCOVERY_SCRIPT = f"{CONFIG_DIR}/{DISCOVERY_KEY}"
DISCOVERY_MODE = 0o755
PROBE_SECONDS = 2
"""How long the discovery script waits for one worker's sshd port."""

HOSTFILE_ENV = "JOBCORE_HOROVOD_HOSTFILE"
WAIT_SECONDS_ENV = "JOBCORE_HOROVOD_WAIT_SECONDS"
# The shared bounded wait for every hostfile host to resolve and accept ssh, then horovodrun;
# its hostfile and timeout come from the environment, which a test can point elsewhere.
LAUNCHER_SCRIPT = (
    ssh_wait_script(HOSTFILE_ENV, HOSTFILE, WAIT_SECONDS_ENV)
    + r"""echo "jobcore: all ${#workers[@]} worker(s) reachable; starting: horovodrun $*"
exec horovodrun "$@"
"""
)
AGENT_LAUNCHER_SCRIPT = r"""echo "jobcore: starting: horovodrun $*"
exec horovodrun "$@"
"""
"""With the agent, which has waited for every hostfile host's agent before it runs this."""
AGENT_PATH_SCRIPT = f"""export PATH="{AGENT_DIR}:$PATH"
"""
"""With the agent, the `ssh` that horovodrun runs (for its ssh check, its task servers and,
with gloo, every rank) is the agent's, installed under that name in AGENT_DIR."""
_OPEN_MPI_CHECK = open_mpi_env_script("horovodrun")
"""With `--mpi` over ssh, the environment horovodrun hands to Open MPI's mpirun is checked
first (with the agent, the agent checks it: `open_mpi_env_check`)."""
SOCKET_TIMEOUT_SECONDS = 5
"""How long an elastic horovodrun's sockets wait, e.g. its connect to a rank that is gone."""
# An elastic horovodrun tells rank 0 of every change the discovery script shows, over a socket
# without a timeout, while its discovery thread holds the lock that the reset after a lost
# worker needs. When rank 0's Pod was the one deleted, that connect to its vanished address
# blocks for minutes (SYN retries; nothing answers), and training on the others stalls with
# it. Started by its own interpreter with a default socket timeout, the notification fails
# within seconds instead and the reset goes on.
ELASTIC_SCRIPT = f"""runner=$(command -v horovodrun) || {{
  echo "jobcore: no horovodrun on PATH" >&2
  exit 127
}}
read -r interpreter <"$runner"
case $interpreter in
  '#!'*python*) ;;
  *)
    echo "jobcore: $runner is not a Python script; starting it without a socket timeout" >&2
    exec "$runner" "$@" ;;
esac
echo "jobcore: starting: horovodrun $* (sockets time out after {SOCKET_TIMEOUT_SECONDS}s)"
exec ${{interpreter#'#!'}} -c 'import socket, sys
socket.setdefaulttimeout({SOCKET_TIMEOUT_SECONDS})
sys.argv[0] = "horovodrun"
from horovod.runner.launch import run_commandline
run_commandline()' "$@"
"""


# Names -----------------------------------------------------------------------------------


def discovery_name(job: Job[Any]) -> str:
    return f"{job.name}-discovery"


# Modes -----------------------------------------------------------------------------------


def elastic(job: Job[HorovodJobSpec]) -> bool:
    return job.spec.elastic is not None


def through_agent(job: Job[HorovodJobSpec]) -> bool:
    return job.spec.transport == "agent"


def launch_port(job: Job[HorovodJobSpec]) -> int:
    """The port the launcher reaches the workers on: the agent's, or sshd's."""
    return AGENT_PORT if through_agent(job) else job.spec.ssh.port


# horovodrun ------------------------------------------------------------------------------


def _common_args(job: Job[HorovodJobSpec]) -> list[str]:
    horovod = job.spec.horovod
    args = []
    if horovod.network_interfaces:
        args += ["--network-interfaces", ",".join(horovod.network_interfaces)]
    if horovod.start_timeout is not None:
        args += ["--start-timeout", str(horovod.start_timeout)]
    if horovod.gloo_timeout_seconds is not None:
        args += ["--gloo-timeout-seconds", str(horovod.gloo_timeout_seconds)]
    ssh = job.spec.ssh
    if through_agent(job):  # the agent's ssh takes neither
        return args
    mount = ssh.ssh_auth_mount_path.rstrip("/")
    if mount != SSH_MOUNT:  # root's ssh reads its identity and config there unaided
        args += ["--ssh-identity-file", f"{mount}/{SSH_PRIVATE_KEY}"]
    if ssh.port != SSH_PORT:  # the Secret's ssh config says so too, if it is read
        args += ["--ssh-port", str(ssh.port)]
    return args


def horovodrun_args(job: Job[HorovodJobSpec]) -> list[str]:
    """horovodrun's arguments (after the program name) in a fixed order, the program last."""
    spec = job.spec
    slots = spec.worker.slots_per_worker
    args = ["-np", str(spec.worker.replicas * slots)]
    if spec.elastic is not None:
        args += [
            "--min-np",
            str(spec.elastic.min_replicas * slots),
            "--max-np",
            str(spec.elastic.max_replicas * slots),
            "--slots-per-host",
            str(slots),
            "--host-discovery-script",
            DISCOVERY_SCRIPT,
        ]
        if spec.elastic.reset_limit is not None:
            args += ["--reset-limit", str(spec.elastic.reset_limit)]
        cooldown = spec.elastic.blacklist_cooldown
        args += ["--blacklist-cooldown-range", str(cooldown.min_seconds), str(cooldown.max_seconds)]
    else:
        args += ["--hostfile", HOSTFILE]
    args.append(f"--{spec.horovod.backend}")
    return [*args, *_common_args(job), *spec.worker.cmd]


def launcher_command(job: Job[HorovodJobSpec]) -> list[str]:
    """Static: wait for every hostfile host, then exec horovodrun (with `mpi`, once Open MPI's
    environment passed `open_mpi_env_script`). Elastic (gloo only): horovodrun at
    once, as it waits for `--min-np` slots from the discovery script itself, with a default
    socket timeout (ELASTIC_SCRIPT).

    With the agent, the agent waits for a static job's workers (`agent_launch_command`) and
    reports those reached, having checked Open MPI's environment for `mpi` first
    (`open_mpi_env_check`, as for MPIJob); an elastic job's it does not wait for: the
    controller starts its launcher once minReplicas workers are Ready, which is their agents
    answering, and horovodrun waits for `--min-np` slots itself, as with ssh.
    """
    agent = through_agent(job)
    mpi = job.spec.horovod.backend == "mpi"
    if elastic(job):
        script = ELASTIC_SCRIPT
    elif agent:
        script = AGENT_LAUNCHER_SCRIPT
    else:
        script = _OPEN_MPI_CHECK + LAUNCHER_SCRIPT if mpi else LAUNCHER_SCRIPT
    if agent:
        script = AGENT_PATH_SCRIPT + script
    command = ["/bin/bash", "-c", script, "jobcore-horovod-launcher", *horovodrun_args(job)]
    if not agent:
        return command
    hostfile = None if elastic(job) else HOSTFILE
    check = open_mpi_env_check("horovodrun") if mpi else None
    return agent_launch_command(
        command, hostfile=hostfile, timeout=SSH_WAIT_SECONDS, env_check=check
    )


def discovery_text(hosts: Sequence[str], slots: int, port: int = SSH_PORT) -> str:
    """bash printing `host:slots` for each of `hosts` that accepts a connection on `port` (its
    sshd's or its agent's) now.

    horovodrun runs it every second. It probes the workers rather than list those the
    controller saw Ready: a running pod sees a changed ConfigMap only after the kubelet's next
    sync (a minute or more), far too late to follow a scale or a lost worker. The probes run
    in parallel, each bounded, so the script takes PROBE_SECONDS at most.
    """
    lines = [
        "#!/bin/bash",
        f"# The job's workers that accept connections on port {port} now, as host:slots lines.",
        f"slots={slots}",
        "probe() {",
        f'  timeout {PROBE_SECONDS} bash -c \'exec 3<>"/dev/tcp/$0/{port}"\' "$1" 2>/dev/null \\',
        '    && echo "$1:$slots"',
        "}",
        *(f"probe '{host}' &" for host in hosts),
        "wait",
    ]
    return "\n".join(lines) + "\n"


def candidate_hosts(job: Job[HorovodJobSpec]) -> list[str]:
    """Every worker an elastic job may have: indices below maxReplicas."""
    assert job.spec.elastic is not None
    return [worker_host(job, i) for i in range(job.spec.elastic.max_replicas)]


# Children ------------------------------------------------------------------------------


def _configmap(job: Job[Any], name: str, data: dict[str, str]) -> Object:
    metadata = child_meta(job, name, job.labels())
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def config_configmap(job: Job[HorovodJobSpec]) -> Object:
    """The static hostfile, or the elastic discovery script probing every possible worker."""
    slots = job.spec.worker.slots_per_worker
    if elastic(job):
        script = discovery_text(candidate_hosts(job), slots, launch_port(job))
        return _configmap(job, discovery_name(job), {DISCOVERY_KEY: script})
    hosts = [worker_host(job, i) for i in range(job.spec.worker.replicas)]
    hostfile = "".join(f"{host} slots={slots}\n" for host in hosts)  # Horovod's, as Open MPI's
    return _configmap(job, hostfile_name(job), {HOSTFILE_KEY: hostfile})


def worker_pod(job: Job[HorovodJobSpec], index: int, ssh: SSHAccess) -> Object:
    """sshd, or with spec.transport agent jobcore's agent, in place of the worker container's
    command; Ready once its port answers.

    A restarted worker cannot rejoin a running horovodrun; elastic jobs replace the pod.
    """
    if through_agent(job):
        return agent_worker_pod(job, index, container=WORKER_CONTAINER)
    return sshd_worker_pod(job, index, container=WORKER_CONTAINER, ssh=ssh)


def _launcher_env(job: Job[HorovodJobSpec], ssh: SSHAccess) -> list[dict[str, Any]]:
    """The wait script's settings, or the agent's; with `--mpi`, Open MPI 4 and 5 told to keep
    FQDN hosts, and to pass ssh options or to start their daemons through the agent
    (`open_mpi_shell_env`)."""
    agent = through_agent(job)
    if agent:
        values = agent_client_env()
        ssh_args = ""
    else:
        values = {
            HOSTFILE_ENV: HOSTFILE,
            WAIT_SECONDS_ENV: str(SSH_WAIT_SECONDS),
            SSH_PORT_ENV: str(ssh.port),
        }
        ssh_args = f"-o ConnectionAttempts=10 {ssh_client_args(ssh)}"
    if job.spec.horovod.backend == "mpi":
        values |= open_mpi_shell_env(ssh_args=ssh_args, agent=agent)
    return [{"name": name, "value": value} for name, value in values.items()]


def launcher_pod(job: Job[HorovodJobSpec], ssh: SSHAccess) -> Object:
    """One container copied from the worker container (image, env, resources, workingDir,
    mounts) running horovodrun, with the keys and the hostfile or discovery script mounted."""
    if elastic(job):
        source = {"name": discovery_name(job), "defaultMode": DISCOVERY_MODE}
    else:
        source = {"name": hostfile_name(job)}
    pod = copied_launcher_pod(
        job,
        worker_container=WORKER_CONTAINER,
        launcher_container=LAUNCHER_CONTAINER,
        mount_path=job.spec.ssh.ssh_auth_mount_path,
        config_volume=CONFIG_VOLUME,
        config_dir=CONFIG_DIR,
        config_map=source,
        env=_launcher_env(job, ssh),
        command=lambda _worker: launcher_command(job),
    )
    if through_agent(job):
        with_agent(pod, job.agent, ssh_secret_name(job), [LAUNCHER_CONTAINER])
    return pod
