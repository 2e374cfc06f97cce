"""HorovodJob's children: hostfile or discovery script, Service, worker and launcher pods.

Split from the kind (`horovodjob`) so the horovodrun command line and the host discovery
script read, and run in tests, on their own. Every user-provided string reaches horovodrun as
a positional argument, never as script text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jobcore import PODS, Job, Object, Observed
from jobkinds import _ssh

if TYPE_CHECKING:
    from jobkinds.horovodjob import HorovodJobSpec

LAUNCHER = "launcher"
WORKER = "worker"
WORKER_CONTAINER = "worker"
"""The template's container that runs sshd on workers and horovodrun on the launcher."""
LAUNCHER_CONTAINER = "launcher"
SSH_VOLUME = "jobcore-ssh"
CONFIG_VOLUME = "jobcore-horovod"
CONFIG_DIR = "/etc/horovod"
HOSTFILE_KEY = "hostfile"
HOSTFILE = f"{CONFIG_DIR}/{HOSTFILE_KEY}"
DISCOVERY_KEY = "discover_hosts.sh"
DISCOVERY_SCRIPT = f"{CONFIG_DIR}/{DISCOVERY_KEY}"
DISCOVERY_MODE = 0o755
DEFAULT_SSH_MOUNT = "/root/.ssh"
"""ssh reads its identity and config from here unaided; elsewhere horovodrun is told."""
DEBUG_LAUNCHER_COMMAND = ("sleep", "inf")

HOSTFILE_ENV = "JOBCORE_HOROVOD_HOSTFILE"
WAIT_SECONDS_ENV = "JOBCORE_HOROVOD_WAIT_SECONDS"
# The shared bounded wait for every hostfile host to resolve and accept ssh, then horovodrun;
# its hostfile and timeout come from the environment, which a test can point elsewhere.
LAUNCHER_SCRIPT = (
    _ssh.wait_script(HOSTFILE_ENV, HOSTFILE, WAIT_SECONDS_ENV)
    + r"""echo "jobcore: all ${#workers[@]} worker(s) reachable; starting: horovodrun $*"
exec horovodrun "$@"
"""
)


# Names -----------------------------------------------------------------------------------


def worker_name(job: Job[Any], index: int) -> str:
    return f"{job.name}-worker-{index}"


def launcher_name(job: Job[Any]) -> str:
    return f"{job.name}-launcher"


def ssh_secret_name(job: Job[Any]) -> str:
    return f"{job.name}-ssh"


def hostfile_name(job: Job[Any]) -> str:
    return f"{job.name}-hostfile"


def discovery_name(job: Job[Any]) -> str:
    return f"{job.name}-discovery"


def worker_host(job: Job[Any], index: int) -> str:
    """A worker's DNS name through the headless Service."""
    return f"{worker_name(job, index)}.{job.name}.{job.namespace}.svc"


# Modes -----------------------------------------------------------------------------------


def elastic(job: Job[HorovodJobSpec]) -> bool:
    return job.spec.elastic is not None


def paused(job: Job[Any]) -> bool:
    mode = job.spec.run_mode
    return bool(mode and mode.pause and mode.pause.enabled)


def debugging(job: Job[Any]) -> bool:
    mode = job.spec.run_mode
    return bool(mode and mode.debug and mode.debug.enabled)


def _debug(job: Job[Any], replica_type: str) -> tuple[list[str] | None, bool] | None:
    """In debug mode: the replica's command (None = the default) and skipInitContainer."""
    if not debugging(job):
        return None
    for replica in job.spec.run_mode.debug.replica_specs or ():
        if replica.type == replica_type:
            return replica.command, replica.skip_init_container
    return None, False


# Pod state -------------------------------------------------------------------------------


def phase(pod: Object | None) -> str | None:
    return None if pod is None else (pod.get("status") or {}).get("phase")


def is_ready(pod: Object | None) -> bool:
    if pod is None or pod["metadata"].get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def ended(pod: Object | None) -> bool:
    return phase(pod) in ("Succeeded", "Failed")


# horovodrun ------------------------------------------------------------------------------


