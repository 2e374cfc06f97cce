"""The changes Kueue makes to a Workload's status, made on a copy.

Reserve quota and admit, keep the admission checks and the Admitted condition in step, leave
pending, evict (with the Preempted condition for a preemption), requeue, finish.

Each follows the function of Kueue's `pkg/workload` named in its docstring, with the same
condition types, reasons and messages; each returns whether it changed anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

from jobcore._runtime.resources import Object
from jobcore.testing._kueue import api

_NO_MESSAGE = "Waiting for the admission check's controller"
"""A new check's message: Kueue writes none (""), which Kubernetes 1.20 reads as null and
refuses in a required field."""


def _status(workload: Object) -> dict[str, Any]:
    status: dict[str, Any] = workload.setdefault("status", {})
    status["conditions"] = list(status.get("conditions") or [])
    return status


def _generation(workload: Object) -> int | None:
    value = workload["metadata"].get("generation")
    return value if isinstance(value, int) else None


def _set(workload: Object, kind: str, status: bool, reason: str, message: str) -> bool:
    """Set the condition `kind`, observed at the Workload's generation."""
    items = _status(workload)["conditions"]
    return api.set_condition(items, kind, status, reason, message, generation=_generation(workload))


def _reset(workload: Object, kind: str, reason: str) -> bool:
    """resetActiveCondition: a True condition turns False, its message kept as "Previously"."""
    old = api.find(_status(workload)["conditions"], kind)
    if old is None or old.get("status") != "True":
        return False
    return _set(workload, kind, False, reason, f"Previously: {old.get('message', '')}")


def reserve(workload: Object, admission: Object, checks: Sequence[str] = ()) -> bool:
    """SetQuotaReservation: QuotaReserved True, Evicted and Preempted reset to False; then,
    if the Workload lists every admission check in `checks` (HasAllRequiredChecks), the
    scheduler's SyncAdmittedCondition: Admitted True when they all are Ready."""
    status = _status(workload)
    status["admission"] = admission
    status.pop("resourceRequests", None)
    message = f"Quota reserved in ClusterQueue {admission['clusterQueue']}"
    _set(workload, api.QUOTA_RESERVED, True, "QuotaReserved", message)
    _reset(workload, api.EVICTED, "QuotaReserved")
    _reset(workload, api.PREEMPTED, "QuotaReserved")
    if set(checks) <= {c.get("name") for c in status.get("admissionChecks") or ()}:
        sync_admitted(workload)
    return True


def sync_admitted(workload: Object) -> bool:
    """SyncAdmittedCondition (gate UnadmittedWorkloadsObservability off, as by default):
    Admitted True once quota is reserved and every admission check is Ready, else False with
    why, written only when that differs from whether it is admitted now."""
    reserved = api.is_true(workload, api.QUOTA_RESERVED)
    checks = _status(workload).get("admissionChecks") or ()
    ready = all(c.get("state") == "Ready" for c in checks)
    if api.is_true(workload, api.ADMITTED) == (reserved and ready):
        return False
    if reserved and ready:
        return _set(workload, api.ADMITTED, True, "Admitted", "The workload is admitted")
    if not reserved and not ready:
        reason = "NoReservationUnsatisfiedChecks"
        message = "The workload has no reservation and not all checks ready"
    elif not reserved:
        reason, message = "NoReservation", "The workload has no reservation"
    else:
        reason, message = "UnsatisfiedChecks", "The workload has not all checks ready"
    return _set(workload, api.ADMITTED, False, reason, message)


def sync_checks(workload: Object, checks: Sequence[str]) -> bool:
    """syncAdmissionCheckConditions: a Pending state for each of `checks` the Workload lacks,
    the states of the others dropped, sorted by name."""
    status = _status(workload)
    states = list(status.get("admissionChecks") or ())
    kept = [s for s in states if s.get("name") in checks]
    names = {s.get("name") for s in kept}
    kept += [_check(name, "Pending") for name in checks if name not in names]
    if len(kept) == len(states) and not set(checks) - names:
        return False
    if kept:
        status["admissionChecks"] = sorted(kept, key=lambda s: str(s.get("name")))
    else:
        status.pop("admissionChecks", None)
    return True


def _check(name: str, state: str, message: str = _NO_MESSAGE) -> Object:
    return {"name": name, "state": state, "lastTransitionTime": api.now(), "message": message}


