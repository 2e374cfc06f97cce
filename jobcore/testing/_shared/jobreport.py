"""What a wait that timed out says of the job: its phase, its conditions, why it is stuck.

A bare TimeoutError leaves a kind author to guess; the report gives the job's last phase and
conditions, the Warning Events recorded about it, and the errors its reconciles raised (known
for a controller the kit runs, `job_controller`, whose reconciler `recording` wraps).
"""

from __future__ import annotations

import collections
from typing import Any

from jobcore._runtime.client import Client
from jobcore._runtime.controller import Controller
from jobcore._runtime.controller import Result
from jobcore._runtime.errors import NotFoundError
from jobcore._runtime.handler import Request
from jobcore._runtime.resources import EVENTS
from jobcore._runtime.resources import Resource

RECENT = 3
"""How many of a job's latest reconcile errors, and of its Warning Events, a report shows."""
_errors: dict[Request, collections.deque[str]] = collections.defaultdict(
    lambda: collections.deque(maxlen=RECENT)
)
"""The latest reconcile errors of each job a kit-run controller reconciled, oldest first."""


class _Recording:
    """A reconciler that notes each error its reconciles raise, then raises it as before."""

    def __init__(self, controller: Controller) -> None:
        self._reconciler = controller.reconciler

    async def reconcile(self, request: Request) -> Result:
        try:
            return await self._reconciler.reconcile(request)
        except Exception as error:
            _errors[request].append(f"{type(error).__name__}: {error}")
            raise


def recording(controller: Controller) -> None:
    """Note the errors of `controller`'s reconciles for the kit's waits to report."""
    controller.reconciler = _Recording(controller)


async def report(client: Client, resource: Resource, namespace: str, name: str) -> str:
    """The job as a failed wait describes it, a line per fact."""
    try:
        job = await client.get(resource, name, namespace)
    except NotFoundError:
        lines = ["the job does not exist"]
    else:
        status: Any = job.get("status") or {}
        lines = [f"last phase: {status.get('phase') or '(no status yet)'}"]
        lines += [
            f"condition {c.get('type')}={c.get('status')} {c.get('reason') or ''}: "
            f"{c.get('message') or ''}".rstrip(": ")
            for c in status.get("conditions") or ()
        ]
    items = (await client.list(EVENTS, namespace))["items"]
    warnings = [
        e
        for e in items
        if e.get("type") == "Warning"
        and e["involvedObject"].get("name") == name
        and e["involvedObject"].get("kind") == resource.kind
    ]
    warnings.sort(key=lambda e: e.get("lastTimestamp") or e["metadata"].get("creationTimestamp"))
    lines += [f"Warning event {e.get('reason')}: {e.get('message')}" for e in warnings[-RECENT:]]
    lines += [f"reconcile error: {error}" for error in _errors.get(Request(namespace, name), ())]
    return "\n".join(f"  {line}" for line in lines)
