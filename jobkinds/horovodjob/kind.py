"""The HorovodJob kind: validation, the children rendered from what is observed, the outcome."""

from __future__ import annotations

import re
from collections.abc import Mapping
from collections.abc import Sequence
from typing import ClassVar

from jobcore import PODS
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import FieldError
from jobcore.jobs import Job
from jobcore.jobs import KindHooks
from jobcore.jobs import Observed
from jobcore.jobs import Outcome
from jobcore.jobs import container_errors
from jobcore.jobs import failure_message
from jobcore.jobs import is_ready
from jobcore.jobs import job_name_errors
from jobcore.jobs import name_list
from jobcore.jobs import pod_ended
from jobcore.jobs import pod_failures
from jobcore.jobs import pod_phase
from jobcore.jobs import pod_problems
from jobcore.jobs import worker_name
from jobcore.launcher import SSH_VOLUME
from jobcore.launcher import WORKER
from jobcore.launcher import LauncherWorkersKind
from jobcore.launcher import env_from_errors
from jobcore.launcher import env_name_errors
from jobcore.launcher import job_ssh
from jobcore.launcher import launch_children
from jobcore.launcher import launched
from jobcore.launcher import launcher_name
from jobcore.launcher import mount_errors
from jobcore.launcher import path_errors
from jobcore.launcher import template_container
from jobcore.launcher import unlaunched
from jobkinds.horovodjob.children import CONFIG_DIR
from jobkinds.horovodjob.children import CONFIG_VOLUME
from jobkinds.horovodjob.children import LAUNCHER_CONTAINER
from jobkinds.horovodjob.children import WORKER_CONTAINER
from jobkinds.horovodjob.children import config_configmap
from jobkinds.horovodjob.children import launch_port
from jobkinds.horovodjob.children import launcher_pod
from jobkinds.horovodjob.children import through_agent
from jobkinds.horovodjob.children import worker_pod
from jobkinds.horovodjob.spec import HorovodJobSpec
from jobkinds.mpi.openmpi import open_mpi_env_errors

_INTERFACE = re.compile(r"[A-Za-z0-9_.:@-]+")


def _min_counts(job: Job[HorovodJobSpec]) -> dict[str, int]:
    """An elastic job trains on as few as minReplicas workers: Kueue may admit that many."""
    elastic = job.spec.elastic
    return {WORKER: elastic.min_replicas} if elastic is not None else {}


class HorovodJobKind(LauncherWorkersKind):
    """HorovodJob: see the package docstring; satisfies `jobcore.JobKind[HorovodJobSpec]`."""

    hooks: ClassVar[KindHooks] = KindHooks(min_counts=_min_counts)
    resource: Resource = Resource("batch.tensorstack.dev", "v1beta1", "HorovodJob", "horovodjobs")
    short_names: Sequence[str] = ("hj", "hvdj")
    spec_model: type[HorovodJobSpec] = HorovodJobSpec

    def validate(self, job: Job[HorovodJobSpec]) -> list[FieldError]:
        """What the schema cannot say and would otherwise fail at pod creation or horovodrun."""
        spec = job.spec
        most = max(spec.worker.replicas, spec.elastic.max_replicas if spec.elastic else 0)
        return [
            *job_name_errors(job, worker_name(job, most - 1)),
            *container_errors(spec, WORKER_CONTAINER),
            *_horovod_errors(spec),
            *mount_errors(
                spec,
                container=WORKER_CONTAINER,
                volumes=(SSH_VOLUME, CONFIG_VOLUME),
                mount_paths={spec.ssh.ssh_auth_mount_path.rstrip("/"), CONFIG_DIR},
                message="is where the job mounts its ssh keys, hostfile or discovery script",
            ),
        ]

    def render(self, job: Job[HorovodJobSpec], observed: Observed) -> list[Object]:
        """The ssh Secret (an existing one as observed: see `job_ssh`), the hostfile or
        discovery script, then the Service, the workers and the launcher (`launch_children`).

        An elastic job's launcher starts once minReplicas workers are Ready. Its ended worker
        is left out, so the reconciler deletes it and recreates it on the next pass; its
        discovery script probes every worker up to maxReplicas, so it does not change as
        workers come and go.
        """
        # horovodrun's own ssh command accepts any host key: see `SSHAccess.tunnel`.
        secret, ssh = job_ssh(
            job, observed, mount_path=job.spec.ssh.ssh_auth_mount_path, tunnel=True
        )
        elastic = job.spec.elastic
        workers = [
            worker_pod(job, i, ssh)
            for i in range(job.spec.worker.replicas)
            if not (elastic and pod_ended(observed.get(PODS, worker_name(job, i))))
        ]
        head = [secret, config_configmap(job)]
        return launch_children(
            job,
            observed,
            head,
            workers,
            lambda: launcher_pod(job, ssh),
            ready_needed=elastic.min_replicas if elastic else None,
        )

    def interpret(self, job: Job[HorovodJobSpec], observed: Observed) -> Outcome:
        """The launcher's exit decides; a static job's worker that stops first fails it; a
        launch through the agent that reached too few workers fails it (`_launch_checked`).

        While an elastic job runs, its Running condition says how many workers are Ready,
        which is what a scale or a lost worker changes.
        """
        launcher = observed.get(PODS, launcher_name(job))
        names = [worker_name(job, i) for i in range(job.spec.worker.replicas)]
        workers = {name: observed.get(PODS, name) for name in names}
        launcher_phase = pod_phase(launcher)
        if launcher_phase == "Succeeded":
            done = Outcome("succeeded", "Succeeded", "The job has finished successfully.")
            return _launch_checked(job, done, launcher)
        if launcher is not None and launcher_phase == "Failed":
            failure = failure_message(launcher, LAUNCHER_CONTAINER, last_line=False)
            return Outcome(
                "failed", "Failed", "The job exited with an error code.", replica_failure=failure
            )
        if job.spec.elastic is None:
            failures = pod_failures(workers.values(), WORKER_CONTAINER, last_line=False)
            if failures:
                message = "A worker stopped before the launcher finished."
                return Outcome("failed", "Failed", message, replica_failure=failures)
        replica_failure = pod_problems([launcher, *workers.values()])
        if launcher_phase == "Running":
            if job.spec.elastic is None:
                return Outcome("running", replica_failure=replica_failure)
            ready = sum(is_ready(pod) for pod in workers.values())
            message = f"{ready} of {len(workers)} worker(s) Ready for horovodrun to use."
            return Outcome("running", "Running", message, replica_failure=replica_failure)
        reason, message = _pending(job, launcher, workers)
        return Outcome("pending", reason, message, replica_failure=replica_failure)