def unreserve(workload: Object, reason: str, message: str) -> bool:
    """UnsetQuotaReservationWithCondition: QuotaReserved False with `reason`, the admission
    cleared, and Admitted False (NoReservation) if it was True."""
    status = _status(workload)
    changed = _set(workload, api.QUOTA_RESERVED, False, reason, message)
    if status.get("admission") is not None:
        del status["admission"]
        changed = True
    admitted = api.find(status["conditions"], api.ADMITTED)
    if admitted is not None and admitted.get("status") == "True":
        _set(workload, api.ADMITTED, False, "NoReservation", "The workload has no reservation")
        changed = True
    return changed


def evict(workload: Object, reason: str, message: str, *, cause: str = "") -> bool:
    """evict.Evict's status change: Evicted True with `reason` (Deactivated with a cause
    becomes `DeactivatedDueTo<cause>`), nominated clusters cleared, and the eviction counted
    in schedulingStats. The admission stays until the job's integration clears it."""
    status = _status(workload)
    shown = f"{reason}DueTo{cause}" if reason == api.DEACTIVATED and cause else reason
    _set(workload, api.EVICTED, True, shown, message)
    status.pop("clusterName", None)
    status.pop("nominatedClusterNames", None)
    _reset_checks(status)
    stats = status.setdefault("schedulingStats", {})
    evictions = stats.setdefault("evictions", [])
    for entry in evictions:
        if entry.get("reason") == reason and entry.get("underlyingCause", "") == cause:
            entry["count"] = int(entry.get("count", 0)) + 1
            break
    else:
        # Kueue writes `underlyingCause: ""`; Kubernetes 1.20 refuses an empty string in a
        # custom resource (it reads it as null), so an empty cause is left out.
        entry = {"reason": reason, "count": 1} | ({"underlyingCause": cause} if cause else {})
        evictions.append(entry)
    return True


def _reset_checks(status: Object) -> None:
    """resetChecksOnEviction: every admission check not Pending is Pending again (a Retry
    counted), its podSetUpdates dropped."""
    for index, check in enumerate(status.get("admissionChecks") or ()):
        if check.get("state") == "Pending":
            continue
        previously = str(check.get("state"))
        reset = _check(
            str(check["name"]),
            "Pending",
            f"Reset to Pending after eviction. Previously: {previously}",
        )
        if check.get("requeueAfterSeconds") is not None:
            reset["requeueAfterSeconds"] = check["requeueAfterSeconds"]
        if previously == "Retry":
            reset["retryCount"] = int(check.get("retryCount") or 0) + 1
        status["admissionChecks"][index] = reset


def preempt(workload: Object, reason: str, message: str) -> bool:
    """The preemptor's mark on a target: evicted (reason Preempted) with the Preempted
    condition (reason InClusterQueue), both carrying the same message."""
    evict(workload, api.EVICTED_BY_PREEMPTION, message)
    api.set_condition(_status(workload)["conditions"], api.PREEMPTED, True, reason, message)
    return True


def requeue_state(workload: Object, *, base: float, limit: float) -> None:
    """UpdateRequeueState: count one more requeue; requeueAt after base * 2^(count-1)
    seconds, at most `limit` (Kueue adds a tiny jitter)."""
    state = _status(workload).setdefault("requeueState", {})
    count = int(state.get("count") or 0) + 1
    delay = min(base * 2 ** (count - 1), limit)
    at = datetime.now(UTC) + timedelta(seconds=delay)
    state["count"] = count
    state["requeueAt"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")


def set_requeued(workload: Object, reason: str, message: str, status: bool) -> bool:
    """SetRequeuedCondition."""
    return _set(workload, api.REQUEUED, status, reason, message)


def finish(workload: Object, reason: str, message: str) -> bool:
    """finish.Finish: Finished True."""
    return _set(workload, api.FINISHED, True, reason, message)


def preemption_message(preemptor: Object, cluster_queue: str) -> str:
    """preemptionMessage, for a preemption within a ClusterQueue outside any cohort."""
    uid = preemptor["metadata"].get("uid") or "UNKNOWN"
    job_uid = (preemptor["metadata"].get("labels") or {}).get(api.JOB_UID_LABEL) or "UNKNOWN"
    return (
        f"Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to"
        f" prioritization in the ClusterQueue; preemptor path: /{cluster_queue};"
        f" preemptee path: /{cluster_queue}"
    )
