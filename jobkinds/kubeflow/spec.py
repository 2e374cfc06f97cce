"""Kubeflow's MPIJob API, `kubeflow.org/v2beta1`, as pydantic models: the spec and the status.

Field names, defaults and value sets are Kubeflow MPI Operator v2's, so its users' YAML reads
unchanged. Bounds Kubeflow checks only in its controller (non-negative numbers, the MPI
implementation, the launcher creation policy) are in the schema here, so the API server
refuses such a job at once; the rules that span fields are the kind's `validate`.
"""

from __future__ import annotations

from typing import Annotated
from typing import Any
from typing import Literal

from pydantic import ConfigDict
from pydantic import Field

from jobcore.jobs import ApiModel
from jobcore.jobs import PodTemplateSpec

DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"
MPI_OPERATOR = "kubeflow.org/mpi-operator"
"""`runPolicy.managedBy` of the jobs this controller reconciles (as does an unset one)."""
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
"""`runPolicy.managedBy` of the jobs Kueue's MultiKueue dispatches to other clusters."""

CleanPodPolicy = Literal["None", "Running", "All"]
MPIImplementation = Literal["OpenMPI", "Intel", "MPICH"]
LauncherCreationPolicy = Literal["AtStartup", "WaitForWorkersReady"]
ReplicaRestartPolicy = Literal["Always", "OnFailure", "Never", "ExitCode"]
NonNegative = Annotated[int, Field(ge=0)]


class SchedulingPolicy(ApiModel):
    """Kubeflow's PodGroup settings, for the controller's gang scheduler (`--gang-scheduler
    volcano` or `scheduler-plugins`): each overrides the scheduler's default."""

    min_available: NonNegative | None = Field(
        default=None, description="The PodGroup's minMember; by default every pod of the job."
    )
    queue: str | None = Field(default=None, description="Volcano's queue.")
    min_resources: dict[str, Any] | None = Field(
        default=None, description="The PodGroup's minResources."
    )
    priority_class: str | None = Field(
        default=None, description="Volcano's PodGroup priorityClassName."
    )
    schedule_timeout_seconds: NonNegative | None = Field(
        default=None, description="scheduler-plugins' PodGroup scheduleTimeoutSeconds."
    )


class RunPolicy(ApiModel):
    """Clean-up, time limits, suspension and the controller that owns the job."""

    clean_pod_policy: CleanPodPolicy | None = Field(
        default=None,
        description="Worker pods deleted once the job ends: None (the default), Running (those "
        "still pending or running) or All. The launcher's pods are always kept.",
    )
    ttl_seconds_after_finished: NonNegative | None = Field(
        default=None,
        description="Delete the MPIJob itself, with all its children, this many seconds after it "
        "succeeded or failed (Kubeflow deletes only the launcher's batch Job).",
    )
    active_deadline_seconds: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description="Fail the job (reason DeadlineExceeded) this many seconds after it was "
        "created or last resumed; also the launcher Job's activeDeadlineSeconds.",
    )
    backoff_limit: NonNegative | None = Field(
        default=None,
        description="The launcher Job's backoffLimit: launcher pod failures retried before the "
        "job fails (Kubernetes' default 6 when unset).",
    )
    scheduling_policy: SchedulingPolicy | None = Field(
        default=None, description="PodGroup settings for gang scheduling."
    )
    suspend: bool = Field(
        default=False,
        description="Delete the job's pods and launcher Job, keeping its Service, ConfigMap and "
        "Secret; false again recreates them from the templates as they are then.",
    )
    managed_by: str | None = Field(
        default=None,
        description=f"{MPI_OPERATOR} or unset: this controller reconciles the job; any other "
        f"value (e.g. {MULTIKUEUE}) leaves it to that controller.",
    )


