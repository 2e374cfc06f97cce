"""MPIJob's children: hostfile, worker and launcher pods (the headless Service is jobcore's).

Split from the kind so the launcher's behaviour reads, and runs in tests, on its own. What
the MPI implementations differ in is `jobkinds.mpi`'s (`Flavour`), and so is the launcher's
command (`mpirun`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobcore import Object
from jobcore.jobs import Job
from jobcore.jobs import child_meta
from jobcore.jobs import worker_host
from jobcore.launcher import SSHAccess
from jobcore.launcher import agent_worker_pod
from jobcore.launcher import copied_launcher_pod
from jobcore.launcher import hostfile_name
from jobcore.launcher import ssh_secret_name
from jobcore.launcher import sshd_worker_pod
from jobcore.launcher import with_agent
from jobkinds.mpi.flavours import flavour
from jobkinds.mpi.flavours import hostfile_text
from jobkinds.mpi.flavours import slots
from jobkinds.mpi.mpirun import HOSTFILE_DIR
from jobkinds.mpi.mpirun import HOSTFILE_KEY
from jobkinds.mpi.mpirun import launcher_args
from jobkinds.mpi.mpirun import launcher_command
from jobkinds.mpi.mpirun import launcher_env
from jobkinds.mpijob.spec import LAUNCHER_CONTAINER
from jobkinds.mpijob.spec import WORKER_CONTAINER
from jobkinds.mpijob.spec import MPIJobSpec

HOSTFILE_VOLUME = "jobcore-hostfile"


# Names -----------------------------------------------------------------------------------


def worker_hosts(job: Job[MPIJobSpec]) -> list[str]:
    """The workers' DNS names through the headless Service, as the hostfile lists them."""
    return [worker_host(job, i) for i in range(job.spec.worker.replicas)]


# Children ------------------------------------------------------------------------------


def hostfile_configmap(job: Job[MPIJobSpec]) -> Object:
    mpi = flavour(job.spec.mpi_implementation)
    per_host = slots(job.spec.worker.extra_mpi_args, mpi)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": child_meta(job, hostfile_name(job), job.labels()),
        "data": {HOSTFILE_KEY: hostfile_text(worker_hosts(job), per_host, mpi)},
    }


def worker_pod(job: Job[MPIJobSpec], index: int, ssh: SSHAccess) -> Object:
    """sshd, or with spec.transport agent jobcore's agent, in place of the mpi-worker
    container's command; Ready once its port answers."""
    if job.spec.transport == "agent":
        return agent_worker_pod(job, index, container=WORKER_CONTAINER)
    return sshd_worker_pod(job, index, container=WORKER_CONTAINER, ssh=ssh)


def launcher_pod(job: Job[MPIJobSpec], ssh: SSHAccess) -> Object:
    """One container copied from mpi-worker (image, resources, env, mounts...) running the
    implementation's launcher.

    The template's other containers stay on the workers; its volumes, init containers and
    pod-level settings apply to the launcher too (T9k: the template configures both), but not
    the template's hostname and subdomain: no worker reaches the launcher by name (Hydra's
    proxies call it back at its address, see `hydra_callback_env`).
    """
    spec = job.spec
    mpi = flavour(spec.mpi_implementation)

    def command(worker: Mapping[str, Any]) -> list[str]:
        # A fieldRef or resourceFieldRef differs per pod: each rank keeps its worker's own value.
        shared = [
            str(e["name"])
            for e in worker.get("env", ())
            if "name" in e and not {"fieldRef", "resourceFieldRef"} & set(e.get("valueFrom") or {})
        ]
        launcher = launcher_args(
            mpi,
            mpi_home=spec.mpi_home,
            mca=spec.mca,
            forwarded_env=shared,
            extra_mpi_args=spec.worker.extra_mpi_args,
            cmd=spec.worker.cmd,
        )
        return launcher_command(launcher, mpi, spec.transport)

    pod = copied_launcher_pod(
        job,
        worker_container=WORKER_CONTAINER,
        launcher_container=LAUNCHER_CONTAINER,
        mount_path=spec.ssh.ssh_auth_mount_path,
        config_volume=HOSTFILE_VOLUME,
        config_dir=HOSTFILE_DIR,
        config_map={"name": hostfile_name(job)},
        env=launcher_env(
            mpi,
            slots_per_host=slots(spec.worker.extra_mpi_args, mpi),
            ssh=ssh,
            mpi_home=spec.mpi_home,
            host_network=bool(spec.worker.template.api["spec"].get("hostNetwork")),
            transport=spec.transport,
        ),
        command=command,
    )
    if spec.transport == "agent":
        with_agent(pod, job.agent, ssh_secret_name(job), [LAUNCHER_CONTAINER])
    for key in ("hostname", "subdomain"):
        pod["spec"].pop(key, None)
    return pod
