"""A job in full, as its page and `jobcore describe` show it: what failed first, then the
conditions in time order, the replica tasks, the pods, their lifetimes and the Events.

Built from the dashboard's caches (the slim objects of `view`), never from a request, so a live
page re-renders a job from memory. Pod lifetimes come from what each pod reports: created, its
containers' current run and the run before the last restart (`lastState`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from typing import Any

from controllers.dashboard.summary import JobSummary
from controllers.dashboard.summary import read_status
from controllers.dashboard.summary import summarize
from controllers.dashboard.view import event_time
from jobcore import Object
from jobcore.jobs import REPLICA_INDEX_LABEL
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import JobKind
from jobcore.jobs import JobStatus
from jobcore.jobs import parse_time
from jobcore.launcher import LAUNCHER

PODS_SHOWN = 200
"""The most pods a job's page lists and charts."""


@dataclass(frozen=True, slots=True)
class Run:
    """One run of a container: from `start` to `end` (None: still running), how it ended."""

    container: str
    start: datetime
    end: datetime | None
    exit_code: int | None
    reason: str
    message: str

    @property
    def failed(self) -> bool:
        return self.exit_code not in (None, 0)


@dataclass(frozen=True, slots=True)
class PodView:
    """One pod of the job, with the runs of its containers."""

    name: str
    replica: str
    node: str
    phase: str
    restarts: int
    ready: bool
    created: datetime | None
    runs: list[Run] = field(default_factory=list)
    reason: str = ""

    @property
    def exit_codes(self) -> str:
        return ", ".join(
            f"{r.container}: {r.exit_code}" for r in self.runs if r.exit_code is not None
        )


@dataclass(frozen=True, slots=True)
class Failure:
    """What failed first: the pod, its rank (replica type and index), exit code and message."""

    pod: str
    replica: str
    exit_code: int | None
    message: str
    when: datetime | None


@dataclass(frozen=True, slots=True)
class Bar:
    """A run on the lifetime chart, in percent of the chart's span."""

    x: float
    width: float
    css: str
    title: str


@dataclass(frozen=True, slots=True)
class Lane:
    """One pod's row on the lifetime chart."""

    pod: str
    replica: str
    bars: list[Bar]


@dataclass(frozen=True, slots=True)
class JobDetails:
    """Everything the job page shows but the stored object and its rendered children."""

    summary: JobSummary
    status: JobStatus
    pods: list[PodView]
    failure: Failure | None
    lanes: list[Lane]
    span: tuple[datetime, datetime] | None
    events: list[Object]
    now: datetime
    hidden_pods: int = 0

    @property
    def timeline(self) -> list[Any]:
        """The conditions in the order they last changed."""
        return sorted(self.status.conditions, key=lambda c: c.last_transition_time or "")


def _labels(pod: Object) -> dict[str, str]:
    return pod["metadata"].get("labels") or {}


def replica_of(pod: Object) -> str:
    """`worker-3`: the pod's replica type and index, its rank in the job."""
    labels = _labels(pod)
    kind, index = labels.get(REPLICA_TYPE_LABEL, "?"), labels.get(REPLICA_INDEX_LABEL)
    return f"{kind}-{index}" if index is not None else kind


def _order(pod: Object) -> tuple[str, int, str]:
    labels = _labels(pod)
    index = labels.get(REPLICA_INDEX_LABEL, "")
    return (
        labels.get(REPLICA_TYPE_LABEL, ""),
        int(index) if index.isdigit() else -1,
        pod["metadata"]["name"],
    )


def _run(container: str, state: Object) -> Run | None:
    running, ended = state.get("running"), state.get("terminated")
    if ended:
        start = parse_time(ended.get("startedAt")) or parse_time(ended.get("finishedAt"))
        if start is None:
            return None
        return Run(
            container,
            start,
            parse_time(ended.get("finishedAt")) or start,
            ended.get("exitCode"),
            ended.get("reason") or "",
            ended.get("message") or "",
        )
    if running and (start := parse_time(running.get("startedAt"))) is not None:
        return Run(container, start, None, None, "", "")
    return None


