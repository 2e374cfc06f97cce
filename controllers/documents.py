"""YAML documents read for the offline tools, each able to tell the line of a field path."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import yaml

STDIN = "-"
"""The file name that reads standard input."""

_INDEX = re.compile(r"\[(\d+)\]|(\d+)(?=$|[.\[])")


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong with an input, where it is: `job.yaml:14: spec.worker.replicas: ...`."""

    source: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line is not None else self.source
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class Document:
    """One document of a YAML stream: its data, and its node tree for line numbers."""

    source: str
    data: Any
    node: yaml.Node = field(repr=False)

    @property
    def line(self) -> int:
        """The 1-based line the document starts on."""
        return self.node.start_mark.line + 1

    def line_of(self, path: str) -> int:
        """The 1-based line of the field at `path`, or of the nearest enclosing field present.

        `path` is a field path as `FieldError` spells it: `spec.worker.replicas`,
        `spec.runMode.debug.replicaSpecs[0].type` or pydantic's `...containers.0.image`. Keys
        may contain dots (`metadata.labels.example.com/team`): the longest key that matches
        wins. A field the document lacks (a missing required one) gives its parent's line.
        """
        node, line, rest = self.node, self.line, path
        while rest:
            found = _step(node, rest)
            if found is None:
                break
            node, line, rest = found
        return line

    def problem(self, message: str, path: str | None = None) -> Problem:
        """A problem at `path` in this document (at its start without one)."""
        return Problem(self.source, self.line_of(path) if path else self.line, message)


def _step(node: yaml.Node, path: str) -> tuple[yaml.Node, int, str] | None:
    """One field down `path` from `node`: the child node, its line, and the rest of the path."""
    if isinstance(node, yaml.MappingNode):
        matches = [
            (key, value)
            for key, value in node.value
            if isinstance(key, yaml.ScalarNode)
            and (path == key.value or path.startswith((f"{key.value}.", f"{key.value}[")))
        ]
        if not matches:
            return None
        key, value = max(matches, key=lambda match: len(str(match[0].value)))
        return value, key.start_mark.line + 1, path[len(key.value) :].removeprefix(".")
    if isinstance(node, yaml.SequenceNode):
        index = _INDEX.match(path)
        if index is None:
            return None
        position = int(index.group(1) or index.group(2))
        if position >= len(node.value):
            return None
        item = node.value[position]
        return item, item.start_mark.line + 1, path[index.end() :].removeprefix(".")
    return None


def source_name(path: str) -> str:
    """How problems name the file at `path`: `<stdin>` for `-`."""
    return "<stdin>" if path == STDIN else path


class UnreadableInput(Exception):
    """A file that cannot be read or is not YAML; its `problem` says where."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def parse_documents(text: str, source: str) -> list[Document]:
    """Every non-empty document of a YAML stream, in order; raise `UnreadableInput`."""
    loader = yaml.SafeLoader(text)
    documents = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                break
            data = loader.construct_document(node)
            if data is not None:
                documents.append(Document(source, data, node))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(error, "problem", None) or str(error)
        if context := getattr(error, "context", None):
            reason = f"{reason} ({context})"
        problem = Problem(source, line, f"not valid YAML: {reason}")
        raise UnreadableInput(problem) from error
    finally:
        loader.dispose()
    return documents


def read_documents(path: str) -> list[Document]:
    """The documents of a file, or of standard input for `-`; raise `UnreadableInput`."""
    if path == STDIN:
        return parse_documents(sys.stdin.read(), source_name(path))
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise UnreadableInput(Problem(path, None, f"cannot read: {reason}")) from error
    return parse_documents(text, path)
