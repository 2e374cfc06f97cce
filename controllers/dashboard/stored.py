"""A job page's two views of the job's source: the object as stored, and what `jobcore
render` says the controller would create for it now.

Read once per page view with one GET (the caches keep no spec). Secrets the render would
create are redacted, as `jobcore render --redact-secrets` does: the page never shows a key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from controllers import render
from controllers.dashboard.view import JobRef
from jobcore import ApiError
from jobcore import Client
from jobcore import strip_bulk
from jobcore.jobs import JobKind
from jobcore.jobs import parse_job


@dataclass(frozen=True, slots=True)
class JobSources:
    stored: str
    rendered: str


async def job_sources(client: Client, kind: JobKind[Any], ref: JobRef) -> JobSources:
    try:
        obj = strip_bulk(await client.get(kind.resource, ref.name, ref.namespace))
    except ApiError as error:
        reason = f"cannot read the job: {error}"
        return JobSources(reason, reason)
    stored = yaml.safe_dump(obj, sort_keys=False)
    job, errors = parse_job(kind, obj)
    if job is None:
        problems = "\n".join(str(error) for error in errors)
        return JobSources(stored, f"nothing: the controller refuses this job\n{problems}")
    try:
        children = render.redact_secrets(render.render_job(kind, job))
    except render.RenderError as error:
        return JobSources(stored, f"nothing: {error}")
    return JobSources(stored, render.dump(children))
