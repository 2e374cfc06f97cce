"""Parsing a job object into a `Job`: its spec through the kind's model, then every check."""

from __future__ import annotations

from pydantic import ValidationError

from jobcore._jobkind import FieldError, Job, JobKind, SpecT
from jobcore._jobmodels import JobStatus
from jobcore._jobplan import run_mode_errors
from jobcore._resources import Object


def field_errors(error: ValidationError) -> list[FieldError]:
    """pydantic's errors as field paths in the API's camelCase, under `spec`."""
    return [
        FieldError(".".join(["spec", *(str(part) for part in item["loc"])]), item["msg"])
        for item in error.errors()
    ]


def parse_job(
    kind: JobKind[SpecT], obj: Object, status: JobStatus | None = None
) -> tuple[Job[SpecT] | None, list[FieldError]]:
    """The job `obj` as `kind` sees it, or None and every problem with it, by field path.

    The one way a job is read, by the controller and by `jobcore validate` and `render`: the
    spec through `kind.spec_model` (pydantic's errors become field errors, e.g.
    `spec.worker.replicas: Input should be greater than or equal to 1`), then the replica
    types `spec.runMode` names, then `kind.validate`. `obj` needs `metadata.name`; a missing
    namespace or uid reads as "". `status` is the job's last status (none yet by default).
    """
    meta = obj["metadata"]
    try:
        spec = kind.spec_model.model_validate(obj.get("spec") or {})
    except ValidationError as error:
        return None, field_errors(error)
    job = Job(
        kind=kind.resource.kind,
        name=meta["name"],
        namespace=meta.get("namespace") or "",
        uid=meta.get("uid") or "",
        spec=spec,
        status=status if status is not None else JobStatus(),
        obj=obj,
    )
    errors = [*run_mode_errors(spec, kind.replica_types), *kind.validate(job)]
    return (None, errors) if errors else (job, [])
