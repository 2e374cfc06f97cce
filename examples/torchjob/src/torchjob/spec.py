"""TorchJob's API: `spec.master` and `spec.worker`, each a Pod template with a `pytorch` container.

The models subclass jobcore's, so the CRD schema, defaults and field errors come for free.
"""

from __future__ import annotations

from pydantic import Field

from jobcore.jobs import ApiModel
from jobcore.jobs import JobSpec
from jobcore.jobs import PodTemplateSpec

CONTAINER = "pytorch"
"""The container in each template that runs the user's command, with the job's env added."""


class MasterSpec(ApiModel):
    template: PodTemplateSpec = Field(
        description="Pod template of the master (rank 0); needs a container named pytorch."
    )


class WorkerSpec(ApiModel):
    replicas: int = Field(default=1, ge=1, description="Number of worker pods.")
    template: PodTemplateSpec = Field(
        description="Pod template of the workers (ranks 1..replicas); needs a container named "
        "pytorch."
    )


class TorchJobSpec(JobSpec):
    master: MasterSpec = Field(description="The master: rank 0, whose exit ends the job.")
    worker: WorkerSpec = Field(description="The workers, which reach the master by DNS name.")
