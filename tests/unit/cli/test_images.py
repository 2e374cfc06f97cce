"""controllers.sandbox.images: where scripts/images.sh's tarballs are, and what a missing one
says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from controllers.sandbox import images

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "images.sh"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("JOBCORE_IMAGES", str(tmp_path))
    return tmp_path


def build(folder: Path, name: str, reference: str) -> None:
    """What the script leaves for one image."""
    (folder / f"{name}.tar").write_bytes(b"tarball")
    (folder / f"{name}.ref").write_text(reference + "\n")


def test_a_built_image_has_its_reference_and_tarball(folder: Path) -> None:
    build(folder, "jobcore", "docker.io/library/jobcore:0.1.0")
    assert images.reference("jobcore") == "docker.io/library/jobcore:0.1.0"
    assert images.tarball("jobcore") == folder / "jobcore.tar"
    assert images.missing("jobcore") is None


def test_missing_names_the_absent_images_and_the_command(folder: Path) -> None:
    build(folder, "pause", "k8s.gcr.io/pause:3.2")
    assert images.missing("pause", "openmpi4", "mpi-pi") == (
        f"not built in {folder}: openmpi4, mpi-pi; run scripts/images.sh openmpi4 mpi-pi"
    )


def test_missing_without_names_checks_every_image(folder: Path) -> None:
    for name in images.NAMES[1:]:
        build(folder, name, f"localhost/jobcore-test/{name}:0123456789ab")
    assert images.missing() == f"not built in {folder}: pause; run scripts/images.sh pause"
    build(folder, "pause", "k8s.gcr.io/pause:3.2")
    assert images.missing() is None


def test_a_tarball_without_a_reference_is_not_built(folder: Path) -> None:
    (folder / "base.tar").write_bytes(b"tarball")
    assert images.missing("base") is not None
    (folder / "base.ref").write_text("\n")
    with pytest.raises(FileNotFoundError, match=r"run scripts/images.sh base$"):
        images.reference("base")


def test_an_unknown_image_is_refused(folder: Path) -> None:
    with pytest.raises(ValueError, match="unknown image 'mpi'; known: pause, python, jobcore"):
        images.missing("mpi")
    with pytest.raises(ValueError, match="unknown image"):
        images.reference("mpi")


def test_the_default_folder_is_under_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JOBCORE_IMAGES", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert images.folder() == tmp_path / "jobcore" / "images"


def test_the_names_are_the_scripts() -> None:
    listed = re.search(r"^all=\(([^)]*)\)", SCRIPT.read_text(), re.MULTILINE)
    assert listed is not None
    assert tuple(listed.group(1).split()) == images.NAMES
