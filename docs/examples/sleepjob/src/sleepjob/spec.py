"""The job's API: what `spec` holds, on top of the run policy every job has."""

from pydantic import Field

from jobcore.jobs import JobSpec
from jobcore.jobs import PodTemplateSpec


class SleepJobSpec(JobSpec):
    replicas: int = Field(default=1, ge=1, description="Number of pods.")
    template: PodTemplateSpec = Field(description="The pods' template.")
