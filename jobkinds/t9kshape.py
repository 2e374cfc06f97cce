"""Accept T9k's current job shape (`replicaSpecs`, per-kind config) by rewriting it to the seed's.

T9k's public tutorials write MPIJob and ColossalAIJob as `spec.replicaSpecs[]{type, replicas,
restartPolicy, template}` plus `spec.mpiConfig` / `spec.torchConfig`; the seed guides write
`spec.worker` and friends. Each kind's spec model declares both sets of fields (so the CRD
accepts both) and rewrites the current shape into the seed's before validation, so the rest of
the kind sees one model and renders the same children for both.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Literal
from typing import get_args

from pydantic import Field

from jobcore.jobs import ApiModel
from jobcore.launcher import WorkerCount

JsonSchema = dict[str, Any]
ReplicaType = Literal["worker", "launcher"]
REPLICA_TYPES: tuple[str, ...] = get_args(ReplicaType)


class ReplicaSpec(ApiModel):
    """One entry of `spec.replicaSpecs` in T9k's current shape."""

    type: ReplicaType = Field(description="Which replica type.")
    replicas: WorkerCount | None = Field(default=None, description="How many pods (workers).")
    restart_policy: str | None = Field(
        default=None,
        description="The workers' restartPolicy; Never when unset (ColossalAIJob: always Never).",
    )
    template: dict[str, Any] = Field(
        default_factory=dict,
        description="A Pod template; for the launcher, {} means the defaults.",
    )


def rewrite(
    data: Any,
    *,
    current: Sequence[str],
    seed: Sequence[str],
    convert: Callable[[dict[str, Any], dict[str, dict[str, Any]]], dict[str, Any]],
) -> Any:
    """Rewrite `data` (a raw spec) from the current shape to the seed's; the seed's passes as is.

    `current` and `seed` name each shape's top-level fields (wire names): a spec with fields of
    both is rejected, naming them. `convert(spec, replicas)` gets the spec without
    `replicaSpecs` and the replica specs by type, and returns the seed-shape fields to add.
    """
    if not isinstance(data, Mapping) or not any(name in data for name in current):
        return data
    mixed = [name for name in seed if name in data]
    if mixed:
        raise ValueError(
            f"spec.{', spec.'.join(name for name in current if name in data)} (T9k's current "
            f"shape) cannot be combined with spec.{', spec.'.join(mixed)} (the seed's shape); "
            "use one or the other"
        )
    if problem := _unreadable(data, current):
        raise ValueError(problem)
    spec = {key: copy.deepcopy(value) for key, value in data.items() if key != "replicaSpecs"}
    replicas: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(data.get("replicaSpecs") or ()):
        kind = str(entry["type"])
        if kind in replicas:
            raise ValueError(f"spec.replicaSpecs[{index}]: a second {kind!r} entry")
        replicas[kind] = dict(entry)
    if "worker" not in replicas:
        raise ValueError("spec.replicaSpecs: needs an entry with type: worker")
    converted = convert(spec, replicas)  # may take its config out of `spec`
    return {**spec, **converted}


def _unreadable(data: Mapping[str, Any], current: Sequence[str]) -> str | None:
    """The first part of the current shape the rewrite cannot read, by path, if any.

    The rewrite reads the configs, each replica entry's type and its template down to the
    containers; every other field is checked by the spec model once rewritten.
    """
    for name in current:
        value = data.get(name)
        expected = list if name == "replicaSpecs" else Mapping
        if value is not None and not isinstance(value, expected):
            return f"spec.{name}: must be {'a list' if expected is list else 'an object'}"
    for index, entry in enumerate(data.get("replicaSpecs") or ()):
        path = f"spec.replicaSpecs[{index}]"
        if not isinstance(entry, Mapping):
            return f"{path}: must be an object"
        if entry.get("type") not in REPLICA_TYPES:
            return f"{path}.type: must be one of {', '.join(REPLICA_TYPES)}"
        template = entry.get("template")
        pod = template.get("spec") if isinstance(template, Mapping) else None
        containers = pod.get("containers") if isinstance(pod, Mapping) else None
        if template is not None and not isinstance(template, Mapping):
            return f"{path}.template: must be an object"
        if pod is not None and not isinstance(pod, Mapping):
            return f"{path}.template.spec: must be an object"
        if containers is not None and not (
            isinstance(containers, list) and all(isinstance(c, Mapping) for c in containers)
        ):
            return f"{path}.template.spec.containers: must be a list of objects"
    return None


def worker_template(
    entry: Mapping[str, Any], *, container: str, renamed: str | None = None
) -> dict[str, Any]:
    """The worker entry's template with its restartPolicy applied and its container renamed."""
    template = copy.deepcopy(dict(entry.get("template") or {}))
    pod = template["spec"] = template.get("spec") or {}
    if entry.get("restartPolicy"):
        pod["restartPolicy"] = entry["restartPolicy"]
    if renamed:
        for item in pod.get("containers") or ():
            if item.get("name") == container:
                item["name"] = renamed
    return template


def without_required(*names: str) -> Callable[[JsonSchema], None]:
    """A `json_schema_extra` that lets the CRD accept a spec lacking `names` (the other shape
    provides them); the model still requires them after the rewrite."""

    def edit(schema: JsonSchema) -> None:
        required = [name for name in schema.get("required", ()) if name not in names]
        if required:
            schema["required"] = required
        else:
            schema.pop("required", None)

    return edit
