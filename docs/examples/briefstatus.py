"""A status of a kind's own shape: one word and a restart count, stored in place of T9k's.

A kind names it in its hooks (`hooks = KindHooks(status_part=BRIEF_STATUS)`): its CRD's status
schema and printer columns come from it, and the controller stores every status through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from jobcore import Object
from jobcore.jobs import JobStatus
from jobcore.jobs import StatusPart


class Brief(BaseModel):
    """The stored status: `jobcore manifests` generates the CRD's status schema from it."""

    state: str | None = None
    restarts: int | None = None


class BriefStatus:
    """The job layer's status stored as a `Brief`, and read back from one."""

    model: type[BaseModel] = Brief
    columns: Sequence[Mapping[str, Any]] = (
        {"name": "State", "type": "string", "jsonPath": ".status.state"},
    )
    progress = frozenset[str]()  # no stored field changes with every pod event

    def read(self, stored: Mapping[str, Any]) -> JobStatus:
        # What the job layer needs back: the phase (has the job ended?) and the restarts, so
        # backoffLimit counts across passes. Brief keeps no last retry nor resumeSpecs.
        brief = Brief.model_validate(stored)
        return JobStatus.model_validate({"phase": brief.state, "restarts": brief.restarts})

    def write(self, status: JobStatus, job: Object) -> dict[str, Any]:
        return Brief(state=status.phase, restarts=status.restarts).model_dump(exclude_none=True)


BRIEF_STATUS: StatusPart = BriefStatus()
