"""The bundled kinds' sample jobs, and walking a job document by field path: what the
bad-input tests (unit and integration) generate their malformed jobs from."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from jobcore import Object
from jobcore.jobs import JobKind
from jobkinds.colossalaijob import ColossalAIJobKind
from jobkinds.horovodjob import HorovodJobKind
from jobkinds.kubeflow import KubeflowMPIJobKind
from jobkinds.mpijob import MPIJobKind

KINDS: dict[str, JobKind[Any]] = {
    kind.resource.kind: kind for kind in (MPIJobKind(), HorovodJobKind(), ColossalAIJobKind())
}
"""The T9k kinds by kind name."""
KUBEFLOW_MPIJOB: JobKind[Any] = KubeflowMPIJobKind()
_BY_RESOURCE: dict[tuple[object, object], JobKind[Any]] = {
    (kind.resource.api_version, kind.resource.kind): kind
    for kind in (*KINDS.values(), KUBEFLOW_MPIJOB)
}
SAMPLES_DIR = Path(__file__).resolve().parents[2] / "manifests" / "samples"

FieldPath = tuple[str | int, ...]


def sample(name: str) -> Object:
    """The sample job manifests/samples/`name`.yaml, freshly read: the caller may change it."""
    job: Object = yaml.safe_load((SAMPLES_DIR / f"{name}.yaml").read_text(encoding="utf-8"))
    return job


def kind_of(doc: Object) -> JobKind[Any]:
    """The bundled kind of a job document, by its apiVersion and kind; KeyError for none."""
    return _BY_RESOURCE[(doc.get("apiVersion"), doc.get("kind"))]


def sample_jobs(*, kubeflow: bool = False) -> list[Object]:
    """Every sample job of the T9k kinds in manifests/samples, in file order; with `kubeflow`,
    Kubeflow's MPIJobs too."""
    samples = []
    for path in sorted(SAMPLES_DIR.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict):
            continue
        kind = _BY_RESOURCE.get((doc.get("apiVersion"), doc.get("kind")))
        if kind is not None and (kubeflow or kind is not KUBEFLOW_MPIJOB):
            samples.append(doc)
    return samples


def nested(depth: int, leaf: Any) -> Any:
    """`leaf` inside `depth` levels of alternating lists and dicts."""
    for i in range(depth):
        leaf = {"n": leaf} if i % 2 else [leaf]
    return leaf


def paths(
    doc: Any, prefix: FieldPath = (), *, skip: Callable[[FieldPath], bool] | None = None
) -> Iterator[FieldPath]:
    """Every path into `doc`, the root included; none at or below a path `skip` accepts."""
    if skip is not None and skip(prefix):
        return
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from paths(value, (*prefix, key), skip=skip)
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from paths(value, (*prefix, index), skip=skip)


def at(doc: Any, path: FieldPath) -> Any:
    for part in path:
        doc = doc[part]
    return doc
