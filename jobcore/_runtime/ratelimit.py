"""Decide how long a work-queue item waits before it is retried, as client-go's rate limiters do.

Port of k8s.io/client-go/util/workqueue default_rate_limiters: a per-item exponential backoff, an
overall token bucket, and their combination (the controller default).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Hashable
from typing import Protocol

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_controller_rate_limiter",
]


class RateLimiter(Protocol):
    """How long to hold an item back before it is retried; `when` records a failure."""

    def when(self, item: Hashable) -> float:
        """Seconds to wait before `item` is retried; counts one more requeue of it."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking `item` (it succeeded), so its next failure starts from scratch."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many times `item` has been requeued since it was last forgotten."""
        ...


class ItemExponentialFailureRateLimiter:
    """Per-item backoff `base_delay * 2**failures`, capped at `max_delay`.

    Backs off a single broken object without slowing down the others.
    """

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if base_delay < 0 or max_delay < base_delay:
            raise ValueError("need 0 <= base_delay <= max_delay")
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        exponent = self._failures.get(item, 0)
        self._failures[item] = exponent + 1
        try:
            delay = self._base_delay * 2.0**exponent
        except OverflowError:  # 2.0**exponent beyond float range: far past any cap.
            return self._max_delay
        return min(delay, self._max_delay)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """Overall token bucket (`qps` refill, `burst` capacity) shared by every item.

    Caps the total retry rate so a mass failure cannot hammer the API server. Like
    golang.org/x/time/rate `Reserve`, `when` takes a token now, letting the balance go negative,
    and returns how long until that token would have been available.
    """

    def __init__(
        self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("need qps > 0 and burst >= 1")
        self._qps = qps
        self._burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def when(self, item: Hashable) -> float:
        now = self._clock()
        elapsed = max(0.0, now - self._last)
        tokens = min(self._burst, self._tokens + elapsed * self._qps) - 1.0
        self._tokens = tokens
        self._last = now
        return -tokens / self._qps if tokens < 0 else 0.0

    def forget(self, item: Hashable) -> None:
        """Nothing to forget: the bucket is not per item."""

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """Waits as long as the slowest of its limiters, so every one of their limits holds."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("need at least one rate limiter")
        self._limiters = limiters

    def when(self, item: Hashable) -> float:
        # Every limiter is asked (max() consumes them all): each records the failure.
        return max(limiter.when(item) for limiter in self._limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self._limiters)


def default_controller_rate_limiter(*, qps: float | None = 10.0, burst: int = 100) -> RateLimiter:
    """client-go's controller default: per-item 5 ms..1000 s backoff, plus an overall bucket.

    `qps=None` leaves out the bucket, so only the per-item backoff applies.
    """
    per_item = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    if qps is None:
        return per_item
    return MaxOfRateLimiter(per_item, BucketRateLimiter(qps, burst))
