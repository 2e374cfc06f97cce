"""A Kubeflow MPIJob's children, named and labelled as Kubeflow MPI Operator v2 names them.

A headless Service, a ConfigMap with the hostfile and Horovod's `discover_hosts.sh`, an ssh
Secret, worker pods running sshd, and the launcher as a batch/v1 Job. Every child also carries
jobcore's labels (`job.labels(...)`), by which the controller selects and counts them.

Unlike the T9k kinds, which pin a per-job host key, this kind leaves host keys unchecked, as
Kubeflow's images do through their ssh_config: workers run whatever sshd command the user gave
(with the image's own host keys), so the launcher's ssh accepts any host key and remembers none.
"""

from __future__ import annotations

import base64
from typing import Any

from jobcore import BATCH_JOBS
from jobcore import SECRETS
from jobcore import Object
from jobcore.jobs import Job
from jobcore.jobs import Observed
from jobcore.jobs import child_meta
from jobcore.jobs import pod_phase
from jobcore.jobs import worker_host
from jobcore.jobs import worker_name
from jobcore.launcher import AGENT_KEY
from jobcore.launcher import LAUNCHER
from jobcore.launcher import SSH_SECRET_MODE
from jobcore.launcher import SSH_UNPINNED_OPTIONS
from jobcore.launcher import WORKER
from jobcore.launcher import agent_client_env
from jobcore.launcher import agent_key
from jobcore.launcher import generate_keypair
from jobcore.launcher import launcher_name
from jobcore.launcher import ssh_secret_name
from jobkinds.kubeflow.spec import DEFAULT_SSH_AUTH_MOUNT_PATH
from jobkinds.kubeflow.spec import KubeflowMPIJobSpec
from jobkinds.kubeflow.spec import ReplicaSpec
from jobkinds.kubeflow.transport import agent_launcher
from jobkinds.kubeflow.transport import agent_worker
from jobkinds.kubeflow.transport import transport
from jobkinds.kubeflow.wait import wait_container
from jobkinds.mpi.flavours import Flavour
from jobkinds.mpi.flavours import agent_shell_env
from jobkinds.mpi.flavours import flavour
from jobkinds.mpi.flavours import hostfile_text
from jobkinds.mpi.flavours import hydra_callback_env
from jobkinds.mpi.mpirun import HOSTFILE
from jobkinds.mpi.mpirun import HOSTFILE_DIR
from jobkinds.mpi.mpirun import HOSTFILE_KEY
from jobkinds.mpi.openmpi import open_mpi_env

OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
OPERATOR_NAME = "mpi-operator"
ROLE_ENV = "K_MPI_JOB_ROLE"
SSH_VOLUME = "ssh-auth"
CONFIG_VOLUME = "mpi-job-config"
CONFIG_DIR = HOSTFILE_DIR
DISCOVER_HOSTS = "discover_hosts.sh"
PRIVATE_KEY = "ssh-privatekey"
PUBLIC_KEY = "ssh-publickey"
SSHD_COMMAND = ("/usr/sbin/sshd", "-De")
"""A worker's command when its first container has neither command nor args."""
SSH_ARGS = f"-o ConnectionAttempts=10 {SSH_UNPINNED_OPTIONS}"
"""The launcher's ssh options: retry a worker whose sshd starts late; accept any host key."""


def config_name(job: Job[KubeflowMPIJobSpec]) -> str:
    return f"{job.name}-config"


def worker_count(job: Job[KubeflowMPIJobSpec]) -> int:
    worker = job.spec.mpi_replica_specs.worker
    return (worker.replicas or 0) if worker is not None else 0


def _launcher_host(job: Job[KubeflowMPIJobSpec]) -> str:
    return f"{launcher_name(job)}.{job.service_domain()}"


def _owned_child_meta(job: Job[KubeflowMPIJobSpec], name: str) -> dict[str, Any]:
    """Metadata of a child other than a pod: Kubeflow's `app` label and jobcore's labels."""
    return child_meta(job, name, {"app": job.name, **job.labels()})


def _flavour(job: Job[KubeflowMPIJobSpec]) -> Flavour:
    return flavour(job.spec.mpi_implementation)


# Service, ConfigMap, Secret ------------------------------------------------------------------


def service(job: Job[KubeflowMPIJobSpec]) -> Object:
    """Headless, over the launcher and the workers; it publishes pods before they are Ready
    only when the launcher is a worker too (the launcher waits for no readiness then)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _owned_child_meta(job, job.name),
        "spec": {
            "clusterIP": "None",
            "selector": {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: job.name},
            "publishNotReadyAddresses": job.spec.run_launcher_as_worker,
        },
    }


def config_map(job: Job[KubeflowMPIJobSpec], observed: Observed) -> Object:
    """`hostfile`: every worker (the launcher first when it is one), with its slots.
    `discover_hosts.sh`: the hosts running now, for Horovod's elastic mode."""
    hosts = [worker_host(job, i) for i in range(worker_count(job))]
    if job.spec.run_launcher_as_worker:
        hosts.insert(0, _launcher_host(job))
    running = sorted(
        pod["metadata"]["name"] for pod in observed.pods_of(WORKER) if pod_phase(pod) == "Running"
    )
    discovered = [_launcher_host(job)] if job.spec.run_launcher_as_worker else []
    discovered += [f"{name}.{job.service_domain()}" for name in running]
    script = "#!/bin/sh\n" + "".join(f"echo {host}\n" for host in discovered)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _owned_child_meta(job, config_name(job)),
        "data": {
            HOSTFILE_KEY: hostfile_text(hosts, job.spec.slots_per_worker, _flavour(job)),
            DISCOVER_HOSTS: script,
        },
    }


