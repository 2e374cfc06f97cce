"""Garbage-collector settings for a controller process: a large cache, few cycles."""

from __future__ import annotations

import gc

__all__ = ["configure_gc"]

YOUNG_THRESHOLD = 50_000
"""Allocations between young collections (Python's default: 700)."""


def configure_gc(young_threshold: int = YOUNG_THRESHOLD) -> None:
    """Collect less often, and never again look at what exists at start-up.

    A controller's heap is mostly its informer caches: decoded JSON, which holds no cycles,
    yet Python's default thresholds walk it over and over as it grows. With
    `young_threshold` allocations between young collections, most short-lived objects are
    freed before a collection sees them and the full collections that walk the whole cache
    become rare. The objects alive now (modules, classes, configuration) are frozen out of
    every collection. Cyclic garbage is still collected, just in larger batches. Call it
    once, after start-up, in a program (it changes the whole process, so jobcore never
    calls it itself); `jobcore run` does.
    """
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(young_threshold, older, oldest)
