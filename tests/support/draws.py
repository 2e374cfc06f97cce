"""Hypothesis as a generator of fixed test data: values drawn once, the same on every run, for
a test that then does something slow with all of them (creates jobs, runs launchers)."""

from __future__ import annotations

from typing import TypeVar

from hypothesis import HealthCheck
from hypothesis import Phase
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

T = TypeVar("T")


def fixed_draws(strategy: st.SearchStrategy[T], count: int) -> list[T]:
    """`count` values of `strategy`, the same ones on every run (derandomized, no example
    database); only generated, never shrunk, and with no deadline or health check, as drawing
    them is not itself the test."""
    drawn: list[T] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: T) -> None:
        drawn.append(value)

    collect()
    return drawn