def _common_args(job: Job[HorovodJobSpec]) -> list[str]:
    horovod = job.spec.horovod
    args = []
    if horovod.network_interfaces:
        args += ["--network-interfaces", ",".join(horovod.network_interfaces)]
    if horovod.start_timeout is not None:
        args += ["--start-timeout", str(horovod.start_timeout)]
    mount = job.spec.ssh.ssh_auth_mount_path.rstrip("/")
    if mount != DEFAULT_SSH_MOUNT:
        args += ["--ssh-identity-file", f"{mount}/{_ssh.PRIVATE_KEY}"]
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
    else:
        args += ["--hostfile", HOSTFILE]
    args.append(f"--{spec.horovod.backend}")
    return [*args, *_common_args(job), *spec.worker.cmd]


def launcher_command(job: Job[HorovodJobSpec]) -> list[str]:
    """Static: wait for every hostfile host, then exec horovodrun. Elastic: horovodrun at once,
    as it waits for `--min-np` slots from the discovery script itself."""
    if elastic(job):
        return ["horovodrun", *horovodrun_args(job)]
    return ["/bin/bash", "-c", LAUNCHER_SCRIPT, "jobcore-horovod-launcher", *horovodrun_args(job)]


def discovery_text(hosts: Sequence[str], slots: int) -> str:
    """A POSIX sh script printing `host:slots` per host, exactly those given, in that order."""
    lines = [
        "#!/bin/sh",
        "# The job's Running and Ready workers; the controller rewrites this file as they change.",
        *(f"echo '{host}:{slots}'" for host in hosts),
    ]
    return "\n".join(lines) + "\n"


def available_hosts(job: Job[HorovodJobSpec], observed: Observed) -> list[str]:
    """The wanted workers (index < replicas) that are Running and Ready now, sorted."""
    return sorted(
        worker_host(job, i)
        for i in range(job.spec.worker.replicas)
        if phase(pod := observed.get(PODS, worker_name(job, i))) == "Running" and is_ready(pod)
    )


# Children ------------------------------------------------------------------------------


