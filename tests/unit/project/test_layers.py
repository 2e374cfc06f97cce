"""Every module of jobcore's private packages and every kind package sits in a layer of an
import-linter contract: a module left out of the list would be checked by no contract."""

from __future__ import annotations

import pkgutil
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
    "importlinter"
]["contracts"]


def layered(container: str) -> set[str]:
    """The modules the layers contract on `container` places."""
    [contract] = [c for c in CONTRACTS if c.get("containers") == [container]]
    return {name for layer in contract["layers"] for name in re.split(r"\s*[|:]\s*", layer)}


@pytest.mark.parametrize(
    "container",
    [
        "jobcore",
        "jobcore._runtime",
        "jobcore._jobs",
        "jobcore._launcher",
        "jobcore.testing",
        "jobkinds",
    ],
)
def test_every_module_is_in_a_layer(container: str) -> None:
    folder = ROOT.joinpath(*container.split("."))
    modules = {info.name for info in pkgutil.iter_modules([str(folder)])}
    assert modules - layered(container) == set()
