"""Which jobs without Kueue's queue-name label Kueue queues too, by configuration.

Kueue's own settings, read the same way: `manageJobsWithoutQueueName` with
`managedJobsNamespaceSelector` queues every unlabelled job of the selected namespaces (in no
LocalQueue, so it waits until it is given one), and LocalQueue defaulting puts an unlabelled
job of a selected namespace that has a LocalQueue named `default` in that queue. Kueue's
webhook writes the label when the job is created; jobcore has none, so it decides again on
each pass, from its caches of the namespaces and of the `default` LocalQueues.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from jobcore._jobs.workload import queue_name
from jobcore._runtime.informer import Informer
from jobcore._runtime.labels import parse_selector
from jobcore._runtime.resources import Object

DEFAULT_LOCAL_QUEUE = "default"
"""The LocalQueue an unlabelled job of a selected namespace goes to, if the namespace has it."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class KueueScope:
    """Which jobs without Kueue's queue-name label Kueue queues too; none by default."""

    manage_jobs_without_queue_name: bool = False
    """Queue every unlabelled job of the selected namespaces (Kueue's setting of that name)."""
    namespace_selector: str | None = None
    """A label selector (`team in (a,b)`) on the namespaces whose unlabelled jobs are queued
    (Kueue's `managedJobsNamespaceSelector`); None: every namespace."""
    default_local_queue: bool = False
    """Put an unlabelled job of a selected namespace in its LocalQueue `default`, if it has
    one (Kueue's LocalQueue defaulting)."""

    @property
    def unlabelled(self) -> bool:
        """Whether some unlabelled jobs are queued."""
        return self.manage_jobs_without_queue_name or self.default_local_queue

    def check(self) -> None:
        """ValueError for a namespace selector that does not parse."""
        if self.namespace_selector is not None:
            parse_selector(self.namespace_selector)


LABELLED_ONLY = KueueScope()
"""Only jobs with Kueue's queue-name label are queued, as without Kueue's settings."""


def queue_finder(
    scope: KueueScope, namespaces: Informer | None, local_queues: Informer | None
) -> Callable[[Object], str | None]:
    """`queue_of(job)`: the LocalQueue the job is queued in ("" for none yet), or None for a
    job Kueue does not queue. `namespaces` caches the namespaces (needed with a selector),
    `local_queues` the LocalQueues named `default` (needed with `default_local_queue`)."""
    selected = parse_selector(scope.namespace_selector or "")

    def queue_of(obj: Object) -> str | None:
        labelled = queue_name(obj)
        if labelled is not None or not scope.unlabelled:
            return labelled
        namespace = str(obj["metadata"].get("namespace") or "")
        if namespaces is not None and scope.namespace_selector is not None:
            found = namespaces.get(namespace)
            if found is None or not selected(found["metadata"].get("labels") or {}):
                return None
        if local_queues is not None and local_queues.get(DEFAULT_LOCAL_QUEUE, namespace):
            return DEFAULT_LOCAL_QUEUE
        return "" if scope.manage_jobs_without_queue_name else None

    return queue_of