def ssh_secret(job: Job[KubeflowMPIJobSpec], observed: Observed) -> Object:
    """The existing Secret as observed, else one with a fresh keypair and agent key (running
    pods hold them)."""
    existing = observed.get(SECRETS, ssh_secret_name(job))
    if existing is not None:
        return existing
    private, public = generate_keypair()
    files = {PRIVATE_KEY: private, PUBLIC_KEY: public + "\n"}
    data = {key: base64.b64encode(value.encode()).decode() for key, value in files.items()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _owned_child_meta(job, ssh_secret_name(job)),
        "type": "kubernetes.io/ssh-auth",
        # The agent's key whichever the transport: the Secret is never changed once made.
        "data": data | {AGENT_KEY: agent_key()},
    }


# Pods ----------------------------------------------------------------------------------------


def _restart_policy(replica: ReplicaSpec, default: str) -> str:
    """Kubeflow's ExitCode runs as Never; validation refuses Always."""
    policy = replica.restart_policy or default
    return "Never" if policy == "ExitCode" else policy


def _pod_template(
    job: Job[KubeflowMPIJobSpec],
    replica: ReplicaSpec,
    role: str,
    index: int | None,
    env: list[dict[str, str]],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Metadata and spec of a pod from `replica`'s template: its labels and annotations, plus
    Kubeflow's labels and jobcore's; host name and subdomain in the job's Service; `env` after
    the first container's own, and the ssh keys mounted there."""
    given = replica.template.api.get("metadata") or {}
    name = worker_name(job, index) if index is not None else launcher_name(job)
    labels = {
        **(given.get("labels") or {}),
        OPERATOR_NAME_LABEL: OPERATOR_NAME,
        JOB_NAME_LABEL: job.name,
        JOB_ROLE_LABEL: role,
    }
    offset = 1 if job.spec.run_launcher_as_worker else 0
    if index is not None:
        labels[REPLICA_INDEX_LABEL] = str(index + offset)
    elif offset:
        labels[REPLICA_INDEX_LABEL] = "0"
    pod_meta = child_meta(job, name, {**labels, **job.labels(role, index)})
    if given.get("annotations"):
        pod_meta["annotations"] = dict(given["annotations"])
    spec = replica.template.pod_spec()
    spec.update(hostname=name, subdomain=job.name)
    if spec.get("hostNetwork"):
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    container = spec["containers"][0]
    container["env"] = [*container.get("env", ()), *env]
    _add_volume(spec, container, _ssh_volume(job), job.spec.ssh_auth_mount_path)
    return pod_meta, spec


def _ssh_volume(job: Job[KubeflowMPIJobSpec]) -> dict[str, Any]:
    """The keys as ssh's default identity and authorized_keys; owner-only under /root/.ssh
    (a non-root user's sshd needs `StrictModes no` for the default 0644, as Kubeflow's have)."""
    secret: dict[str, Any] = {
        "secretName": ssh_secret_name(job),
        "items": [
            {"key": PRIVATE_KEY, "path": "id_rsa"},
            {"key": PUBLIC_KEY, "path": "id_rsa.pub"},
            {"key": PUBLIC_KEY, "path": "authorized_keys"},
        ],
    }
    if job.spec.ssh_auth_mount_path == DEFAULT_SSH_AUTH_MOUNT_PATH:
        secret["defaultMode"] = SSH_SECRET_MODE
    return {"name": SSH_VOLUME, "secret": secret}


def _add_volume(
    spec: dict[str, Any], container: dict[str, Any], volume: dict[str, Any], path: str
) -> None:
    spec["volumes"] = [*spec.get("volumes", ()), volume]
    mount = {"name": volume["name"], "mountPath": path}
    container["volumeMounts"] = [*container.get("volumeMounts", ()), mount]


def worker_pod(job: Job[KubeflowMPIJobSpec], index: int) -> Object:
    """A worker from the Worker template: sshd in the foreground unless the first container
    says its own command, which must run sshd itself (e.g. on another port); with the agent,
    the agent in place of either."""
    replica = job.spec.mpi_replica_specs.worker
    assert replica is not None  # only rendered for a job with workers
    pod_meta, spec = _pod_template(
        job, replica, WORKER, index, [{"name": ROLE_ENV, "value": WORKER}]
    )
    spec["restartPolicy"] = _restart_policy(replica, "Never")
    container = spec["containers"][0]
    if not container.get("command") and not container.get("args"):
        container["command"] = list(SSHD_COMMAND)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}
    return agent_worker(job, pod) if transport(job) == "agent" else pod


