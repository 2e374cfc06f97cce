"""Parsing a job object into a `Job`: its spec through the kind's model, then every check."""

from __future__ import annotations

from typing import Any
from typing import Generic

from pydantic import TypeAdapter
from pydantic import ValidationError

from jobcore._jobs.cached import MAX_SPEC_BYTES
from jobcore._jobs.cached import spec_bytes
from jobcore._jobs.hooks import policy_of
from jobcore._jobs.kind import DEFAULT_AGENT
from jobcore._jobs.kind import DEFAULT_CLUSTER_DOMAIN
from jobcore._jobs.kind import AgentSource
from jobcore._jobs.kind import FieldError
from jobcore._jobs.kind import Job
from jobcore._jobs.kind import JobKind
from jobcore._jobs.kind import SpecT
from jobcore._jobs.models import JobStatus
from jobcore._jobs.models import RunPolicy
from jobcore._jobs.plan import run_mode_errors
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey


def field_errors(error: ValidationError) -> list[FieldError]:
    """pydantic's errors as field paths in the API's camelCase, under `spec`."""
    return [
        FieldError(".".join(["spec", *(str(part) for part in item["loc"])]), item["msg"])
        for item in error.errors()
    ]


MAX_DEPTH = 100
"""How deeply a spec may nest: far beyond any Pod template, and within what pydantic serializes
and `copy.deepcopy` recurses through."""


def parse_job(
    kind: JobKind[SpecT],
    obj: Object,
    status: JobStatus | None = None,
    *,
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN,
    agent: AgentSource = DEFAULT_AGENT,
) -> tuple[Job[SpecT] | None, list[FieldError]]:
    """The job `obj` as `kind` sees it, or None and every problem with it, by field path.

    The one way a job is read, by the controller and by `jobcore validate` and `render`: the
    spec through `kind.spec_model` (pydantic's errors become field errors, e.g.
    `spec.worker.replicas: Input should be greater than or equal to 1`), then the replica
    types `spec.runMode` names, then `kind.validate`. `obj` needs a `metadata.name` (else that
    is the error); a missing namespace or uid reads as "". A spec nested deeper than
    `MAX_DEPTH`, or larger than `MAX_SPEC_BYTES`, is refused before it is read. `status` is the
    job's last status (none yet by default); `cluster_domain` the cluster's DNS domain, for the
    names the kind builds; `agent` where the launch agent comes from.
    """
    if errors := _metadata_errors(obj):
        return None, errors
    raw = obj.get("spec") or {}
    if too_deep := _too_deep(raw):
        return None, [FieldError(too_deep, f"nests deeper than {MAX_DEPTH} levels")]
    if (size := spec_bytes(obj)) > MAX_SPEC_BYTES:
        message = (
            f"is {size:,} bytes as JSON, more than the {MAX_SPEC_BYTES:,} bytes the controller "
            "renders: move bulk data into a ConfigMap or a volume"
        )
        return None, [FieldError("spec", message)]
    try:
        spec = kind.spec_model.model_validate(raw)
    except ValidationError as error:
        return None, field_errors(error)
    job = job_with(kind, obj, spec, status, cluster_domain=cluster_domain, agent=agent)
    errors = [*run_mode_errors(job.policy, kind.replica_types), *kind.validate(job)]
    return (None, errors) if errors else (job, [])


def job_with(
    kind: JobKind[SpecT],
    obj: Object,
    spec: SpecT,
    status: JobStatus | None = None,
    *,
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN,
    agent: AgentSource = DEFAULT_AGENT,
) -> Job[SpecT]:
    """The job `obj` as `kind` sees it, with `spec` already read through its model."""
    meta = obj["metadata"]
    return Job(
        kind=kind.resource.kind,
        name=meta["name"],
        namespace=meta.get("namespace") or "",
        uid=meta.get("uid") or "",
        spec=spec,
        status=status if status is not None else JobStatus(),
        obj=obj,
        policy=policy_of(kind, spec),
        cluster_domain=cluster_domain,
        agent=agent,
    )


