"""Reading a job's pods for its `Outcome`: readiness, and T9k's wording of a failed or stuck pod.

A pod that exited is `Pod[name] exited with error code N`; one stuck on its image, its config
or its scheduling says why; several are summarized to fit a condition message. Any kind reads
its pods with these, whatever reaches its workers (a pod's phase and whether it ended are in
`podstate`).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence

from jobcore._jobs.podstate import container_statuses
from jobcore._jobs.podstate import pod_ended
from jobcore._jobs.tasks import pod_ready
from jobcore._runtime.resources import Object

WAITING_ERRORS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "ErrImageNeverPull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "CrashLoopBackOff",
    }
)
"""Waiting reasons that need the user: the pod will not get further on its own."""


def is_ready(pod: Object | None) -> bool:
    """Ready and not being deleted."""
    return pod is not None and not pod["metadata"].get("deletionTimestamp") and pod_ready(pod)


def clip(text: str, limit: int = 200) -> str:
    """`text`, cut to `limit` characters with `...` at the end if it is longer."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def failure_message(pod: Object, container: str, *, last_line: bool = True) -> str:
    """`Pod[name] exited with error code N (container c, reason): last log line`, as T9k
    words it, with the container that failed and why.

    The main container's exit is preferred; an init container or sidecar that failed explains
    a pod whose main container did not. Evictions and OOM kills are named. `last_line` appends
    the last line of the pod's or the container's message (the log tail on error).
    """
    name = pod["metadata"]["name"]
    status = pod.get("status") or {}
    exits = [
        (s.get("name"), s["state"]["terminated"])
        for s in container_statuses(pod)
        if "terminated" in (s.get("state") or {})
    ]
    main = next(((n, t) for n, t in exits if n == container), None)
    failed = next(((n, t) for n, t in exits if t.get("exitCode")), None)
    which, terminated = main if main and main[1].get("exitCode") else failed or main or ("", None)
    pod_reason = status.get("reason")
    if terminated is None or terminated.get("exitCode") is None:
        text = f"Pod[{name}] failed" + (f": {pod_reason}" if pod_reason else "")
    elif terminated["exitCode"] == 0:
        text = f"Pod[{name}] exited with code 0 before the launcher finished"
    else:
        text = f"Pod[{name}] exited with error code {terminated['exitCode']}"
        notes = [r for r in (terminated.get("reason"), pod_reason) if r and r != "Error"]
        text += f" (container {which}" + "".join(f", {n}" for n in dict.fromkeys(notes)) + ")"
    if not last_line:
        return clip(text)
    detail = str(status.get("message") or (terminated or {}).get("message") or "")
    lines = [line.strip() for line in detail.splitlines() if any(c.isalnum() for c in line)]
    return clip(f"{text}: {lines[-1]}" if lines else text)


def pod_problem(pod: Object) -> str | None:
    """Why a pod that has not failed is stuck, if it needs the user: image, config, scheduling."""
    name = pod["metadata"]["name"]
    for status in container_statuses(pod):
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in WAITING_ERRORS:
            detail = f": {waiting['message']}" if waiting.get("message") else ""
            return clip(
                f"Pod[{name}] container {status.get('name')} is waiting: "
                f"{waiting['reason']}{detail}"
            )
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return clip(f"Pod[{name}] is unschedulable: {condition.get('message', '')}")
    return None


def pod_failures(
    pods: Iterable[Object | None], container: str, *, last_line: bool = True
) -> str | None:
    """The `failure_message` of each pod that ended (`container` its main container),
    summarized; None when none has ended."""
    found = [
        failure_message(pod, container, last_line=last_line)
        for pod in pods
        if pod is not None and pod_ended(pod)
    ]
    return summarize(found) if found else None


def pod_problems(pods: Sequence[Object | None]) -> str | None:
    """The problems of the pods that exist, summarized; None when there are none."""
    found = [found for pod in pods if pod is not None and (found := pod_problem(pod))]
    return summarize(found) if found else None


def summarize(items: Sequence[str], shown: int = 3) -> str:
    """The first `shown` of `items`, and how many more: what fits a condition message."""
    more = f"; and {len(items) - shown} more" if len(items) > shown else ""
    return "; ".join(items[:shown]) + more


def name_list(names: Sequence[str], shown: int = 5) -> str:
    """The first `shown` of `names`, and how many more."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
