"""Where `scripts/frameworks.sh` installed each real framework, and why one is missing.

The real-tier tests and `jobcore sandbox --real` run programs from these installs on the
process-backed node; the jobcore package never imports them.
"""

from __future__ import annotations

import os
from pathlib import Path

NAMES = ("openmpi4", "openmpi5", "mpich", "intel", "colossalai", "horovod", "nonroot")
STAMP = ".jobcore-installed"


def cache_folder(variable: str, name: str) -> Path:
    """$variable, else ~/.cache/jobcore/NAME, $XDG_CACHE_HOME standing for ~/.cache if set
    (as the scripts choose)."""
    if folder := os.environ.get(variable):
        return Path(folder)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "jobcore" / name


def root() -> Path:
    """$JOBCORE_FRAMEWORKS, else ~/.cache/jobcore/frameworks."""
    return cache_folder("JOBCORE_FRAMEWORKS", "frameworks")


def home(name: str) -> Path:
    """The framework's prefix: its launcher and tools are in `bin/` below it."""
    return (root() / name / "home").resolve()


def missing(name: str) -> str | None:
    """None when `name` is installed, else what to run to install it."""
    if name not in NAMES:
        raise ValueError(f"unknown framework {name!r}; known: {', '.join(NAMES)}")
    if (root() / name / STAMP).is_file():
        return None
    return f"{name} is not installed in {root()}: run scripts/frameworks.sh {name}"
