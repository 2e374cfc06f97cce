"""Kubeflow's MPIJob kind (`kubeflow.org/v2beta1`): MPI Operator v2's API on jobcore.

Users of Kubeflow's MPI Operator bring their YAML unchanged: the same children under the same
names and labels (see `children`), the same status (see `status`) and metrics (`metrics`).
jobcore's job layer does the rest, so some behaviour is jobcore's:

- `runPolicy.suspend` pauses the job: its pods and its launcher Job are deleted (Kubeflow
  suspends the launcher Job instead), its Service, ConfigMap and Secret are kept, and
  resuming creates them again from the templates as they are then.
- `runPolicy.ttlSecondsAfterFinished` deletes the MPIJob itself once it ended, and its
  children with it; `activeDeadlineSeconds` fails the job once that long has passed since it
  was created or last resumed, and bounds the launcher Job too.
- Evicted workers fail the job for good (reason MPIJobEvicted); Kubeflow marks it Failed but
  keeps reconciling it.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import ClassVar

from jobcore import BATCH_JOBS
from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import SECRETS
from jobcore import SERVICES
from jobcore import EventRecorder
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import CleanUpPolicy
from jobcore.jobs import FieldError
from jobcore.jobs import GangPolicy
from jobcore.jobs import Job
from jobcore.jobs import JobPolicy
from jobcore.jobs import JobStatus
from jobcore.jobs import KindHooks
from jobcore.jobs import Observed
from jobcore.jobs import Outcome
from jobcore.jobs import PauseMode
from jobcore.jobs import RunMode
from jobcore.jobs import RunPolicy
from jobcore.jobs import clip
from jobcore.jobs import is_ready
from jobcore.jobs import job_name_errors
from jobcore.jobs import pod_phase
from jobcore.jobs import pod_problems
from jobcore.jobs import summed_requests
from jobcore.jobs import unique_name_errors
from jobcore.jobs import worker_name
from jobcore.launcher import LAUNCHER
from jobcore.launcher import MAX_WORKERS
from jobcore.launcher import WORKER
from jobcore.launcher import launched
from jobcore.launcher import launcher_name
from jobcore.launcher import path_errors
from jobcore.launcher import unlaunched
from jobkinds.kubeflow import events
from jobkinds.kubeflow import metrics
from jobkinds.kubeflow.children import config_map
from jobkinds.kubeflow.children import launcher_job
from jobkinds.kubeflow.children import service
from jobkinds.kubeflow.children import ssh_secret
from jobkinds.kubeflow.children import worker_count
from jobkinds.kubeflow.children import worker_pod
from jobkinds.kubeflow.spec import MPI_OPERATOR
from jobkinds.kubeflow.spec import MULTIKUEUE
from jobkinds.kubeflow.spec import KubeflowMPIJobSpec
from jobkinds.kubeflow.spec import SchedulingPolicy
from jobkinds.kubeflow.status import EVICTED
from jobkinds.kubeflow.status import KubeflowStatus
from jobkinds.kubeflow.transport import transport
from jobkinds.kubeflow.transport import transport_errors
from jobkinds.mpi.flavours import workers_needed

_CLEAN_UP: dict[str | None, CleanUpPolicy | None] = {
    None: None,
    "None": None,
    "Running": "Unfinished",
    "All": "All",
}
"""Kubeflow's cleanPodPolicy as jobcore's clean-up policy."""
_MESSAGE_LIMIT = 1024


def _manages(obj: Object) -> bool:
    """Kubeflow's managedBy: another controller's jobs (MultiKueue's) are left alone."""
    spec = obj.get("spec")
    run_policy = spec.get("runPolicy") if isinstance(spec, dict) else None
    managed_by = run_policy.get("managedBy") if isinstance(run_policy, dict) else None
    return managed_by in (None, "", MPI_OPERATOR)


def _policy(spec: KubeflowMPIJobSpec) -> JobPolicy:
    """Kubeflow's runPolicy for jobcore: its clean-up, deadline and TTL; suspend as a pause;
    schedulingPolicy as the PodGroup's settings under the controller's gang scheduler.

    jobcore never restarts the whole job: backoffLimit is the launcher Job's.
    """
    given = spec.run_policy
    run_policy = RunPolicy(
        clean_up_policy=_CLEAN_UP[given.clean_pod_policy],
        backoff_limit=0,
        active_deadline_seconds=given.active_deadline_seconds,
        ttl_seconds_after_finished=given.ttl_seconds_after_finished,
    )
    pause = RunMode(pause=PauseMode(enabled=True)) if given.suspend else None
    return JobPolicy(run_policy=run_policy, run_mode=pause, gang=_gang(spec))


def _announce(recorder: EventRecorder, obj: Object, previous: JobStatus, status: JobStatus) -> None:
    """Kubeflow's Events and metrics for each status written."""
    events.announce(recorder, obj, previous, status)
    metrics.announce(obj, previous, status)


class KubeflowMPIJobKind:
    """Kubeflow's MPIJob: see the module docstring; a `JobKind[KubeflowMPIJobSpec]`."""

    resource: Resource = Resource("kubeflow.org", "v2beta1", "MPIJob", "mpijobs")
    hooks: ClassVar[KindHooks] = KindHooks(
        controller_name="mpijobs.kubeflow.org",
        status_part=KubeflowStatus(),
        policy=_policy,
        manages=_manages,
        announce=_announce,
        forget=metrics.forget,  # a deleted job's per-job metric series go with it
        kueue=False,  # Kueue integrates Kubeflow's MPIJob itself
    )
    short_names: Sequence[str] = ()
    spec_model: type[KubeflowMPIJobSpec] = KubeflowMPIJobSpec
    replica_types: Sequence[str] = (LAUNCHER, WORKER)
    child_resources: Sequence[Resource] = (SECRETS, CONFIGMAPS, SERVICES, PODS, BATCH_JOBS)
    containers: Mapping[str, str] = {}  # each pod's first container
    debug_commands: Mapping[str, Sequence[str] | None] = {}
    kept_after_cleanup: Sequence[str] = (LAUNCHER,)
    printer_columns: Sequence[Mapping[str, Any]] = ()

    def validate(self, job: Job[KubeflowMPIJobSpec]) -> list[FieldError]:
        """Kubeflow's rules beyond the schema, and what the API server would refuse later."""
        spec, path = job.spec, "spec.mpiReplicaSpecs"
        launcher, worker = spec.mpi_replica_specs.launcher, spec.mpi_replica_specs.worker
        errors = []
        if launcher is None:
            errors.append(FieldError(f"{path}.Launcher", "must have Launcher replica spec"))
        elif launcher.replicas not in (None, 1):
            errors.append(FieldError(f"{path}.Launcher.replicas", "must be 1"))
        if worker is not None and not 1 <= (worker.replicas or 0) <= MAX_WORKERS:
            errors.append(
                FieldError(f"{path}.Worker.replicas", f"must be between 1 and {MAX_WORKERS}")
            )
        for name, replica in (("Launcher", launcher), ("Worker", worker)):
            if replica is None:
                continue
            template = f"{path}.{name}.template.spec"
            errors += unique_name_errors(replica.template.spec, template)
            if replica.restart_policy in ("Always", "ExitCode"):
                message = f'Unsupported value: "{replica.restart_policy}": supported values: '
                errors.append(
                    FieldError(f"{path}.{name}.restartPolicy", message + '"Never", "OnFailure"')
                )
        longest = worker_name(job, max(worker_count(job), 1) - 1)
        errors += job_name_errors(job, longest)
        errors += path_errors({"spec.sshAuthMountPath": spec.ssh_auth_mount_path})
        if spec.run_policy.managed_by not in (None, "", MPI_OPERATOR, MULTIKUEUE):
            message = f'Unsupported value: supported values: "{MPI_OPERATOR}", "{MULTIKUEUE}"'
            errors.append(FieldError("spec.runPolicy.managedBy", message))
        return errors + transport_errors(job)

    def replicas(self, job: Job[KubeflowMPIJobSpec]) -> Mapping[str, int]:
        """The launcher and the workers: under a gang scheduler, its PodGroup's members."""
        return {LAUNCHER: 1, WORKER: worker_count(job)}

    def render(self, job: Job[KubeflowMPIJobSpec], observed: Observed) -> list[Object]:
        """Secret, ConfigMap, Service, workers, and the launcher Job when it is due.

        The existing ssh Secret is returned as observed; the launcher Job is due at once
        (AtStartup, or under a gang scheduler) or once every worker is Ready, and stays once
        it exists.
        """
        children = [
            ssh_secret(job, observed),
            config_map(job, observed),
            service(job),
            *(worker_pod(job, i) for i in range(worker_count(job))),
        ]
        if self._launcher_due(job, observed):
            children.append(launcher_job(job))
        return children

    def _launcher_due(self, job: Job[KubeflowMPIJobSpec], observed: Observed) -> bool:
        if (
            job.spec.launcher_creation_policy == "AtStartup"
            or job.gang
            or observed.get(BATCH_JOBS, launcher_name(job)) is not None
        ):
            return True
        names = [worker_name(job, i) for i in range(worker_count(job))]
        return all(is_ready(observed.get(PODS, name)) for name in names)

    def interpret(self, job: Job[KubeflowMPIJobSpec], observed: Observed) -> Outcome:
        """The launcher Job's end decides (a success through the agent that reached too few
        workers fails: `_unlaunched`); evicted workers fail the job; it runs once a launcher
        pod and every worker run."""
        name = f"{job.namespace}/{job.name}"
        launcher = observed.get(BATCH_JOBS, launcher_name(job))
        if _job_condition(launcher, "Complete") is not None:
            if (short := _unlaunched(job, observed.pods_of(LAUNCHER))) is not None:
                return short
            return Outcome("succeeded", "MPIJobSucceeded", f"MPIJob {name} successfully completed.")
        if (failed := _job_condition(launcher, "Failed")) is not None:
            return _launcher_failure(failed, observed.pods_of(LAUNCHER), name)
        workers = observed.pods_of(WORKER)
        if evicted := [p for p in workers if (p.get("status") or {}).get("reason") == "Evicted"]:
            message = f"{len(evicted)}/{len(workers)} workers are evicted"
            return Outcome("failed", EVICTED, message)
        launchers = observed.pods_of(LAUNCHER)
        running = [p for p in workers if pod_phase(p) == "Running"]
        count = worker_count(job)
        # A launcher pod that succeeded runs until its Job says it is complete.
        launched = any(pod_phase(p) in ("Running", "Succeeded") for p in launchers)
        if len(running) == count and launched:
            return Outcome("running", "MPIJobRunning", f"MPIJob {name} is running.")
        if launcher is None:
            ready = sum(is_ready(p) for p in workers)
            reason = "WaitingForWorkers"
            message = f"{ready} of {count} worker(s) Ready; the launcher starts once all are."
        else:
            reason = "MPIJobPending"
            message = f"{len(running)} of {count} worker(s) running; the launcher is not."
        if problems := pod_problems([*launchers, *workers]):
            message = f"{message} {problems}"
        return Outcome("pending", reason, message)


def _gang(spec: KubeflowMPIJobSpec) -> GangPolicy:
    """schedulingPolicy as jobcore's per-job PodGroup settings; minResources, when it gives
    none, summed from the pods as Kubeflow sums them (see `_min_resources`)."""
    given = spec.run_policy.scheduling_policy or SchedulingPolicy()
    min_resources = given.min_resources
    if min_resources is None:
        min_resources = _min_resources(spec, given.min_available) or None
    return GangPolicy(
        min_available=given.min_available,
        queue=given.queue,
        min_resources=min_resources,
        priority_class=given.priority_class,
        schedule_timeout_seconds=given.schedule_timeout_seconds,
    )


def _min_resources(spec: KubeflowMPIJobSpec, min_available: int | None) -> dict[str, str]:
    """What the first minAvailable pods request: the launcher, then as many workers as fit.

    Kubeflow puts the replica type of the higher PriorityClass value first; jobcore reads no
    PriorityClasses, so the launcher comes first, as in Kubeflow when both have the same
    value. Nothing for minAvailable 0, nor for a spec read in part (an invalid job's
    runPolicy alone, to clean it up).
    """
    if min_available == 0 or "mpi_replica_specs" not in spec.model_fields_set:
        return {}
    replicas = spec.mpi_replica_specs
    members = []
    if replicas.launcher is not None:
        members.append((replicas.launcher.template.spec, 1))
    if replicas.worker is not None:
        workers = replicas.worker.replicas or 0
        if min_available is not None:
            workers = max(0, min(workers, min_available - len(members)))
        members.append((replicas.worker.template.spec, workers))
    return summed_requests(members)


def _unlaunched(job: Job[KubeflowMPIJobSpec], launchers: Sequence[Object]) -> Outcome | None:
    """Through the agent, the failure of a launch whose succeeded launcher pod reached fewer
    workers than its command's rank count needs at slotsPerWorker (`workers_needed`)."""
    succeeded = [pod for pod in launchers if pod_phase(pod) == "Succeeded"]
    launcher = job.spec.mpi_replica_specs.launcher
    if transport(job) != "agent" or not succeeded or launcher is None:
        return None
    container = launcher.template.api["spec"]["containers"][0]
    command = [*(container.get("command") or ()), *(container.get("args") or ())]
    names = [worker_name(job, i) for i in range(worker_count(job))]
    return unlaunched(
        names,
        launched(succeeded[-1], container["name"]),
        workers_needed(command, len(names), job.spec.slots_per_worker),
        succeeded[-1]["metadata"]["name"],
    )


def _job_condition(batch_job: Object | None, kind: str) -> dict[str, Any] | None:
    """The batch Job's condition of `kind` if it holds."""
    conditions = ((batch_job or {}).get("status") or {}).get("conditions") or ()
    return next(
        (c for c in conditions if c.get("type") == kind and c.get("status") == "True"), None
    )


def _launcher_failure(failed: Mapping[str, Any], pods: list[Object], name: str) -> Outcome:
    """The launcher Job's failure; after its last retry, with its last failed pod's reason."""
    reason = failed.get("reason") or "MPIJobFailed"
    message = failed.get("message") or f"MPIJob {name} has failed"
    if reason == "BackoffLimitExceeded":
        ended = [p for p in pods if pod_phase(p) == "Failed"]
        last = max(ended, key=lambda p: p["metadata"].get("creationTimestamp") or "", default=None)
        status = (last or {}).get("status") or {}
        if status.get("reason"):
            reason = f"{reason}/{status['reason']}"
            message = f"{message}: {status.get('message', '')}"
    return Outcome("failed", reason, clip(message, _MESSAGE_LIMIT))
