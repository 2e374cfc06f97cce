"""Unit tests for the work-queue rate limiters (per-item backoff, token bucket, max-of)."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobcore._runtime.ratelimit import BucketRateLimiter
from jobcore._runtime.ratelimit import ItemExponentialFailureRateLimiter
from jobcore._runtime.ratelimit import MaxOfRateLimiter
from jobcore._runtime.ratelimit import default_controller_rate_limiter


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_exponential_backoff_doubles_from_5ms_and_caps_at_1000s() -> None:
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("a") for _ in range(25)]
    expected = [0.005 * 2**n for n in range(18)] + [1000.0] * 7  # 0.005 * 2**18 > 1000
    assert delays == pytest.approx(expected)
    assert delays[:4] == pytest.approx([0.005, 0.01, 0.02, 0.04])
    assert limiter.num_requeues("a") == 25


def test_exponential_backoff_stays_capped_far_past_float_range() -> None:
    limiter = ItemExponentialFailureRateLimiter(1.0, 60.0)
    for _ in range(1100):  # 2.0**1024 overflows a float
        delay = limiter.when("a")
    assert delay == 60.0


def test_exponential_backoff_is_per_item_and_forget_resets() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.1, 10.0)
    assert [limiter.when("a") for _ in range(3)] == pytest.approx([0.1, 0.2, 0.4])
    assert limiter.when("b") == pytest.approx(0.1)
    assert (limiter.num_requeues("a"), limiter.num_requeues("b")) == (3, 1)
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.1)
    assert limiter.when("b") == pytest.approx(0.2)
    limiter.forget("never-seen")  # no error


@pytest.mark.parametrize(("base", "cap"), [(-1.0, 10.0), (2.0, 1.0)])
def test_exponential_backoff_rejects_bad_bounds(base: float, cap: float) -> None:
    with pytest.raises(ValueError):
        ItemExponentialFailureRateLimiter(base, cap)


@given(st.lists(st.tuples(st.sampled_from("abc"), st.booleans()), max_size=60))
def test_exponential_backoff_matches_failures_since_forget(ops: list[tuple[str, bool]]) -> None:
    limiter = ItemExponentialFailureRateLimiter(0.5, 100.0)
    failures = dict.fromkeys("abc", 0)
    for item, fail in ops:
        if fail:
            assert limiter.when(item) == min(0.5 * 2 ** failures[item], 100.0)
            failures[item] += 1
        else:
            limiter.forget(item)
            failures[item] = 0
        assert limiter.num_requeues(item) == failures[item]


def test_bucket_allows_burst_then_spaces_by_qps() -> None:
    clock = FakeClock()
    bucket = BucketRateLimiter(qps=10.0, burst=3, clock=clock)
    assert [bucket.when(i) for i in range(5)] == pytest.approx([0.0, 0.0, 0.0, 0.1, 0.2])
    clock.advance(0.2)  # refills the two tokens owed; the next one is 0.1 s away
    assert bucket.when("x") == pytest.approx(0.1)
    clock.advance(60.0)  # refill stops at the burst size
    assert [bucket.when(i) for i in range(4)] == pytest.approx([0.0, 0.0, 0.0, 0.1])


def test_bucket_refills_fractionally() -> None:
    clock = FakeClock()
    bucket = BucketRateLimiter(qps=2.0, burst=1, clock=clock)
    assert bucket.when("a") == 0.0
    clock.advance(0.25)  # half a token
    assert bucket.when("a") == pytest.approx(0.25)


def test_bucket_is_not_per_item() -> None:
    bucket = BucketRateLimiter(qps=1.0, burst=1, clock=FakeClock())
    bucket.when("a")
    bucket.forget("a")
    assert bucket.num_requeues("a") == 0
    assert bucket.when("b") == pytest.approx(1.0)  # forget does not return the token


@pytest.mark.parametrize(("qps", "burst"), [(0.0, 1), (-1.0, 1), (1.0, 0)])
def test_bucket_rejects_bad_parameters(qps: float, burst: int) -> None:
    with pytest.raises(ValueError):
        BucketRateLimiter(qps, burst)


@given(
    qps=st.floats(0.5, 100.0),
    burst=st.integers(1, 10),
    gaps=st.lists(st.floats(0.0, 2.0), min_size=1, max_size=50),
)
def test_bucket_never_lets_more_than_burst_plus_rate_through(
    qps: float, burst: int, gaps: list[float]
) -> None:
    clock = FakeClock(0.0)
    bucket = BucketRateLimiter(qps, burst, clock=clock)
    act_times = []
    for gap in gaps:
        clock.advance(gap)
        delay = bucket.when("k")
        assert delay >= 0.0
        act_times.append(clock.now + delay)
    assert all(later >= earlier - 1e-9 for earlier, later in itertools.pairwise(act_times))
    for n, act in enumerate(act_times, start=1):
        assert n <= burst + qps * act + 1e-6


def test_max_of_asks_every_limiter_and_takes_the_longest() -> None:
    clock = FakeClock()
    per_item = ItemExponentialFailureRateLimiter(1.0, 8.0)
    bucket = BucketRateLimiter(qps=1.0, burst=2, clock=clock)
    limiter = MaxOfRateLimiter(per_item, bucket)
    assert limiter.when("a") == pytest.approx(1.0)  # backoff 1 s, bucket 0 s
    assert limiter.when("a") == pytest.approx(2.0)  # backoff 2 s, bucket 0 s
    assert limiter.when("b") == pytest.approx(1.0)  # backoff 1 s, bucket 1 s: tokens were taken
    assert limiter.when("c") == pytest.approx(2.0)  # bucket 2 s wins
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


def test_max_of_needs_a_limiter() -> None:
    with pytest.raises(ValueError):
        MaxOfRateLimiter()


def test_default_controller_limiter_combines_backoff_and_bucket() -> None:
    made = time.monotonic()
    limiter = default_controller_rate_limiter()
    assert [limiter.when("a") for _ in range(3)] == pytest.approx([0.005, 0.01, 0.02])
    for i in range(97):  # uses up the rest of the burst of 100
        assert limiter.when(f"k{i}") == pytest.approx(0.005)
    wait = limiter.when("one-too-many")
    # 10 qps: a token 0.1 s away, less what the bucket (on the real clock) refilled meanwhile.
    assert 0.1 - (time.monotonic() - made) - 0.001 <= wait <= 0.1 + 0.001


def test_default_controller_limiter_without_bucket_is_backoff_only() -> None:
    limiter = default_controller_rate_limiter(qps=None)
    assert all(limiter.when(f"k{i}") == 0.005 for i in range(500))
    assert limiter.when("k0") == pytest.approx(0.01)
    assert limiter.num_requeues("k0") == 2