def launcher_env(job: Job[KubeflowMPIJobSpec], launcher: ReplicaSpec) -> list[dict[str, str]]:
    """Where the MPI implementation finds the hostfile, the slots and the ssh options.

    Open MPI gets Open MPI 5's (PRRTE) names as well as Open MPI 4's, which Kubeflow sets
    alone; MPICH gets HYDRA_LAUNCHER_EXTRA_ARGS, the name its Hydra reads, beside Kubeflow's
    HYDRA_LAUNCH_EXTRA_ARGS, which it does not. With the agent (`transport`), the agent is
    each MPI's remote shell instead (`agent_shell_env`), as for jobcore's MPIJob. Hydra's
    proxies call the launcher back at its pod's address (`hydra_callback_env`) unless it
    shares its node's network or the launcher container sets those variables itself. Unless
    the launcher is a worker too, its GPUs are hidden from it.
    """
    slots = job.spec.slots_per_worker
    template = launcher.template.api["spec"]
    agent = transport(job) == "agent"
    ssh_args = "" if agent else SSH_ARGS
    values = {ROLE_ENV: LAUNCHER} | (agent_client_env() if agent else {})
    if job.spec.mpi_implementation == "OpenMPI":
        values |= open_mpi_env(
            hostfile=HOSTFILE, slots_per_host=slots, ssh_args=ssh_args, agent=agent
        )
    elif job.spec.mpi_implementation == "Intel":
        values["I_MPI_HYDRA_HOST_FILE"] = HOSTFILE
        if not agent:
            values["I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS"] = ssh_args
        values["I_MPI_PERHOST"] = str(slots)
    else:
        values["HYDRA_HOST_FILE"] = HOSTFILE
        if not agent:
            values |= {"HYDRA_LAUNCH_EXTRA_ARGS": ssh_args, "HYDRA_LAUNCHER_EXTRA_ARGS": ssh_args}
    if job.spec.mpi_implementation != "OpenMPI":  # Hydra: Open MPI's are open_mpi_env's
        values |= agent_shell_env(_flavour(job)) if agent else {}
        if not template.get("hostNetwork"):
            user = {e.get("name") for c in template["containers"][:1] for e in c.get("env") or ()}
            values |= {k: v for k, v in hydra_callback_env().items() if k not in user}
    if not job.spec.run_launcher_as_worker:
        values |= {"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""}
    return [{"name": name, "value": value} for name, value in values.items()]


def launcher_job(job: Job[KubeflowMPIJobSpec]) -> Object:
    """The launcher: a batch/v1 Job of one pod from the Launcher template, with the hostfile at
    /etc/mpi and the implementation's environment, whose command starts once every worker's
    name resolves (`wait_container`, the last init container; with the agent, once every
    worker's agent answers too); Kubernetes' Job controller
    retries it under runPolicy.backoffLimit and stops it at runPolicy.activeDeadlineSeconds."""
    replica = job.spec.mpi_replica_specs.launcher
    assert replica is not None  # validation requires it
    pod_meta, spec = _pod_template(job, replica, LAUNCHER, None, launcher_env(job, replica))
    spec["restartPolicy"] = _restart_policy(replica, "OnFailure")
    config = {
        "name": CONFIG_VOLUME,
        "configMap": {
            "name": config_name(job),
            "items": [
                {"key": HOSTFILE_KEY, "path": HOSTFILE_KEY, "mode": 0o444},
                {"key": DISCOVER_HOSTS, "path": DISCOVER_HOSTS, "mode": 0o555},
            ],
        },
    }
    _add_volume(spec, spec["containers"][0], config, CONFIG_DIR)
    mount = {"name": CONFIG_VOLUME, "mountPath": CONFIG_DIR, "readOnly": True}
    wait = wait_container(spec["containers"][0], HOSTFILE, [mount])
    spec["initContainers"] = [*spec.get("initContainers", ()), wait]
    if transport(job) == "agent":
        agent_launcher(job, spec)
    template_meta = {k: v for k, v in pod_meta.items() if k in ("labels", "annotations")}
    policy = job.spec.run_policy
    job_spec: dict[str, Any] = {
        "template": {"metadata": template_meta, "spec": spec},
        "podReplacementPolicy": "Failed",  # no second pod while the first is still stopping
    }
    if policy.backoff_limit is not None:
        job_spec["backoffLimit"] = policy.backoff_limit
    if policy.active_deadline_seconds is not None:
        job_spec["activeDeadlineSeconds"] = policy.active_deadline_seconds
    return {
        "apiVersion": BATCH_JOBS.api_version,
        "kind": BATCH_JOBS.kind,
        "metadata": child_meta(job, launcher_name(job), {"app": job.name, **job.labels(LAUNCHER)}),
        "spec": job_spec,
    }