def _launch_checked(
    job: Job[HorovodJobSpec], succeeded: Outcome, launcher: Object | None
) -> Outcome:
    """`succeeded`, unless the launcher's agent reached too few workers: a static job's every
    worker (horovodrun places `-np` = every slot), an elastic job's minReplicas of those it may
    have. An elastic horovodrun starts no rank before `--min-np` slots, one host's slots each,
    so a run that succeeded reached at least minReplicas hosts, whichever came and went; more
    is not required, as a job scaled down or that lost workers legitimately ends on fewer."""
    if not through_agent(job):
        return succeeded
    elastic = job.spec.elastic
    replicas = job.spec.worker.replicas
    most, needed = (elastic.max_replicas, elastic.min_replicas) if elastic else (replicas, replicas)
    names = [worker_name(job, i) for i in range(most)]
    reached = launched(launcher, LAUNCHER_CONTAINER)
    return unlaunched(names, reached, needed, launcher_name(job)) or succeeded


def _pending(
    job: Job[HorovodJobSpec], launcher: Object | None, workers: Mapping[str, Object | None]
) -> tuple[str, str]:
    """What a job that is not running yet waits for."""
    if launcher is not None:
        return "LauncherPending", "Waiting for the launcher to start."
    unready = [name for name, pod in workers.items() if not is_ready(pod)]
    elastic = job.spec.elastic
    needed = elastic.min_replicas if elastic else len(workers)
    if len(workers) - len(unready) >= needed:
        return "LauncherCreating", "Enough workers are Ready; creating the launcher."
    if missing := [name for name, pod in workers.items() if pod is None]:
        return (
            "WorkersCreating",
            f"Waiting for {len(missing)} worker(s) to be created: {name_list(missing)}.",
        )
    server = "the agent" if through_agent(job) else "sshd"
    return (
        "WorkersNotReady",
        f"Waiting for {needed} of {len(workers)} worker(s) to become Ready ({server} accepting "
        f"connections on port {launch_port(job)}); not Ready: {name_list(unready)}.",
    )


def _horovod_errors(spec: HorovodJobSpec) -> list[FieldError]:
    """Elastic bounds and backend, interface names, sshd/key paths, and what horovodrun would
    hand to a shell."""
    errors = [
        FieldError(
            f"spec.horovod.networkInterfaces[{i}]", f"is not a network interface name: {name!r}"
        )
        for i, name in enumerate(spec.horovod.network_interfaces)
        if not _INTERFACE.fullmatch(name)
    ]
    elastic = spec.elastic
    if elastic is not None:
        if spec.horovod.backend != "gloo":
            errors.append(FieldError("spec.horovod.backend", 'must be "gloo" for an elastic job'))
        if elastic.max_replicas < elastic.min_replicas:
            errors.append(
                FieldError("spec.elastic.maxReplicas", "must be at least spec.elastic.minReplicas")
            )
        cooldown = elastic.blacklist_cooldown
        if cooldown.max_seconds < cooldown.min_seconds:
            errors.append(
                FieldError(
                    "spec.elastic.blacklistCooldown.maxSeconds",
                    "must be at least spec.elastic.blacklistCooldown.minSeconds",
                )
            )
        if not elastic.min_replicas <= spec.worker.replicas <= elastic.max_replicas:
            errors.append(
                FieldError(
                    "spec.worker.replicas",
                    f"must be within spec.elastic [{elastic.min_replicas}, "
                    f"{elastic.max_replicas}], got {spec.worker.replicas}",
                )
            )
    errors += path_errors(
        {
            "spec.ssh.sshdPath": spec.ssh.sshd_path,
            "spec.ssh.sshAuthMountPath": spec.ssh.ssh_auth_mount_path,
        }
    )
    return errors + _launcher_shell_errors(spec)


def _launcher_shell_errors(spec: HorovodJobSpec) -> list[FieldError]:
    """What horovodrun writes unquoted into a shell command, from the worker container it runs
    in: every env name (gloo: `env NAME=...` on each worker; mpi: `mpirun -x NAME` in a local
    shell), so `envFrom` prefixes too, gloo's `cd <workingDir>` on each worker, and the
    variables mpirun copies."""
    found = template_container(spec, WORKER_CONTAINER)
    if found is None:
        return []
    path, container = found
    env = container.env or ()
    errors = env_name_errors(env, f"{path}.env", reader="horovodrun")
    errors += env_from_errors(container, f"{path}.envFrom", reader="horovodrun")
    if spec.horovod.backend == "gloo":
        errors += path_errors({f"{path}.workingDir": container.working_dir})
    else:
        errors += open_mpi_env_errors(env, f"{path}.env")
    return errors
