"""TEMPORARY stand-in until the img branch lands."""

from __future__ import annotations

from jobcore.testing import images_folder


def reference(name: str) -> str:
    return (images_folder() / f"{name}.ref").read_text().strip()


def missing(*names: str) -> str | None:
    gone = [n for n in names if not (images_folder() / f"{n}.tar").is_file()]
    return f"images {', '.join(gone)} not built: run scripts/images.sh" if gone else None
