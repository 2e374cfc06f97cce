"""What a pod's status says of its run: its phase, its containers' states, whether it ended.

The job layer's pod predicates, read the same way by the reconciler, the launcher helpers and
the kinds (through `jobcore.jobs`).
"""

from __future__ import annotations

from typing import Any

from jobcore._runtime.resources import Object


def pod_phase(pod: Object | None) -> str | None:
    return None if pod is None else (pod.get("status") or {}).get("phase")


def pod_ended(pod: Object | None) -> bool:
    return pod_phase(pod) in ("Succeeded", "Failed")


def container_statuses(pod: Object) -> list[dict[str, Any]]:
    """The pod's init containers' statuses, then its containers', as the kubelet reports them."""
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]


def pod_stopped(pod: Object) -> bool:
    """Whether none of the pod's containers runs any more: it ended, or every container the
    kubelet reported has terminated (a pod it stopped for a deletion, whatever its phase)."""
    statuses = container_statuses(pod)
    return pod_ended(pod) or (
        bool(statuses) and all("terminated" in (s.get("state") or {}) for s in statuses)
    )
