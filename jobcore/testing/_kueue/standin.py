"""`KueueStandIn`: Kueue's scheduler and workload controller, in process, for tests.

It works over Kueue's own API types on a real API server, for the tests of a job
integration where Kueue itself cannot run.
"""

from __future__ import annotations

import itertools

from jobcore._runtime.client import Client
from jobcore._runtime.controller import Controller
from jobcore._runtime.controller import reconciler_from
from jobcore._runtime.handler import Request
from jobcore._runtime.handler import request_for_object
from jobcore._runtime.informer import Informer
from jobcore._runtime.manager import Manager
from jobcore._runtime.resources import Object
from jobcore.testing._kueue import api
from jobcore.testing._kueue.cluster import Assumed
from jobcore.testing._kueue.cluster import Snapshot
from jobcore.testing._kueue.scheduler import SCHEDULE
from jobcore.testing._kueue.scheduler import Scheduler
from jobcore.testing._kueue.workloads import WaitForPodsReady
from jobcore.testing._kueue.workloads import WorkloadController


class _Arrivals:
    """Numbers Workloads in the order the stand-in first sees them: the tie-break between
    Workloads created within the same second (creationTimestamp has whole seconds)."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}
        self._next = itertools.count()

    def on_add(self, obj: Object) -> None:
        self.seen.setdefault(api.key(obj), next(self._next))

    def on_update(self, old: Object, new: Object) -> None:
        self.on_add(new)

    def on_delete(self, obj: Object) -> None:
        self.seen.pop(api.key(obj), None)


class KueueStandIn:
    """Plays Kueue for a test: admits, preempts, evicts and requeues Workloads as Kueue's
    scheduler and workload controller do (see docs/testing.md for how it is simpler).

    Install Kueue's CRDs first (`install_kueue_crds`). `run()` blocks until cancelled:
    `async with background(KueueStandIn(client).run()):`. `wait_for_pods_ready` turns on
    Kueue's waitForPodsReady timeout; it is off by default, as in Kueue.
    """

    def __init__(
        self, client: Client, *, wait_for_pods_ready: WaitForPodsReady | None = None
    ) -> None:
        self.manager = Manager(client, metrics_address=None, health_address=None)
        self.workloads = self.manager.informer(api.WORKLOADS)
        self._local_queues = self.manager.informer(api.LOCAL_QUEUES)
        self._cluster_queues = self.manager.informer(api.CLUSTER_QUEUES)
        self._flavors = self.manager.informer(api.RESOURCE_FLAVORS)
        self._checks = self.manager.informer(api.ADMISSION_CHECKS)
        self._arrivals = _Arrivals()
        self.workloads.add_handler(self._arrivals)
        self._assumed = Assumed()
        scheduler = Scheduler(client, self._assumed, self.snapshot)
        self.scheduler = Controller("kueue-standin-scheduler", reconciler_from(scheduler.reconcile))
        controller = WorkloadController(
            client, self._assumed, self.snapshot, wait_for_pods_ready=wait_for_pods_ready
        )
        self.workload_controller = Controller(
            "kueue-standin-workloads",
            reconciler_from(controller.reconcile),
            max_concurrent_reconciles=4,
        )
        queues: list[Informer] = [
            self._local_queues,
            self._cluster_queues,
            self._flavors,
            self._checks,
        ]
        for informer in [self.workloads, *queues]:
            self.scheduler.watch(informer, mapper=lambda _: [SCHEDULE])
        self.workload_controller.watch(self.workloads, mapper=request_for_object)
        for informer in queues:
            self.workload_controller.watch(informer, mapper=self._every_workload)
        self.manager.add_controller(self.scheduler)
        self.manager.add_controller(self.workload_controller)

    def _every_workload(self, _: Object) -> list[Request]:
        return [
            Request(w["metadata"].get("namespace", ""), w["metadata"]["name"])
            for w in self.workloads.list()
        ]

    def snapshot(self) -> Snapshot:
        """The cluster as the stand-in sees it now, its own recent writes included."""
        return Snapshot(
            workloads=[self._assumed.view(w) for w in self.workloads.list()],
            local_queues={
                (q["metadata"].get("namespace", ""), q["metadata"]["name"]): q
                for q in self._local_queues.list()
            },
            cluster_queues={q["metadata"]["name"]: q for q in self._cluster_queues.list()},
            flavors={f["metadata"]["name"]: f for f in self._flavors.list()},
            seen=dict(self._arrivals.seen),
            admission_checks={c["metadata"]["name"]: c for c in self._checks.list()},
        )

    async def run(self) -> None:
        await self.manager.run()
