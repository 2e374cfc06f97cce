"""Where `scripts/images.sh` put the real cluster's container images, and why one is missing.

Each image is a docker-archive tarball NAME.tar (what `ctr -n k8s.io images import` loads) beside
NAME.ref, the one-line reference it is tagged with inside, which pods name as their image.
"""

from __future__ import annotations

from pathlib import Path

from jobcore.testing import images_folder

NAMES = (
    "pause",
    "python",
    "jobcore",
    "base",
    "openmpi4",
    "mpich",
    "intel",
    "torch",
    "colossalai",
    "horovod",
    "mpi-pi",
    "mpi-pi-nosshd",
    "mpich-nosshd",
    "intel-nosshd",
    "openmpi5-nosshd",
)
"""The images the script builds, in its order (an image comes after the one it builds FROM)."""


def folder() -> Path:
    """$JOBCORE_IMAGES, else ~/.cache/jobcore/images: where the real cluster imports from."""
    return images_folder()


def tarball(name: str) -> Path:
    """The image's docker-archive tarball (present or not)."""
    _known(name)
    return folder() / f"{name}.tar"


def reference(name: str) -> str:
    """The image's full reference as tagged in its tarball, e.g. docker.io/library/jobcore:0.1.0.

    Raises FileNotFoundError saying what to run when the image is not built.
    """
    if reason := missing(name):
        raise FileNotFoundError(reason)
    return (folder() / f"{name}.ref").read_text().strip()


def missing(*names: str) -> str | None:
    """None when every named image (every image without names) is built, else a sentence naming
    the absent ones and the command that builds them."""
    for name in names:
        _known(name)
    absent = [name for name in names or NAMES if not _built(name)]
    if not absent:
        return None
    return f"not built in {folder()}: {', '.join(absent)}; run scripts/images.sh {' '.join(absent)}"


def _built(name: str) -> bool:
    """Its tarball and a non-empty reference are there (the script writes the tarball first)."""
    ref = folder() / f"{name}.ref"
    return (folder() / f"{name}.tar").is_file() and ref.is_file() and bool(ref.read_text().strip())


def _known(name: str) -> None:
    if name not in NAMES:
        raise ValueError(f"unknown image {name!r}; known: {', '.join(NAMES)}")
