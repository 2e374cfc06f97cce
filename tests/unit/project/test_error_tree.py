"""One error tree: every exception class jobcore defines is a JobcoreError, drawn in the tree
of jobcore/_runtime/errors.py under its own parent."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import jobcore
from jobcore import JobcoreError
from jobcore._runtime import errors

_DRAWN = re.compile(r"^(?P<indent>[│ ]*)[├└]── (?P<name>[A-Z]\w+)", re.M)


def defined_exceptions() -> dict[str, type[BaseException]]:
    """Every public exception class defined in a jobcore module, by name."""
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(jobcore.__path__, "jobcore."):
        if module_info.name == "jobcore.testing.plugin":
            continue  # the pytest plugin, loaded by pytest itself
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[name] = value
    return found


def drawn_parents() -> dict[str, str]:
    """Each class the tree draws, and the class it is drawn under."""
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = [(-1, "JobcoreError")]
    assert errors.__doc__ is not None
    for line in errors.__doc__.splitlines():
        if (match := _DRAWN.match(line)) is None:
            continue
        depth = len(match["indent"]) // 4
        while stack[-1][0] >= depth:
            stack.pop()
        parents[match["name"]] = stack[-1][1]
        stack.append((depth, match["name"]))
    return parents


def test_every_exception_jobcore_defines_is_a_jobcore_error() -> None:
    outside = [
        name for name, cls in defined_exceptions().items() if not issubclass(cls, JobcoreError)
    ]
    assert outside == []


def test_the_tree_draws_every_exception_under_its_parent() -> None:
    exceptions = defined_exceptions()
    parents = drawn_parents()
    assert sorted(set(exceptions) - {"JobcoreError"}) == sorted(parents)
    wrong = {
        name: parent
        for name, parent in parents.items()
        if exceptions[name].__mro__[1].__name__ != parent
    }
    assert wrong == {}
