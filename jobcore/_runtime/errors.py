"""The exception tree of jobcore: every error it raises is a JobcoreError.

JobcoreError
├── ApiError                 the API server answered with a failure Status (0: no answer)
│   ├── ForbiddenError       403: RBAC, or admission (a quota, a LimitRange) refused it
│   ├── NotFoundError        404
│   ├── ConflictError        409 on update: re-read and try again
│   ├── AlreadyExistsError   409 on create
│   ├── GoneError            410: the resourceVersion is too old, re-list
│   └── InvalidError         422: the object was rejected by validation
├── TerminalError            a reconcile failure that retrying cannot fix
│   ├── ChildRefused         the API server refused a child for its spec (job layer)
│   ├── UnservedChildren     a kind rendered a child outside its child_resources (job layer)
│   └── AdmissionConflict    Kueue's flavour contradicts the pods' node selector (job layer)
├── InvalidKindError         a job kind that cannot run: every problem (job layer)
├── LeaderElectionLost       this process no longer holds the lease
│   └── WriteFenced          a write refused: the leader's term ran past its renew deadline
├── QueueShutDown            the work queue is shut down: its worker exits
├── QuantityError            not a Kubernetes quantity (also a ValueError)
│   and the test kit's (jobcore.testing):
├── ControlPlaneError        etcd or kube-apiserver did not start (also a RuntimeError)
├── RealClusterError         a real cluster component did not start (also a RuntimeError)
├── HostCommandError         a host command of the process node failed
└── NotReadyError            a pod's volume or env source is not there yet (process node)
"""

from __future__ import annotations

from dataclasses import KW_ONLY
from dataclasses import dataclass
from dataclasses import field
from typing import Any


class JobcoreError(Exception):
    """Base class of every error jobcore raises."""


@dataclass(eq=False)
class ApiError(JobcoreError):
    """A failure `Status` from the API server, or a transport failure (status 0)."""

    status: int
    reason: str = ""
    message: str = ""
    body: Any = field(default=None, repr=False)
    _: KW_ONLY
    retry_after: float | None = None
    """Seconds the server asked for before a retry (`Retry-After`), if it said."""

    def __post_init__(self) -> None:
        reason = f" {self.reason}" if self.reason else ""
        super().__init__(f"{self.status}{reason}: {self.message}")

    @property
    def retryable(self) -> bool:
        """Whether the same request may succeed later unchanged: throttling, server errors."""
        return self.status in {0, 429} or self.status >= 500


class ForbiddenError(ApiError):
    """The server refused the request: RBAC, or admission (a ResourceQuota, a LimitRange,
    Pod Security) turning an object down as it stands now."""


class NotFoundError(ApiError):
    """The object does not exist."""


class ConflictError(ApiError):
    """The object changed since it was read (stale resourceVersion)."""


class AlreadyExistsError(ApiError):
    """An object with that name already exists."""


class GoneError(ApiError):
    """The requested resourceVersion is older than the server keeps."""


class InvalidError(ApiError):
    """The server's validation rejected the object; the body names the fields."""


class TerminalError(JobcoreError):
    """A reconcile failure that retrying will not fix: it is logged, not retried."""


class LeaderElectionLost(JobcoreError):
    """The lease was lost or could not be renewed; the process should stop reconciling."""


class WriteFenced(LeaderElectionLost):
    """A write refused before it was sent: this process does not lead, or its last renewal
    started more than the renew deadline ago, so a standby may hold the lease by now."""


def api_error(status: int, body: Any, *, retry_after: float | None = None) -> ApiError:
    """Build the most specific ApiError for a failed response and its decoded body.

    `retry_after` (from the `Retry-After` header) defaults to the Status's
    `details.retryAfterSeconds`.
    """
    reason = message = ""
    if isinstance(body, dict):
        reason = str(body.get("reason", ""))
        message = str(body.get("message", ""))
        details = body.get("details")
        seconds = details.get("retryAfterSeconds") if isinstance(details, dict) else None
        if retry_after is None and isinstance(seconds, int) and seconds > 0:
            retry_after = float(seconds)
    elif body:
        message = str(body)
    cls: type[ApiError] = ApiError
    if status == 403:
        cls = ForbiddenError
    elif status == 404:
        cls = NotFoundError
    elif status == 409:
        cls = AlreadyExistsError if reason == "AlreadyExists" else ConflictError
    elif status == 410 or reason in ("Expired", "Gone"):
        cls = GoneError
    elif status == 422:
        cls = InvalidError
    return cls(status, reason, message, body, retry_after=retry_after)
