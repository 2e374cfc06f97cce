"""Which job a child belongs to, as its cache events are mapped to reconcile requests.

The same mapping feeds the observer that confirms a job's expected creations and deletions
from those events.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping

from jobcore._runtime.expectations import Expectations
from jobcore._runtime.handler import Mapper
from jobcore._runtime.handler import Request
from jobcore._runtime.handler import requests_for_owner
from jobcore._runtime.informer import Informer
from jobcore._runtime.resources import BATCH_JOBS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import Resource
from jobcore._runtime.resources import controller_of
from jobcore._runtime.resources import run_by_batch_job


class ExpectationObserver:
    """Confirms expected creations and deletions of a kind's children from cache events."""

    def __init__(self, expectations: Expectations, job_of: Mapper) -> None:
        self._expectations = expectations
        self._job_of = job_of

    def on_add(self, obj: Object) -> None:
        for key in self._job_of(obj):
            self._expectations.creation_observed(key, obj["metadata"]["name"])

    def on_update(self, old: Object, new: Object) -> None:
        pass

    def on_delete(self, obj: Object) -> None:
        for key in self._job_of(obj):
            self._expectations.deletion_observed(key, obj["metadata"]["name"])


def child_mapper(owner: Resource, informers: Mapping[Resource, Informer]) -> Mapper:
    """Map a child to the job of `owner`'s kind it belongs to: its controller, or for a pod of
    a batch Job (a launcher run by Kubernetes' Job controller), the job that controls that
    Job, as `informers` hold it when the child's event comes."""
    owned = requests_for_owner(owner)

    def job_of(obj: Object) -> Iterable[Request]:
        batch_jobs = informers.get(BATCH_JOBS)
        if batch_jobs is not None and run_by_batch_job(obj):
            ref, meta = controller_of(obj) or {}, obj["metadata"]
            batch_job = batch_jobs.get(ref.get("name", ""), meta.get("namespace"))
            if batch_job is None or batch_job["metadata"].get("uid") != ref.get("uid"):
                return ()
            return owned(batch_job)
        return owned(obj)

    return job_of
