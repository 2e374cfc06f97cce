"""`python -m controllers.generate`: every committed generated file matches its source, and
`--check` names each one that does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.apidocs import REGENERATE
from controllers.generate import main
from controllers.generate import stale

ROOT = Path(__file__).resolve().parents[3]
CRD = Path("manifests/crds/batch.tensorstack.dev_mpijobs.yaml")


def test_every_committed_generated_file_matches_its_source() -> None:
    files = ", ".join(str(path) for path in stale(ROOT))
    assert not files, f"stale generated files ({files}): run `{REGENERATE}` and commit them"


def check(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    """`--check`'s exit status and the lines it printed."""
    status = main(["--check", "--root", str(root), "--skip-bundle"])
    return status, capsys.readouterr().err.splitlines()


def test_check_names_each_stale_file_and_a_run_mends_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "manifests" / "samples").mkdir(parents=True)
    (tmp_path / "manifests" / "samples" / "mpijob-env.yaml").write_text("kind: MPIJob\n")
    assert main(["--root", str(tmp_path), "--skip-bundle"]) == 0
    assert (tmp_path / CRD).read_text() == (ROOT / CRD).read_text()
    assert "- mpijob-env.yaml" in (tmp_path / "manifests/samples/kustomization.yaml").read_text()
    capsys.readouterr()
    assert check(tmp_path, capsys) == (0, [])

    (tmp_path / CRD).write_text("edited by hand\n")
    (tmp_path / "docs/reference/gone.md").write_text("a kind no longer bundled\n")
    (tmp_path / "docs/reference/mpijob.md").unlink()
    assert check(tmp_path, capsys) == (
        1,
        [
            "stale: docs/reference/gone.md",
            "stale: docs/reference/mpijob.md",
            f"stale: {CRD}",
            f"run `{REGENERATE}` and commit what it writes",
        ],
    )
    assert main(["--root", str(tmp_path), "--skip-bundle"]) == 0
    assert not (tmp_path / "docs/reference/gone.md").exists()
    assert check(tmp_path, capsys) == (0, [])