def pod_view(pod: Object) -> PodView:
    status = pod.get("status") or {}
    runs: list[Run] = []
    restarts, waiting = 0, ""
    for container in status.get("containerStatuses") or ():
        restarts += container.get("restartCount") or 0
        for state in (container.get("lastState") or {}, container.get("state") or {}):
            if (run := _run(container.get("name") or "", state)) is not None:
                runs.append(run)
        waiting = waiting or ((container.get("state") or {}).get("waiting") or {}).get("reason", "")
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or ()}
    return PodView(
        name=pod["metadata"]["name"],
        replica=replica_of(pod),
        node=(pod.get("spec") or {}).get("nodeName") or "",
        phase=status.get("phase") or "Pending",
        restarts=restarts,
        ready=conditions.get("Ready") == "True",
        created=parse_time(pod["metadata"].get("creationTimestamp")),
        runs=sorted(runs, key=lambda r: r.start),
        reason=status.get("reason") or waiting,
    )


def first_failure(pods: Sequence[PodView], status_message: str) -> Failure | None:
    """The run that failed first (a non-zero exit), or a pod that failed without one (evicted)."""
    failed = [(run, pod) for pod in pods for run in pod.runs if run.failed]
    if failed:
        # Times are whole seconds: of runs that ended in the same one, a worker's comes first,
        # as a launcher fails because a rank did.
        run, pod = min(
            failed,
            key=lambda pair: (pair[0].end or pair[0].start, pair[1].replica.startswith(LAUNCHER)),
        )
        message = run.message.strip() or status_message or run.reason
        return Failure(pod.name, pod.replica, run.exit_code, message, run.end)
    for pod in pods:
        if pod.phase == "Failed":
            return Failure(pod.name, pod.replica, None, pod.reason or status_message, None)
    return None


def _lanes(
    pods: Sequence[PodView], now: datetime
) -> tuple[list[Lane], tuple[datetime, datetime] | None]:
    starts = [
        moment for pod in pods for moment in (pod.created, *(r.start for r in pod.runs)) if moment
    ]
    if not starts:
        return [], None
    first = min(starts)
    last = max([now, *(r.end for pod in pods for r in pod.runs if r.end)])
    total = max((last - first).total_seconds(), 1.0)

    def bar(start: datetime, end: datetime, css: str, title: str) -> Bar:
        x = (start - first).total_seconds() / total * 100
        return Bar(
            round(x, 2), round(max((end - start).total_seconds() / total * 100, 0.4), 2), css, title
        )

    lanes = []
    for pod in pods:
        bars = []
        if pod.created and pod.runs:
            bars.append(bar(pod.created, pod.runs[0].start, "pending", "created, not yet started"))
        for run in pod.runs:
            css = "running" if run.end is None else ("failed" if run.failed else "succeeded")
            ended = f"exit {run.exit_code}" if run.end is not None else "running"
            bars.append(bar(run.start, run.end or now, css, f"{run.container}: {ended}"))
        lanes.append(Lane(pod.name, pod.replica, bars))
    return lanes, (first, last)


def _worth_showing(pods: Sequence[PodView]) -> list[PodView]:
    """At most `PODS_SHOWN` pods, those in trouble first (failed, restarted, not running), in
    rank order: a wide job's page stays a page, and its re-render on each change stays small."""
    if len(pods) <= PODS_SHOWN:
        return list(pods)
    trouble = {p.name for p in pods if p.restarts or p.phase not in ("Running", "Succeeded")}
    first = [p for p in pods if p.name in trouble][:PODS_SHOWN]
    rest = [p for p in pods if p.name not in trouble][: PODS_SHOWN - len(first)]
    keep = {p.name for p in (*first, *rest)}
    return [p for p in pods if p.name in keep]


def job_details(
    kind: JobKind[Any], obj: Object, pods: Sequence[Object], events: Sequence[Object]
) -> JobDetails:
    status, _ = read_status(kind, obj)
    summary = summarize(kind, obj)
    views = [pod_view(pod) for pod in sorted(pods, key=_order)]
    failed = status.phase == "Failed" or any(v.phase == "Failed" for v in views)
    failure = first_failure(views, summary.message) if failed else None
    shown = _worth_showing(views)
    if failure is None and status.phase == "Failed":
        failure = Failure("", "", None, summary.message, None)
    now = datetime.now(UTC)
    lanes, span = _lanes(shown, now)
    return JobDetails(
        summary=summary,
        status=status,
        pods=shown,
        hidden_pods=len(views) - len(shown),
        failure=failure,
        lanes=lanes,
        span=span,
        events=sorted(events, key=event_time),
        now=now,
    )
