"""The dashboard's pages and live streams: the overview of every job, and one job in full.

Pages render from the `ClusterView` caches; a live stream sends, as server-sent events, the
parts of its page that changed (htmx swaps them in). The overview's stream knows which rows its
page shows, so a job that appears, changes or leaves the filter adds, replaces or removes its
row, and nothing else is sent.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from aiohttp import web
from jinja2 import Environment
from jinja2 import PackageLoader
from jinja2 import select_autoescape

from controllers.dashboard.details import job_details
from controllers.dashboard.logs import log_container
from controllers.dashboard.logs import log_pod
from controllers.dashboard.logs import stream_log
from controllers.dashboard.sse import event_stream
from controllers.dashboard.stored import job_sources
from controllers.dashboard.summary import JobSummary
from controllers.dashboard.summary import age
from controllers.dashboard.summary import summarize
from controllers.dashboard.view import ClusterView
from controllers.dashboard.view import JobRef

SETTLE = 0.1
"""Seconds a live stream waits after a change for the changes that come with it."""
PHASES = ("Pending", "Running", "Paused", "Resuming", "Succeeded", "Failed", "Unknown")
VIEW_KEY: web.AppKey[ClusterView] = web.AppKey("view", ClusterView)

templates = Environment(
    loader=PackageLoader("controllers.dashboard"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
templates.globals["age"] = age


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True, slots=True)
class Filter:
    """The overview's filters, from its query: empty matches all."""

    namespace: str = ""
    kind: str = ""
    phase: str = ""

    @classmethod
    def of(cls, request: web.Request) -> Filter:
        query = request.query
        return cls(query.get("namespace", ""), query.get("kind", ""), query.get("phase", ""))

    def matches(self, ref: JobRef, summary: JobSummary) -> bool:
        return (
            (not self.namespace or ref.namespace == self.namespace)
            and (not self.kind or ref.kind == self.kind)
            and (not self.phase or summary.phase == self.phase)
        )

    def query(self, **more: Any) -> str:
        given = {"namespace": self.namespace, "kind": self.kind, "phase": self.phase, **more}
        return urlencode({key: value for key, value in given.items() if value != ""})


def _page(view: ClusterView, name: str, **context: Any) -> web.Response:
    scope = f"namespace {view.namespace}" if view.namespace else "all namespaces"
    html = templates.get_template(name).render(
        scope=scope, unsynced=view.unsynced(), now=_now(), **context
    )
    return web.Response(text=html, content_type="text/html")


def _rows(view: ClusterView, chosen: Filter) -> Iterator[tuple[JobRef, JobSummary]]:
    for ref, obj in view.all_jobs():
        summary = summarize(view.kinds[ref.kind].kind, obj)
        if chosen.matches(ref, summary):
            yield ref, summary


def _newest_first(rows: Iterator[tuple[JobRef, JobSummary]]) -> list[tuple[JobRef, JobSummary]]:
    return sorted(rows, key=lambda row: (row[1].created, row[0]), reverse=True)


def _namespaces(view: ClusterView) -> list[str]:
    """Every namespace that has a job, whatever the filters."""
    return sorted({ref.namespace for ref, _ in view.all_jobs()})


async def overview(request: web.Request) -> web.Response:
    view = request.app[VIEW_KEY]
    chosen = Filter.of(request)
    rows = _newest_first(_rows(view, chosen))
    return _page(
        view,
        "overview.html",
        rows=rows,
        chosen=chosen,
        filters=[
            ("Namespace", "namespace", [(ns, ns) for ns in _namespaces(view)]),
            ("Kind", "kind", [(n, f"{i.kind.resource.kind} ({n})") for n, i in view.kinds.items()]),
            ("Phase", "phase", [(phase, phase) for phase in PHASES]),
        ],
        live="/live?" + chosen.query(since=view.version),
    )


def _since(request: web.Request) -> int:
    try:
        return int(request.query.get("since", "-1"))
    except ValueError:
        return -1


def _removed(uid: str) -> str:
    return f'<tr id="job-{uid}" hx-swap-oob="delete"></tr>'


