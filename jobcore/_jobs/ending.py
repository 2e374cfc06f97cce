"""The end of a job's life: the pods its clean-up policies take, its TTL, an invalid job failed.

Apart from the reconciler's steps because an ended job no longer follows them: it keeps its
outcome whatever its spec becomes, so its clean-up and TTL read the run policy alone (the
kind's reading of the spec's runPolicy when the spec no longer parses), and an invalid job is
stopped the same way once its `Failed` status is written.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence
from typing import Generic

from jobcore._jobs import decide
from jobcore._jobs.announce import Announcer
from jobcore._jobs.children import JobChildren
from jobcore._jobs.kind import FieldError
from jobcore._jobs.kind import JobKind
from jobcore._jobs.kind import Observed
from jobcore._jobs.kind import SpecT
from jobcore._jobs.models import JobStatus
from jobcore._jobs.models import RunPolicy
from jobcore._jobs.parse import run_policy_of
from jobcore._jobs.policy import doomed_after_end
from jobcore._jobs.policy import ttl_left
from jobcore._jobs.status import invalid_status
from jobcore._jobs.writer import StatusWriter
from jobcore._runtime.client import Client
from jobcore._runtime.errors import NotFoundError
from jobcore._runtime.handler import Request
from jobcore._runtime.resources import Object


@dataclasses.dataclass(frozen=True, kw_only=True)
class JobEnding(Generic[SpecT]):
    """Clean-up and TTL of one kind's ended jobs, and the failure of its invalid ones.

    `finish` and `finish_unparsed` return when to come back for the job's TTL (None: no need).
    """

    kind: JobKind[SpecT]
    client: Client
    children: JobChildren[SpecT]
    writer: StatusWriter
    announcer: Announcer

    async def finish(
        self,
        *,
        request: Request,
        obj: Object,
        observed: Observed,
        policy: RunPolicy,
        status: JobStatus,
        stopped: bool,
        now: float,
    ) -> float | None:
        """Delete the pods the clean-up policies doom (every unfinished one too when the job
        was `stopped`, past its deadline), those its finished batch Jobs left running
        included, then delete the job once its TTL passed. Call it once `status`, the job's
        final status, is recorded: a crash before leaves a job that ended to finish again."""
        doomed = doomed_after_end(policy, observed.pods, self.kind.kept_after_cleanup)
        if stopped:
            doomed |= set(observed.pods) - decide.ended_pods(observed)
        await self.children.delete_pods(request, observed, keep=set(observed.pods) - doomed)
        await self.children.delete_leftover_pods(request, observed, doomed)
        return await self._expire_ttl(obj, policy, status, now)

    async def finish_unparsed(
        self, *, request: Request, obj: Object, previous: JobStatus, now: float
    ) -> float | None:
        """The clean-up and TTL of a job that ended and whose spec no longer parses."""
        policy = run_policy_of(self.kind, obj)
        await self._clean_up(request, obj, policy)
        return await self._expire_ttl(obj, policy, previous, now)

    async def fail_invalid(
        self, *, request: Request, obj: Object, previous: JobStatus, errors: Sequence[FieldError]
    ) -> None:
        """Mark the job Failed with its errors, then stop it: its batch Jobs go, its pods as its
        run policy says (a job can become invalid while it runs, or through a child the server
        finds invalid). The policy is the kind's reading of the spec's runPolicy alone.
        """
        message = "Invalid spec: " + "; ".join(str(error) for error in errors)
        await self.writer.write(obj, previous, invalid_status(previous, message), coalesce=False)
        observed = await self._clean_up(request, obj, run_policy_of(self.kind, obj))
        await self.children.delete_batch_jobs(request, observed, keep=set())

    async def _clean_up(self, request: Request, obj: Object, policy: RunPolicy) -> Observed:
        """Delete the pods of a job without a valid spec that `policy` dooms once it ended;
        what was observed."""
        observed = self.children.observe(request.namespace, obj["metadata"]["uid"])
        doomed = doomed_after_end(policy, observed.pods, self.kind.kept_after_cleanup)
        await self.children.delete_pods(request, observed, keep=set(observed.pods) - doomed)
        return observed

    async def _expire_ttl(
        self, obj: Object, policy: RunPolicy, status: JobStatus, now: float
    ) -> float | None:
        """Delete an ended job once `ttlSecondsAfterFinished` passed; else when to come back."""
        left = ttl_left(policy, status, now)
        if left is None or left > 0:
            return left
        self.announcer.expired(obj, policy.ttl_seconds_after_finished)
        meta = obj["metadata"]
        with contextlib.suppress(NotFoundError):
            await self.client.delete(
                self.kind.resource, meta["name"], meta["namespace"], uid=meta["uid"]
            )
        return None
