"""configure_gc: fewer young collections, start-up objects frozen out of all of them."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from jobcore import configure_gc


@pytest.fixture
def restored() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def collected(obj: object) -> bool:
    """Whether any collection still looks at `obj`."""
    return any(o is obj for o in gc.get_objects())


@pytest.mark.usefixtures("restored")
def test_configure_gc_raises_the_young_threshold_and_freezes_what_exists() -> None:
    existing: list[object] = []
    _, older, oldest = gc.get_threshold()
    assert collected(existing)
    configure_gc(young_threshold=12_345)
    assert gc.get_threshold() == (12_345, older, oldest)
    assert not collected(existing)
    assert collected([])  # what comes later is collected as ever
