"""Every generated file the repository commits, rewritten or checked in one run.

`python -m controllers.generate` rewrites, from the bundled kinds' models, `manifests/` (the
CRDs, RBAC, the Deployment, Kueue's and the dashboard's installs, the kustomizations; the job
samples are kept by hand) and the API reference in `docs/reference/`, then rebuilds the
dashboard's bundle with `scripts/frontend.sh` (which needs Node). `--check` writes nothing: it
names each committed file that differs from what its source gives, and exits 1 if any does.
`tests/unit/cli/test_generate.py` runs the check, so CI fails on a stale file.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from controllers.apidocs import REGENERATE
from controllers.apidocs import write_api_reference
from controllers.kinds import BUNDLED_KINDS
from controllers.kinds import installed_kinds
from controllers.manifests import write_manifests

MANIFESTS = Path("manifests")
REFERENCE = Path("docs/reference")
"""Generated whole: a page there that no kind gives is stale too."""
FRONTEND = Path("scripts/frontend.sh")


def generated(root: Path) -> dict[Path, str]:
    """Each generated file (relative to the checkout `root`) and the text its source gives now;
    the samples' kustomization lists the samples found in `root`."""
    kinds = installed_kinds(BUNDLED_KINDS)  # not plugins: the repository ships these
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch)
        samples = out / MANIFESTS / "samples"
        samples.mkdir(parents=True)
        for sample in (root / MANIFESTS / "samples").glob("*.yaml"):
            (samples / sample.name).touch()  # only their names go into the kustomization
        written = write_manifests([k.kind for k in kinds], out / MANIFESTS)
        written += write_api_reference({k.name: k.kind for k in kinds}, out / REFERENCE)
        return {path.relative_to(out): path.read_text(encoding="utf-8") for path in written}


def stale(root: Path, files: dict[Path, str] | None = None) -> list[Path]:
    """The generated files under `root` that are missing or differ from their sources, and the
    pages in `docs/reference/` that no kind gives, sorted."""
    files = generated(root) if files is None else files
    extra = [
        path.relative_to(root)
        for path in (root / REFERENCE).glob("*.md")
        if path.relative_to(root) not in files
    ]
    differ = [path for path, text in files.items() if _text(root / path) != text]
    return sorted([*differ, *extra])


def regenerate(root: Path) -> list[Path]:
    """Rewrite the stale generated files under `root`, remove the pages no kind gives; return
    the paths changed."""
    files = generated(root)
    changed = stale(root, files)
    for path in changed:
        if path in files:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(files[path], encoding="utf-8")
        else:
            (root / path).unlink()
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m controllers.generate [--check] [--root DIR] [--skip-bundle]`."""
    parser = argparse.ArgumentParser(
        prog=REGENERATE,
        description="Rewrite every generated file of the repository from its source.",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; name each stale file and exit 1 if there is one",
    )
    parser.add_argument("--root", type=Path, default=Path(), help="the checkout (default: .)")
    parser.add_argument(
        "--skip-bundle",
        action="store_true",
        help=f"leave the dashboard's bundle alone (its {FRONTEND} needs Node)",
    )
    args = parser.parse_args(argv)
    status = 0
    if args.check:
        for path in stale(args.root):
            print(f"stale: {path}", file=sys.stderr)
            status = 1
        if status:
            print(f"run `{REGENERATE}` and commit what it writes", file=sys.stderr)
    else:
        for path in regenerate(args.root):
            print(f"wrote: {path}")
    if not args.skip_bundle:
        status = max(status, _bundle(args.root, check=args.check))
    return status


def _bundle(root: Path, *, check: bool) -> int:
    """`scripts/frontend.sh [--check]`'s exit status; it names the bundle when it is stale."""
    command = ["bash", str(root / FRONTEND), *(["--check"] if check else [])]
    return subprocess.run(command, check=False).returncode


def _text(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


if __name__ == "__main__":
    raise SystemExit(main())
