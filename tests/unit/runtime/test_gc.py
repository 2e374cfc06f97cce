"""configure_gc: fewer young collections, start-up objects frozen out of all of them;
configure_malloc: large blocks freed leave the process's memory."""

from __future__ import annotations

import gc
import subprocess
import sys
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


FREED_BLOCKS = """
import sys
from jobcore import configure_malloc

def rss_mb():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) / 1024 for l in status if l.startswith("VmRSS:"))

if sys.argv[1] == "configured" and not configure_malloc():
    sys.exit("not glibc")
b"x" * 2**20  # the first large block, freed at once
before = rss_mb()
blocks, kept = [], []
for _ in range(32):  # in flight together, as a burst of watch events is
    blocks.append(b"x" * 2**20)
    kept.append(b"k" * 2**14)  # a block of 16 KiB that lives on, after each large one
del blocks
print(rss_mb() - before)
"""
"""32 blocks of 1 MiB freed after a first one, each followed by one of 16 KiB kept: the
process's RSS growth in MB."""


def rss_left_by_freed_blocks(mode: str) -> float:
    run = subprocess.run(
        [sys.executable, "-c", FREED_BLOCKS, mode], check=False, capture_output=True, text=True
    )
    if run.stderr.strip() == "not glibc":
        pytest.skip("configure_malloc sets glibc's malloc only")
    assert run.returncode == 0, run.stderr
    return float(run.stdout)


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_configure_malloc_returns_freed_large_blocks_to_the_system() -> None:
    configured = rss_left_by_freed_blocks("configured")
    default = rss_left_by_freed_blocks("default")
    print(
        f"32 MiB freed in blocks of 1 MiB left {default:.1f} MB resident, {configured:.1f} MB"
        " with configure_malloc"
    )
    assert configured < 4
