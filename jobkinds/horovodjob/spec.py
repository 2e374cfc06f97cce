"""HorovodJob's API, in T9k's group `batch.tensorstack.dev/v1beta1`, as pydantic models."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from jobcore.jobs import ApiModel
from jobcore.jobs import JobSpec
from jobcore.jobs import PodTemplateSpec
from jobcore.launcher import SSH_MOUNT
from jobcore.launcher import SSHSpec
from jobcore.launcher import Transport
from jobcore.launcher import WorkerCount

COOLDOWN_MAX = 3600
"""horovodrun refuses a blacklist cooldown over an hour."""


class HorovodWorkerSpec(ApiModel):
    """The workers, and the program horovodrun starts on them."""

    replicas: WorkerCount = Field(default=1, description="Number of worker pods.")
    slots_per_worker: int = Field(
        default=1, ge=1, description="Horovod processes per worker (the hostfile's slots)."
    )
    cmd: list[str] = Field(
        min_length=1, description="The program horovodrun starts on the workers, with its args."
    )
    template: PodTemplateSpec = Field(
        description="Pod template of workers and launcher; needs a container named worker, "
        "whose command and args are replaced (sshd on workers, horovodrun on the launcher)."
    )


class HorovodSpec(ApiModel):
    """horovodrun's options."""

    backend: Literal["gloo", "mpi"] = Field(
        default="gloo",
        description="Controller and collectives: gloo (default; needed for elastic) or mpi.",
    )
    network_interfaces: list[str] = Field(
        default_factory=list, description="Interfaces for Horovod traffic (--network-interfaces)."
    )
    start_timeout: int | None = Field(
        default=None, ge=1, description="Seconds horovodrun waits for its processes to start."
    )
    gloo_timeout_seconds: int | None = Field(
        default=None,
        ge=1,
        description="Seconds a Gloo operation waits for a peer (Horovod's default: 30); a lost "
        "worker stalls the others this long before an elastic job resets.",
    )


class BlacklistCooldown(ApiModel):
    """How long horovodrun shuns a worker whose processes failed (it doubles with each failure).

    Without it horovodrun never takes back a host that failed once, so a replaced worker
    Pod, which has the same name, could never rejoin.
    """

    min_seconds: int = Field(
        default=1,
        ge=1,
        le=COOLDOWN_MAX,
        description="The shortest time a failed worker is shunned.",
    )
    max_seconds: int = Field(
        default=60,
        ge=1,
        le=COOLDOWN_MAX,
        description="The longest time a failed worker is shunned.",
    )


class ElasticSpec(ApiModel):
    """Elastic Horovod: the job runs on between minReplicas and the workers' replicas."""

    min_replicas: WorkerCount = Field(description="Fewest workers the job runs with.")
    max_replicas: WorkerCount = Field(description="Most workers the job scales up to.")
    reset_limit: int | None = Field(
        default=None, ge=0, description="How many times horovodrun may reset its workers."
    )
    blacklist_cooldown: BlacklistCooldown = Field(
        default_factory=BlacklistCooldown,
        description="When a failed worker may rejoin (--blacklist-cooldown-range).",
    )


class HorovodSSHSpec(SSHSpec):
    """Where sshd is in the worker image, where the job's ssh keys are mounted, and its port."""

    ssh_auth_mount_path: str = Field(
        default=SSH_MOUNT,
        description="Where the job's ssh keys are mounted: the ~/.ssh of the user running Horovod.",
    )


class HorovodJobSpec(JobSpec):
    worker: HorovodWorkerSpec = Field(description="The workers, and the program they run.")
    horovod: HorovodSpec = Field(default_factory=HorovodSpec, description="horovodrun options.")
    elastic: ElasticSpec | None = Field(
        default=None,
        description="Run elastic Horovod: workers may come and go within [min, max] replicas.",
    )
    ssh: HorovodSSHSpec = Field(
        default_factory=HorovodSSHSpec, description="sshd and key locations."
    )
    transport: Transport = Field(
        default="ssh",
        description="How the launcher reaches the workers: ssh (the workers run spec.ssh's "
        "sshd) or agent (jobcore's agent, copied into the pods by the controller: the image "
        "needs no sshd, and spec.ssh is not used).",
    )