def run_policy_of(kind: JobKind[Any], obj: Object) -> RunPolicy:
    """The run policy of a job whose spec may be invalid elsewhere, to clean it up as it says;
    the default if its runPolicy is invalid too.

    Only `spec.runPolicy` is read, through the kind's model and its `policy`, so that a kind
    that says its policy its own way (Kubeflow's cleanPodPolicy) is obeyed as when the spec is
    valid: `policy` gets a spec with that one field set (see `model_fields_set`).
    """
    model = kind.spec_model
    field = next((n for n, f in model.model_fields.items() if f.alias == "runPolicy"), None)
    spec = obj.get("spec")
    given = spec.get("runPolicy") if isinstance(spec, dict) else None
    if field is None:
        return RunPolicy()
    try:
        value = TypeAdapter(model.model_fields[field].annotation).validate_python(given or {})
    except ValidationError:
        return RunPolicy()
    return job_with(kind, obj, model.model_construct(**{field: value})).policy.run_policy


def _metadata_errors(obj: Object) -> list[FieldError]:
    """The API server always sets these; a job read from a file may lack them."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return [FieldError("metadata.name", "is required")]
    return [
        FieldError(f"metadata.{key}", "must be a string")
        for key in ("namespace", "uid")
        if not isinstance(meta.get(key) or "", str)
    ]


def _too_deep(spec: object) -> str | None:
    """The top-level field of `spec` under which it nests deeper than MAX_DEPTH, if any.

    Walked without recursion, so no depth can overflow the stack.
    """
    stack: list[tuple[object, int, str]] = [(spec, 0, "spec")]
    while stack:
        value, depth, field = stack.pop()
        if depth > MAX_DEPTH:
            return field
        if isinstance(value, dict):
            children: list[tuple[object, object]] = list(value.items())
        elif isinstance(value, list):
            children = list(enumerate(value))
        else:
            continue
        stack += [(item, depth + 1, field if depth else f"spec.{key}") for key, item in children]
    return None


class ParsedSpecs(Generic[SpecT]):
    """The last parse of each of `kind`'s jobs: a job is parsed again only when its spec
    changed (a new `metadata.generation`), so a pass over an unchanged job validates nothing,
    and the spec's models (with the template its pods share) live from one pass to the next.
    A job without a generation (never stored by an API server) is parsed every time.
    """

    def __init__(
        self,
        kind: JobKind[SpecT],
        *,
        cluster_domain: str = DEFAULT_CLUSTER_DOMAIN,
        agent: AgentSource = DEFAULT_AGENT,
    ) -> None:
        self.kind = kind
        self.cluster_domain = cluster_domain
        self.agent = agent
        self._parsed: dict[ObjectKey, tuple[tuple[str, int], SpecT | None, list[FieldError]]] = {}

    def parse(
        self, obj: Object, status: JobStatus | None = None
    ) -> tuple[Job[SpecT] | None, list[FieldError]]:
        """`parse_job(kind, obj, status, ...)`, from the last parse if the spec is the same."""
        meta = obj.get("metadata") or {}
        generation = meta.get("generation")
        if not isinstance(generation, int):
            return parse_job(
                self.kind, obj, status, cluster_domain=self.cluster_domain, agent=self.agent
            )
        key = ObjectKey(meta.get("namespace") or "", str(meta.get("name")))
        version = (str(meta.get("uid")), generation)
        known = self._parsed.get(key)
        if known is not None and known[0] == version:
            _, spec, errors = known
            if spec is None:
                return None, errors
            return job_with(
                self.kind, obj, spec, status, cluster_domain=self.cluster_domain, agent=self.agent
            ), []
        job, errors = parse_job(
            self.kind, obj, status, cluster_domain=self.cluster_domain, agent=self.agent
        )
        self._parsed[key] = (version, job.spec if job else None, errors)
        return job, errors

    def forget(self, key: ObjectKey) -> None:
        self._parsed.pop(key, None)