class ReplicaSpec(ApiModel):
    """The pods of one replica type."""

    replicas: int | None = Field(
        default=None, description="Launcher: 1 (the default). Worker: at least 1."
    )
    template: PodTemplateSpec = Field(
        description="The pods' template; the ssh keys, the role variable and, on the launcher, the "
        "MPI settings go to its first container."
    )
    restart_policy: ReplicaRestartPolicy | None = Field(
        default=None,
        description="The pods' restartPolicy, Never or OnFailure (launcher default OnFailure, "
        "worker default Never); it overrides the template's.",
    )


class ReplicaSpecs(ApiModel):
    """The launcher, and optionally the workers."""

    launcher: ReplicaSpec | None = Field(
        default=None, alias="Launcher", description="The launcher: a batch/v1 Job of one pod."
    )
    worker: ReplicaSpec | None = Field(
        default=None,
        alias="Worker",
        description="The workers, each a pod named <job>-worker-<i>; none for a launcher-only job.",
    )


class KubeflowMPIJobSpec(ApiModel):
    """Kubeflow's MPIJob: a launcher that runs mpirun over ssh on workers that run sshd."""

    slots_per_worker: NonNegative = Field(
        default=1, description="Slots per host in the hostfile: MPI processes per worker."
    )
    run_launcher_as_worker: bool = Field(
        default=False,
        description="List the launcher in the hostfile first, so it runs MPI processes too.",
    )
    run_policy: RunPolicy = Field(
        default_factory=RunPolicy, description="Clean-up, time limits and suspension."
    )
    mpi_replica_specs: ReplicaSpecs = Field(description="The Launcher and Worker replicas.")
    ssh_auth_mount_path: str = Field(
        default=DEFAULT_SSH_AUTH_MOUNT_PATH,
        description="Where the job's ssh keys are mounted in each pod's first container: the "
        "~/.ssh of the user that runs MPI.",
    )
    launcher_creation_policy: LauncherCreationPolicy = Field(
        default="AtStartup",
        description="AtStartup creates the launcher with the workers; WaitForWorkersReady once "
        "every worker pod is Ready (give the workers a readinessProbe).",
    )
    mpi_implementation: MPIImplementation = Field(
        default="OpenMPI", description="OpenMPI, Intel or MPICH: the launcher's environment."
    )


# Status ------------------------------------------------------------------------------------


class _Stored(ApiModel):
    """Read back from the API server: fields another writer added are ignored."""

    model_config = ConfigDict(extra="ignore")


class JobCondition(_Stored):
    """One of Created, Running, Suspended, Succeeded and Failed."""

    type: str = Field(description="Which condition.")
    status: Literal["True", "False", "Unknown"] = Field(description="Whether it holds.")
    reason: str | None = Field(default=None, description="Why, in one CamelCase word.")
    message: str | None = Field(default=None, description="Why, for a human.")
    last_update_time: str | None = Field(default=None, description="When it was last written.")
    last_transition_time: str | None = Field(
        default=None, description="When `status` last changed."
    )


class ReplicaStatus(_Stored):
    """Pod counts of one replica type."""

    active: int | None = Field(default=None, description="Running pods.")
    succeeded: int | None = Field(default=None, description="Succeeded pods.")
    failed: int | None = Field(default=None, description="Failed pods.")
    label_selector: dict[str, Any] | None = Field(
        default=None, description="Deprecated; not written."
    )
    selector: str | None = Field(default=None, description="Not written.")


class MPIJobStatus(_Stored):
    """Kubeflow's job status."""

    conditions: list[JobCondition] = Field(
        default_factory=list, description="Created, Running, Suspended, Succeeded, Failed."
    )
    replica_statuses: dict[str, ReplicaStatus] = Field(
        default_factory=dict, description="Pod counts by replica type: Launcher, Worker."
    )
    start_time: str | None = Field(
        default=None,
        description="When the job was first reconciled, or last resumed; unset while a job "
        "created suspended was never resumed.",
    )
    completion_time: str | None = Field(default=None, description="When the job ended.")
    last_reconcile_time: str | None = Field(
        default=None, description="The latest of the conditions' times."
    )
