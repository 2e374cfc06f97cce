"""Memory settings for a controller process: a large cache, few cycles, large buffers returned."""

from __future__ import annotations

import ctypes
import gc
import os

__all__ = ["configure_gc", "configure_malloc"]

YOUNG_THRESHOLD = 50_000
"""Allocations between young collections (Python's default: 700)."""
MMAP_THRESHOLD = 128 * 1024
"""Bytes from which glibc's malloc gives a block a mapping of its own (glibc's first value)."""
_M_MMAP_THRESHOLD = -3
"""mallopt's parameter number for it, from glibc's malloc.h."""


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


def configure_malloc(mmap_threshold: int = MMAP_THRESHOLD) -> bool:
    """Give every block of `mmap_threshold` bytes or more a mapping of its own, unmapped
    when freed, so that the buffers of large objects go back to the system once read.

    glibc starts so, but raises its threshold to the size of each such block freed (up to
    32 MiB): after the first large watch event, the buffers of the next ones (the stream's
    chunks, the line, the decoded text) come from its heap, which it shrinks only from the
    top, so a burst of them leaves the freed memory resident. Setting the threshold stops
    it rising. Whether the C library is glibc and took the setting; elsewhere it does
    nothing. Like `configure_gc` it changes the whole process: `jobcore run` calls it.
    """
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):  # not a POSIX system, or no such name
        return False
    if not version or not version.startswith("glibc"):
        return False
    return bool(ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, mmap_threshold))
