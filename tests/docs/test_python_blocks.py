"""Every Python block in docs/ is checked: either it is a file under docs/examples/ that the suite
runs (`<!-- file: PATH -->`, see test_examples.py), or it is an excerpt (`<!-- excerpt -->`)
whose imported names exist, public, where it says they are.

An excerpt leaves out what its program needs around it (a kind's other members, a fixture's
job), so only its imports are checked: importing the module and reading the name, as the
reader's program would.
"""

from __future__ import annotations

import ast
import importlib
import re
from types import ModuleType

from tests.docs.shown import EXCERPT
from tests.docs.shown import PythonBlock
from tests.docs.shown import python_blocks

_RUN = re.compile(r"<!-- file: examples/\S+\.py -->")
_IMPORT = re.compile(r"^(from \S+ import |import )(\([^)]*\)|.*)$", re.M)


def test_every_python_block_is_run_or_an_excerpt() -> None:
    blocks = python_blocks()
    assert blocks, "no page of docs/ has a ```python block"
    unmarked = [
        str(block) for block in blocks if block.mark != EXCERPT and not _RUN.fullmatch(block.mark)
    ]
    assert not unmarked, (
        f"blocks with neither `<!-- file: examples/....py -->` nor `{EXCERPT}` on the line "
        "before: " + ", ".join(unmarked)
    )


def test_the_names_each_excerpt_imports_exist_in_the_public_api() -> None:
    missing = [
        f"{block}: {problem}"
        for block in python_blocks()
        if block.mark == EXCERPT
        for problem in _import_problems(block)
    ]
    assert not missing, "\n".join(missing)


def _import_problems(block: PythonBlock) -> list[str]:
    """What is wrong with each of the block's import statements (none: all is well)."""
    problems = []
    for statement in _IMPORT.finditer(block.text):
        node = ast.parse(statement[0]).body[0]
        if isinstance(node, ast.Import):
            problems += [_module_problem(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            problems += [_name_problem(node.module, alias.name) for alias in node.names]
    return [problem for problem in problems if problem]


def _module_problem(name: str) -> str:
    if any(part.startswith("_") for part in name.split(".")):
        return f"{name} is a private module"
    try:
        importlib.import_module(name)
    except ImportError as error:
        return f"import {name}: {error}"
    return ""


def _name_problem(module_name: str, name: str) -> str:
    if problem := _module_problem(module_name):
        return problem
    module = importlib.import_module(module_name)
    if _is_submodule(module, name):
        return ""
    if not hasattr(module, name):
        return f"{module_name} has no {name}"
    exported = getattr(module, "__all__", None)
    if name.startswith("_") or (exported is not None and name not in exported):
        return f"{name} is not public in {module_name} (not in its __all__)"
    return ""


def _is_submodule(module: ModuleType, name: str) -> bool:
    try:
        importlib.import_module(f"{module.__name__}.{name}")
    except ImportError:
        return False
    return True
