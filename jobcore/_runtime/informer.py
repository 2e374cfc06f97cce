"""A store of one resource that a list/watch through the API client keeps current."""

from __future__ import annotations

from collections.abc import Mapping

from jobcore._runtime.client import Client
from jobcore._runtime.filing import IndexFunc
from jobcore._runtime.filing import Keep
from jobcore._runtime.filing import Transform
from jobcore._runtime.filing import strip_bulk
from jobcore._runtime.listwatch import ClientListerWatcher
from jobcore._runtime.listwatch import ListWatch
from jobcore._runtime.resources import Resource
from jobcore._runtime.store import Store


class Informer(Store):
    """Lists then watches `resource`, keeps the objects in memory and fans changes out.

    A `Store` (reading, indexes, handlers, `keep`, `share_parts`) filled by a `ListWatch`
    through `client`: after a watch ends it resumes from the last resourceVersion seen, and on
    410 Gone it lists again, so objects deleted while it was not watching are still reported
    as deletions and nothing is reported twice. A `transform` never sees a watched built-in
    object's managedFields, which no controller reads (`strip_bulk`); with no transform,
    objects are cached as the server sends them.
    """

    def __init__(
        self,
        client: Client,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        keep: Keep | None = None,
        transform: Transform | None = strip_bulk,
        share_parts: bool = True,
        indexers: Mapping[str, IndexFunc] | None = None,
        page_size: int = 500,
        watch_timeout: int = 300,
        inactivity_timeout: float = 90.0,
        max_backoff: float = 30.0,
    ) -> None:
        super().__init__(
            resource,
            namespace=namespace,
            keep=keep,
            transform=transform,
            share_parts=share_parts,
            indexers=indexers,
        )
        self.client = client
        source = ClientListerWatcher(
            client,
            resource,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            inactivity_timeout=inactivity_timeout,
            without_managed_fields=transform is not None,
        )
        self._list_watch = ListWatch(
            self,
            source,
            page_size=page_size,
            watch_timeout=watch_timeout,
            max_backoff=max_backoff,
        )
        self._running = False

    @property
    def resource_version(self) -> str | None:
        """The last resourceVersion seen, from a list, a watch event or a bookmark."""
        return self._list_watch.resource_version

    def keep_also(self, keep: Keep | None) -> None:
        """Cache the objects `keep` accepts too (None: every object), for another user of a
        shared informer; only before it runs, since objects dropped before would not return.
        """
        if self._running and self.widens(keep):
            raise RuntimeError(f"the {self.resource.plural} informer runs: too late to widen it")
        super().keep_also(keep)

    async def run(self) -> None:
        """List, then watch until cancelled; failures are retried with backoff, never raised.

        A resource that is not served yet (a CRD installed later) is retried the same way, so
        the cache syncs as soon as it exists.
        """
        self._running = True
        await self._list_watch.run()
