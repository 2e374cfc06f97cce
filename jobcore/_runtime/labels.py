"""Label selectors: parse the string form the API accepts and match label sets against it."""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

Matcher = Callable[[Mapping[str, str]], bool]

_SET_RE = re.compile(r"^\s*([\w./-]+)\s+(in|notin)\s*\(([^)]*)\)\s*$")
_EQ_RE = re.compile(r"^\s*([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)\s*$")
_EXISTS_RE = re.compile(r"^\s*(!?)\s*([\w./-]+)\s*$")


def _split_requirements(selector: str) -> list[str]:
    """Split at commas that are not inside a parenthesised value set."""
    parts, depth, current = [], 0, ""
    for char in selector:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current += char
    parts.append(current)
    return [part for part in parts if part.strip()]


def _requirement(text: str) -> Matcher:
    if match := _SET_RE.match(text):
        key, op, values = match.group(1), match.group(2), match.group(3)
        allowed = frozenset(value.strip() for value in values.split(","))
        if op == "in":
            return lambda labels: labels.get(key) in allowed
        return lambda labels: labels.get(key) not in allowed
    if match := _EQ_RE.match(text):
        key, op, value = match.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if match := _EXISTS_RE.match(text):
        negate, key = match.groups()
        if negate:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise ValueError(f"invalid label selector requirement: {text!r}")


def parse_selector(selector: str) -> Matcher:
    """A matcher for a selector such as `app=x,tier!=db,env in (a,b),!legacy`.

    Raises ValueError on a malformed selector; the empty selector matches everything.
    """
    requirements = [_requirement(part) for part in _split_requirements(selector)]
    return lambda labels: all(requirement(labels) for requirement in requirements)


def selector_to_string(selector: Mapping[str, Any]) -> str:
    """Render a LabelSelector object (`matchLabels`, `matchExpressions`) in string form."""
    parts = [f"{key}={value}" for key, value in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or ():
        key, op = expression["key"], expression["operator"]
        values = ",".join(expression.get("values") or ())
        parts.append(
            {
                "In": f"{key} in ({values})",
                "NotIn": f"{key} notin ({values})",
                "Exists": key,
                "DoesNotExist": f"!{key}",
            }[op]
        )
    return ",".join(parts)
