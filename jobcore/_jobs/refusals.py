"""Children the API server forbade (a ResourceQuota, a LimitRange, admission), said at once.

Each refused pass says why in a Warning Event and the status, and the next try comes after a
delay that doubles per refused pass: a raised quota brings no event of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from jobcore._jobs.announce import Announcer
from jobcore._runtime.errors import ForbiddenError
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey

REFUSED_RETRY_SECONDS = 30.0
"""The longest wait between tries to create a refused child."""


class Refusals:
    """How many passes in a row the API server refused each job's children."""

    def __init__(self, announcer: Announcer) -> None:
        self._announcer = announcer
        self._tries: dict[ObjectKey, int] = {}

    def said(
        self, key: ObjectKey, job: Object, refused: Sequence[tuple[Object, ForbiddenError]]
    ) -> tuple[str | None, float | None]:
        """Say why children were refused, at once: a Warning Event, and the status message
        returned with the seconds until the next try (doubling per refused pass, up to
        REFUSED_RETRY_SECONDS: a raised quota brings no event of its own)."""
        if not refused:
            self._tries.pop(key, None)
            return None, None
        tries = self._tries[key] = self._tries.get(key, 0) + 1
        obj, error = refused[0]
        more = f" ({len(refused) - 1} more refused likewise)" if len(refused) > 1 else ""
        cause = f"{obj['kind']} {obj['metadata']['name']}: {error.message or error}{more}"
        self._announcer.refused(job, cause)
        message = (
            f"The API server refused {cause}. The controller tries again with backoff, at "
            f"least every {REFUSED_RETRY_SECONDS:.0f} s."
        )
        return message, min(2.0 ** (tries - 1), REFUSED_RETRY_SECONDS)

    def forget(self, key: ObjectKey) -> None:
        self._tries.pop(key, None)
