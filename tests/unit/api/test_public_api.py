"""The public APIs: what `jobcore`, `jobcore.jobs`, `jobcore.launcher` and `jobcore.testing`
export, and module docstrings.

Each public module's names are frozen in tests/unit/api/MODULE.txt, one per line, compared
exactly: a name added or removed shows in review as a change to that file.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import jobcore

PACKAGE_DIR = Path(jobcore.__file__).parent
MODULE_FILES = sorted(PACKAGE_DIR.rglob("*.py"))


def isort_style_key(name: str) -> tuple[int, list[str | int]]:
    """Ruff's RUF022 order: SCREAMING_SNAKE_CASE, then CamelCase, then the rest; natural sort."""
    if len(name) > 1 and name.isupper():
        category = 0
    elif name[:1].isupper():
        category = 1
    else:
        category = 2
    natural: list[str | int] = [
        int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name) if part
    ]
    return category, natural


def public_names(module: types.ModuleType) -> set[str]:
    """Names bound in the module's namespace that are neither private nor submodules."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }


def check_all(module: types.ModuleType) -> None:
    exported = list(module.__all__)
    assert len(exported) == len(set(exported)), "duplicates in __all__"
    assert exported == sorted(exported, key=isort_style_key), "__all__ is not sorted"
    missing = [name for name in exported if not hasattr(module, name)]
    assert missing == [], f"in __all__ but not importable: {missing}"
    namespace = public_names(module)
    assert set(exported) - namespace == set()
    assert namespace - set(exported) == set(), "public names missing from __all__"


def test_isort_style_key_orders_like_ruff() -> None:
    expected = [
        "NAMESPACES",
        "NAMESPACE_INDEX",
        "PODS",
        "B",
        "Client",
        "Mapper",
        "MaxOf",
        "a2",
        "a10",
        "aB",
        "ab",
        "reconcile_context",
        "reconciler_from",
        "strip_bulk",
    ]
    assert sorted(reversed(expected), key=isort_style_key) == expected


PUBLIC_MODULES = ("jobcore", "jobcore.jobs", "jobcore.launcher", "jobcore.testing")
API_LISTS = Path(__file__).parent


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_unique_importable_and_complete(name: str) -> None:
    check_all(importlib.import_module(name))


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_public_names_are_exactly_the_checked_in_list(name: str) -> None:
    listed = (API_LISTS / f"{name}.txt").read_text(encoding="utf-8").split()
    exported = sorted(importlib.import_module(name).__all__)
    assert listed == sorted(listed), f"{name}.txt is not sorted"
    added = sorted(set(exported) - set(listed))
    removed = sorted(set(listed) - set(exported))
    assert (added, removed) == ([], []), f"{name}: update tests/unit/api/{name}.txt"


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_name_in_all_imports_with_from_import(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {name} import *", namespace)
    assert set(importlib.import_module(name).__all__) <= set(namespace)


def test_the_runtime_api_does_not_load_the_job_layer() -> None:
    """`import jobcore` is the runtime alone: a controller without jobs pays for no job code."""
    code = "import sys, jobcore; print(sorted(m for m in sys.modules if 'jobcore._jobs' in m))"
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "path", MODULE_FILES, ids=[str(path.relative_to(PACKAGE_DIR)) for path in MODULE_FILES]
)
def test_module_has_a_docstring_whose_first_line_ends_with_a_period(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstring = ast.get_docstring(tree)
    assert docstring, f"{path} has no module docstring"
    first_line = docstring.strip().splitlines()[0].rstrip()
    assert first_line.endswith("."), f"{path}: {first_line!r}"