def _meta(job: Job[Any], name: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": job.namespace, "labels": dict(labels)}


def _configmap(job: Job[Any], name: str, data: dict[str, str]) -> Object:
    meta = _meta(job, name, job.labels())
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def config_configmap(job: Job[HorovodJobSpec], observed: Observed) -> Object:
    """The static hostfile, or the elastic discovery script rendered from the observed pods."""
    slots = job.spec.worker.slots_per_worker
    if elastic(job):
        script = discovery_text(available_hosts(job, observed), slots)
        return _configmap(job, discovery_name(job), {DISCOVERY_KEY: script})
    hosts = [worker_host(job, i) for i in range(job.spec.worker.replicas)]
    hostfile = "".join(f"{host} slots={slots}\n" for host in hosts)  # Horovod's, as Open MPI's
    return _configmap(job, hostfile_name(job), {HOSTFILE_KEY: hostfile})


def service(job: Job[Any]) -> Object:
    """Headless, publishing workers before they are Ready so their names resolve early."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(job, job.name, job.labels()),
        "spec": {
            "clusterIP": "None",
            "selector": job.labels(WORKER),
            "publishNotReadyAddresses": True,
            "ports": [{"name": "ssh", "port": _ssh.SSH_PORT, "targetPort": _ssh.SSH_PORT}],
        },
    }


def _pod(job: Job[HorovodJobSpec], replica_type: str, index: int, name: str) -> Object:
    """A pod from the worker template, labelled for `replica_type`; containers left to adapt."""
    template = job.spec.worker.template
    metadata = template.metadata
    labels = {**((metadata and metadata.labels) or {}), **job.labels(replica_type, index)}
    meta = _meta(job, name, labels)
    if metadata and metadata.annotations:
        meta["annotations"] = dict(metadata.annotations)
    spec = template.spec.to_api()
    spec["volumes"] = [
        *spec.get("volumes", ()),
        _ssh.secret_volume(SSH_VOLUME, ssh_secret_name(job)),
    ]
    debug = _debug(job, replica_type)
    if debug is not None and debug[1]:
        spec.pop("initContainers", None)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _ssh_mount(job: Job[HorovodJobSpec]) -> dict[str, Any]:
    return {"name": SSH_VOLUME, "mountPath": job.spec.ssh.ssh_auth_mount_path, "readOnly": True}


def worker_pod(job: Job[HorovodJobSpec], index: int) -> Object:
    """sshd in place of the worker container's command; Ready once port 22 answers."""
    ssh = job.spec.ssh
    pod = _pod(job, WORKER, index, worker_name(job, index))
    spec = pod["spec"]
    spec["hostname"] = worker_name(job, index)
    spec["subdomain"] = job.name
    # A restarted sshd cannot rejoin a running horovodrun; elastic jobs replace the pod.
    spec["restartPolicy"] = job.spec.worker.template.spec.restart_policy or "Never"
    debug = _debug(job, WORKER)
    custom = debug[0] if debug else None
    for container in spec["containers"]:
        if container["name"] != WORKER_CONTAINER:
            continue
        container.pop("args", None)
        container["command"] = custom or _ssh.sshd_command(ssh.sshd_path, ssh.ssh_auth_mount_path)
        container["volumeMounts"] = [*container.get("volumeMounts", ()), _ssh_mount(job)]
        container.setdefault("terminationMessagePolicy", "FallbackToLogsOnError")
        if custom:  # a debug command need not serve ssh: no probe that can never pass
            container.pop("readinessProbe", None)
        else:
            container["readinessProbe"] = {
                "tcpSocket": {"port": _ssh.SSH_PORT},
                "periodSeconds": 2,
                "failureThreshold": 3,
            }
    return pod


_NOT_ON_LAUNCHER = (
    "name",
    "command",
    "args",
    "ports",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "restartPolicy",
)
"""Fields of the worker container that belong to sshd, not to horovodrun."""


def _launcher_env(job: Job[HorovodJobSpec]) -> list[dict[str, Any]]:
    """The wait script's settings; with `--mpi`, Open MPI 4 and 5 told to keep FQDN hosts."""
    values = {
        HOSTFILE_ENV: HOSTFILE,
        WAIT_SECONDS_ENV: str(_ssh.WAIT_SECONDS),
    }
    if job.spec.horovod.backend == "mpi":
        ssh_args = f"-o ConnectionAttempts=10 {_ssh.client_args(job.spec.ssh.ssh_auth_mount_path)}"
        values |= {
            "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
            "OMPI_MCA_plm_rsh_args": ssh_args,
            "PRTE_MCA_prte_keep_fqdn_hostnames": "true",
            "PRTE_MCA_plm_ssh_args": ssh_args,
        }
    return [{"name": name, "value": value} for name, value in values.items()]


def launcher_pod(job: Job[HorovodJobSpec]) -> Object:
    """One container copied from the worker container (image, env, resources, workingDir,
    mounts) running horovodrun, with the keys and the hostfile or discovery script mounted."""
    pod = _pod(job, LAUNCHER, 0, launcher_name(job))
    pod_spec = pod["spec"]
    pod_spec["restartPolicy"] = "Never"
    if elastic(job):
        source = {"name": discovery_name(job), "defaultMode": DISCOVERY_MODE}
    else:
        source = {"name": hostfile_name(job)}
    pod_spec["volumes"].append({"name": CONFIG_VOLUME, "configMap": source})
    worker = next(c for c in pod_spec["containers"] if c["name"] == WORKER_CONTAINER)
    user_env = list(worker.get("env", ()))
    user_names = {str(e["name"]) for e in user_env if "name" in e}
    debug = _debug(job, LAUNCHER)
    if debug is not None:
        command = list(debug[0] or DEBUG_LAUNCHER_COMMAND)
    else:
        command = launcher_command(job)
    container = {k: v for k, v in worker.items() if k not in _NOT_ON_LAUNCHER}
    container.update(
        name=LAUNCHER_CONTAINER,
        command=command,
        # The user's own value of one of our variables wins.
        env=[*(e for e in _launcher_env(job) if e["name"] not in user_names), *user_env],
        volumeMounts=[
            *worker.get("volumeMounts", ()),
            _ssh_mount(job),
            {"name": CONFIG_VOLUME, "mountPath": CONFIG_DIR, "readOnly": True},
        ],
    )
    container.setdefault("terminationMessagePolicy", "FallbackToLogsOnError")
    pod_spec["containers"] = [container]
    return pod
