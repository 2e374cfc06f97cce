"""A kind's parsed jobs as its unit tests build them, over the kit's `job_manifest` and
`job_of`: one default spec, name and namespace per test module."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from typing import Generic
from typing import TypeVar

from jobcore import Object
from jobcore.jobs import ApiModel
from jobcore.jobs import Job
from jobcore.jobs import JobKind
from jobcore.testing import job_manifest
from jobcore.testing import job_of
from jobcore.testing import pod_of

SpecT = TypeVar("SpecT", bound=ApiModel)


@dataclass(frozen=True)
class JobMaker(Generic[SpecT]):
    """`make_job(spec=None, name=None)`: a job of `kind` with `spec` (else a fresh `default()`)
    and `name` (else the module's), its spec read through the kind's model, not validated;
    `make_job.pod(...)`: a pod of the default job."""

    kind: JobKind[SpecT]
    default: Callable[[], Mapping[str, Any]]
    name: str
    namespace: str

    def __call__(
        self, spec: Mapping[str, Any] | None = None, name: str | None = None
    ) -> Job[SpecT]:
        raw = spec if spec is not None else self.default()
        job_name = self.name if name is None else name
        manifest = job_manifest(self.kind, raw, name=job_name, namespace=self.namespace)
        return job_of(self.kind, manifest)

    def pod(self, name: str, replica_type: str, index: int = 0, **state: Any) -> Object:
        """The kit's `pod_of` for the default job; `state` as `pod_of` takes it (`phase`,
        `ready`, `containers`, other status fields)."""
        return pod_of(self(), name, replica_type, index, **state)
