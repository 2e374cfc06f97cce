"""Name-based controller expectations: pending until observed, forgotten after the ttl."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from jobcore._runtime.expectations import Expectations
from jobcore._runtime.resources import ObjectKey

OWNER = ObjectKey("ns", "job")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def expectations(clock: FakeClock) -> Expectations:
    return Expectations(ttl=60.0, clock=clock)


def test_unknown_owner_is_satisfied(expectations: Expectations) -> None:
    assert expectations.satisfied(OWNER)
    assert expectations.pending_creations(OWNER) == frozenset()


def test_creations_pending_until_each_is_observed(expectations: Expectations) -> None:
    expectations.expect_creations(OWNER, ["job-0", "job-1"])
    assert not expectations.satisfied(OWNER)
    assert expectations.pending_creations(OWNER) == {"job-0", "job-1"}

    expectations.creation_observed(OWNER, "job-0")
    expectations.creation_observed(OWNER, "job-0")  # a duplicate event changes nothing
    expectations.creation_observed(OWNER, "other")  # nor does a child nobody expected
    assert not expectations.satisfied(OWNER)
    assert expectations.pending_creations(OWNER) == {"job-1"}

    expectations.creation_observed(OWNER, "job-1")
    assert expectations.satisfied(OWNER)


def test_deletions_pending_until_observed(expectations: Expectations) -> None:
    expectations.expect_deletions(OWNER, ["job-2"])
    expectations.expect_creations(OWNER, ["job-3"])
    expectations.creation_observed(OWNER, "job-3")
    assert not expectations.satisfied(OWNER)
    assert expectations.pending_creations(OWNER) == frozenset()
    assert expectations.pending_deletions(OWNER) == {"job-2"}
    expectations.deletion_observed(OWNER, "job-2")
    assert expectations.satisfied(OWNER)
    assert expectations.pending_deletions(OWNER) == frozenset()


def test_expecting_nothing_is_satisfied(expectations: Expectations) -> None:
    expectations.expect_creations(OWNER, [])
    expectations.expect_deletions(OWNER, ())
    assert expectations.satisfied(OWNER)


def test_owners_are_independent(expectations: Expectations) -> None:
    other = ObjectKey("ns", "other")
    expectations.expect_creations(OWNER, ["job-0"])
    expectations.expect_creations(other, ["job-0"])
    expectations.creation_observed(other, "job-0")
    assert expectations.satisfied(other)
    assert not expectations.satisfied(OWNER)


def test_expired_expectations_are_dropped_and_logged(
    expectations: Expectations, clock: FakeClock
) -> None:
    expectations.expect_creations(OWNER, ["job-0"])
    clock.now += 59.0
    assert not expectations.satisfied(OWNER)
    clock.now += 1.0
    with capture_logs() as logs:
        assert expectations.satisfied(OWNER)
    assert [log["creations"] for log in logs] == [["job-0"]]
    assert expectations.pending_creations(OWNER) == frozenset()
    # Dropped, not just ignored: a later observation finds nothing, expecting starts afresh.
    expectations.creation_observed(OWNER, "job-0")
    expectations.expect_creations(OWNER, ["job-1"])
    assert expectations.pending_creations(OWNER) == {"job-1"}


def test_expecting_more_restarts_the_ttl(expectations: Expectations, clock: FakeClock) -> None:
    expectations.expect_creations(OWNER, ["job-0"])
    clock.now += 50.0
    expectations.expect_creations(OWNER, ["job-1"])
    clock.now += 50.0
    assert expectations.pending_creations(OWNER) == {"job-0", "job-1"}


def test_forget(expectations: Expectations) -> None:
    expectations.expect_creations(OWNER, ["job-0"])
    expectations.forget(OWNER)
    expectations.forget(OWNER)
    assert expectations.satisfied(OWNER)
