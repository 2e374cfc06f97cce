"""The status a kind reports: its API shape, and how the job layer reads and writes it.

The job layer thinks in one status, `JobStatus` (T9k's conditions, phase, tasks, aggregate):
it derives it from the pods and the kind's outcome, and reads back from the stored one whether
a job ended, how often it restarted and which resumeSpecs hold. A `StatusPart` says what is
stored. `T9K_STATUS` stores `JobStatus` as it is, and is what a kind gets unless it names
another in its hooks (`KindHooks.status_part`); a kind whose API has another status shape supplies a
part that translates both ways, and its CRD's status schema and printer columns come from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Protocol

from pydantic import BaseModel

from jobcore._jobs.models import JobStatus
from jobcore._runtime.resources import Object


class StatusPart(Protocol):
    """How a kind's status is stored. Plain class attributes satisfy the properties."""

    @property
    def model(self) -> type[BaseModel]:
        """The stored status' model: the CRD's status schema is generated from it."""
        ...

    @property
    def columns(self) -> Sequence[Mapping[str, Any]]:
        """`additionalPrinterColumns` that read the status, e.g. the phase."""
        ...

    @property
    def progress(self) -> frozenset[str]:
        """Stored fields that change with every pod event (counts of ready pods, say): a
        change in these alone is written at most once per the writer's interval."""
        ...

    def read(self, stored: Mapping[str, Any]) -> JobStatus:
        """The job layer's status from the stored one; pydantic's ValidationError if it
        cannot be read."""
        ...

    def write(self, status: JobStatus, job: Object) -> dict[str, Any]:
        """The stored form of `status` for the job object `job` (whose own fields, such as its
        name, a message may quote); equal statuses of one job give equal forms."""
        ...


class T9kStatus:
    """T9k's status, stored as the job layer derives it (see docs/status.md)."""

    model: type[BaseModel] = JobStatus
    columns: Sequence[Mapping[str, Any]] = (
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {
            "name": "Ready",
            "type": "string",
            "description": "Ready/total replicas",
            "jsonPath": ".status.ready",
        },
    )
    progress = frozenset({"tasks", "aggregate", "ready"})

    def read(self, stored: Mapping[str, Any]) -> JobStatus:
        return JobStatus.model_validate(stored)

    def write(self, status: JobStatus, job: Object) -> dict[str, Any]:
        return status.to_api()


T9K_STATUS: StatusPart = T9kStatus()