async def overview_live(request: web.Request) -> web.StreamResponse:
    """The overview's rows as they change. The page was rendered at version `since`; when
    anything changed after it, the first event replaces the whole table."""
    view = request.app[VIEW_KEY]
    chosen = Filter.of(request)
    row = templates.get_template("row.html").module.row  # type: ignore[attr-defined]
    with view.subscribe() as subscription:
        async with event_stream(request) as stream:
            rows = _newest_first(_rows(view, chosen))
            shown = {ref: s.uid for ref, s in rows}
            if view.changed_since(_since(request)) != set():
                body = "".join(row(ref, s, _now()) for ref, s in rows)
                await stream.send(
                    "update", f'<tbody id="jobs-body" hx-swap-oob="true">{body}</tbody>'
                )
            while True:
                changed = await subscription.changes(SETTLE)
                parts = []
                for ref in sorted(changed):
                    obj = view.job(ref)
                    summary = summarize(view.kinds[ref.kind].kind, obj) if obj else None
                    if summary is not None and chosen.matches(ref, summary):
                        if shown.get(ref) == summary.uid:
                            parts.append(row(ref, summary, _now(), oob="true"))
                        else:  # new here, or a new job of a deleted one's name
                            if ref in shown:
                                parts.append(_removed(shown[ref]))
                            new_row = row(ref, summary, _now())
                            parts.append(
                                f'<tbody hx-swap-oob="afterbegin:#jobs-body">{new_row}</tbody>'
                            )
                        shown[ref] = summary.uid
                    elif ref in shown:
                        parts.append(_removed(shown.pop(ref)))
                if parts:
                    parts.append(f'<span id="job-count" hx-swap-oob="true">{len(shown)}</span>')
                    await stream.send("update", "".join(parts))
    return stream.response


def _ref(request: web.Request) -> JobRef:
    info = request.match_info
    ref = JobRef(info["kind"], info["namespace"], info["name"])
    if ref.kind not in request.app[VIEW_KEY].kinds:
        raise web.HTTPNotFound(text=f"no installed job kind {ref.kind}")
    return ref


def _sections(view: ClusterView, ref: JobRef, *, oob: bool) -> str | None:
    obj = view.job(ref)
    if obj is None:
        return None
    details = job_details(view.kinds[ref.kind].kind, obj, view.pods_of(ref), view.events_of(ref))
    return templates.get_template("sections.html").render(d=details, now=_now(), oob=oob)


async def job_page(request: web.Request) -> web.Response:
    view = request.app[VIEW_KEY]
    ref = _ref(request)
    obj = view.job(ref)
    if obj is None:
        return _page(
            view,
            "error.html",
            title="No such job",
            message=f"{ref} is not in the cluster (or not yet in the dashboard's cache).",
        )
    installed = view.kinds[ref.kind]
    sources = await job_sources(view.client, installed.kind, ref)
    pods = view.pods_of(ref)
    details = job_details(installed.kind, obj, pods, view.events_of(ref))
    replica = request.query.get("log") or None
    shown = log_pod(pods, replica)
    return _page(
        view,
        "job.html",
        ref=ref,
        d=details,
        oob=False,
        stored=sources.stored,
        rendered=sources.rendered,
        live=f"{ref.path}/live?since={view.version}",
        log_pod=shown["metadata"]["name"] if shown else None,
        log_stream=f"{ref.path}/log" + (f"?{urlencode({'replica': replica})}" if replica else ""),
    )


async def job_live(request: web.Request) -> web.StreamResponse:
    view = request.app[VIEW_KEY]
    ref = _ref(request)
    with view.subscribe() as subscription:
        async with event_stream(request) as stream:
            missed = view.changed_since(_since(request))
            if missed is None or ref in missed:
                subscription.mark(ref)
            while True:
                if ref in await subscription.changes(SETTLE):
                    html = _sections(view, ref, oob=True)
                    if html is not None:
                        await stream.send("update", html)
    return stream.response


async def job_log(request: web.Request) -> web.StreamResponse:
    """The launcher's log (or `?replica=worker-1`'s), following it live."""
    view = request.app[VIEW_KEY]
    ref = _ref(request)
    kind = view.kinds[ref.kind].kind
    pod = log_pod(view.pods_of(ref), request.query.get("replica"))
    async with event_stream(request) as stream:
        if pod is None:
            await stream.send("line", '<div class="note">no such pod</div>')
            await stream.send("end", "")
        else:
            await stream_log(view.client, stream, pod, log_container(kind, pod))
    return stream.response
