"""YAML documents read for the offline tools, each able to tell the line of a field path.

The loader refuses, while it composes the node tree, what would make later work explode: a
file whose aliases expand to more than MAX_ALIAS_NODES nodes (a "billion laughs" alias
bomb), collections nested deeper than MAX_DEPTH (aliases counted at their full depth) and an
alias inside the node it names. So reading a file costs time linear in its size.
"""

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
MAX_DEPTH = 100
"""How deep a document's collections may nest; a job nests about 15 deep."""
MAX_ALIAS_NODES = 1_000_000
"""How many nodes the aliases of a file may add, each counted at its anchor's expanded size."""


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


class _Refused(yaml.MarkedYAMLError):
    """YAML that `_BoundedLoader` does not read: too deep, too many aliases, a recursive one."""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, measuring each node as it composes it: the nodes and depth it
    stands for once aliases are expanded, without expanding them (an alias reuses its
    anchor's measure). Raises `_Refused` past MAX_DEPTH or MAX_ALIAS_NODES."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._measures: dict[yaml.Node, tuple[int, int]] = {}
        """Each composed node's expanded (node count, height); a node being composed has none."""
        self._depth = 0
        self._alias_nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        alias = self.check_event(yaml.AliasEvent)
        mark = self.current_event.start_mark  # the event check_event looked at
        if not alias and self._depth == MAX_DEPTH:
            raise _Refused(
                problem=f"collections nested more than {MAX_DEPTH} deep", problem_mark=mark
            )
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        assert node is not None  # every event composes to a node
        if not alias:
            self._measures[node] = self._measure(node)
            return node
        measure = self._measures.get(node)
        if measure is None:
            raise _Refused(problem="an alias inside the node it names", problem_mark=mark)
        nodes, height = measure
        self._alias_nodes += nodes
        if self._alias_nodes > MAX_ALIAS_NODES:
            raise _Refused(
                problem=f"aliases expand to more than {MAX_ALIAS_NODES:,} nodes (an alias bomb?)",
                problem_mark=mark,
            )
        if self._depth + height > MAX_DEPTH:
            raise _Refused(
                problem=f"collections nested more than {MAX_DEPTH} deep, with this alias expanded",
                problem_mark=mark,
            )
        return node

    def _measure(self, node: yaml.Node) -> tuple[int, int]:
        """A composed node's expanded node count and height, from its children's."""
        if isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            return 1, 1
        measures = [self._measures[child] for child in children]
        return 1 + sum(n for n, _ in measures), 1 + max((h for _, h in measures), default=0)


def parse_documents(text: str, source: str) -> list[Document]:
    """Every non-empty document of a YAML stream, in order; raise `UnreadableInput`."""
    loader = _BoundedLoader(text)
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
        verdict = "not accepted" if isinstance(error, _Refused) else "not valid YAML"
        problem = Problem(source, line, f"{verdict}: {reason}")
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
