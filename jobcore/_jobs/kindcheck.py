"""A kind checked before its controller runs, so that a broken kind fails once, clearly.

Unchecked, a kind missing a `JobKind` member is listed and gets a CRD, then fails every
reconcile with AttributeError; an invalid plural or short name gives a CRD the API server
refuses; two kinds of one short name make `kubectl get` ambiguous; a misspelt hook is
silently not a hook. `kind_problems` names every such problem; `check_kind` raises them as one
`InvalidKindError`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any

from jobcore._jobs.hooks import HOOK_NAMES
from jobcore._jobs.hooks import HOOKS_ATTRIBUTE
from jobcore._jobs.hooks import KindHooks
from jobcore._jobs.kind import JobKind
from jobcore._runtime.errors import JobcoreError
from jobcore._runtime.resources import DNS1035_LABEL
from jobcore._runtime.resources import DNS1123_LABEL
from jobcore._runtime.resources import Resource

MEMBERS = tuple(name for name in vars(JobKind) if not name.startswith("_"))
"""The `JobKind` protocol's members, read from the protocol itself."""
_METHODS = frozenset(name for name in MEMBERS if callable(vars(JobKind)[name]))
_KNOWN = frozenset({*MEMBERS, HOOKS_ATTRIBUTE})
_HOOKISH = sorted({*HOOK_NAMES, HOOKS_ATTRIBUTE})
_DNS_SUBDOMAIN = re.compile(rf"{DNS1123_LABEL}(\.{DNS1123_LABEL})+")
"""A DNS subdomain with at least one dot, what the API server requires of a CRD's group."""


class InvalidKindError(JobcoreError):
    """A kind that cannot run: every problem found, each a line of the message."""

    def __init__(self, kind: str, problems: list[str]) -> None:
        listed = "".join(f"\n  - {problem}" for problem in problems)
        super().__init__(f"{kind} is not a valid job kind:{listed}")
        self.kind = kind
        self.problems = problems


def kind_name(kind: object) -> str:
    """The kind as a message names it: its API kind when it has one, and its class."""
    resource = getattr(kind, "resource", None)
    cls = type(kind)
    where = f"{cls.__module__}.{cls.__qualname__}"
    return f"{resource.kind} ({where})" if isinstance(resource, Resource) else where


def check_kind(kind: object, *, others: Iterable[JobKind[Any]] = ()) -> None:
    """Raise InvalidKindError naming every problem `kind_problems` finds."""
    if problems := kind_problems(kind, others=others):
        raise InvalidKindError(kind_name(kind), problems)


def kind_problems(
    kind: object, *, others: Iterable[JobKind[Any]] = (), every_attribute: bool = False
) -> list[str]:
    """What would make `kind` fail once it runs, as sentences; none for a sound kind.

    Missing `JobKind` members, a resource the API server would refuse as a CRD's, short names
    that one of `others` (kinds loaded with it) has too, a `hooks` that is not a `KindHooks`,
    and public attributes that look like a misspelt hook, or, with `every_attribute`, any
    public attribute that is neither a member nor `hooks`.
    """
    problems = _missing(kind)
    resource = getattr(kind, "resource", None)
    if isinstance(resource, Resource):
        problems += _resource_problems(resource)
    elif hasattr(kind, "resource"):
        problems.append(f"resource is a {type(resource).__name__}, not a jobcore Resource")
    problems += _short_name_problems(kind)
    problems += _clashes(kind, others)
    hooks = getattr(kind, HOOKS_ATTRIBUTE, None)
    if hooks is not None and not isinstance(hooks, KindHooks):
        problems.append(f"hooks is a {type(hooks).__name__}, not a KindHooks")
    for name in sorted(_public(kind) - _KNOWN):
        if name in HOOK_NAMES:
            problems.append(f"{name} is a hook: declare it as hooks = KindHooks({name}=...)")
        elif close := difflib.get_close_matches(name, _HOOKISH, n=1, cutoff=0.8):
            problems.append(f"unknown attribute {name}: a misspelt {close[0]}?")
        elif every_attribute:
            problems.append(
                f"unknown public attribute {name}: neither a JobKind member nor hooks "
                f"(make it private: _{name})"
            )
    return problems


def _public(kind: object) -> set[str]:
    return {name for name in dir(kind) if not name.startswith("_")}


def _absent(kind: object) -> list[str]:
    return [name for name in MEMBERS if not hasattr(kind, name)]


def _missing(kind: object) -> list[str]:
    problems = []
    unknown = sorted(_public(kind) - _KNOWN - HOOK_NAMES)
    for name in _absent(kind):
        close = difflib.get_close_matches(name, unknown, n=1, cutoff=0.8)
        problems.append(f"missing {name}" + (f" (is {close[0]} a misspelling?)" if close else ""))
    problems += [
        f"{name} is not a method"
        for name in sorted(_METHODS)
        if hasattr(kind, name) and not callable(getattr(kind, name))
    ]
    return problems


def _is_label(text: str) -> bool:
    """An RFC 1035 label, what the API server requires of a CRD's plural, kind and short
    names."""
    return len(text) <= 63 and DNS1035_LABEL.fullmatch(text) is not None


def _resource_problems(resource: Resource) -> list[str]:
    problems = []
    if not _is_label(resource.plural):
        problems.append(
            f"plural {resource.plural!r} is not a lowercase DNS label "
            "(a-z, 0-9 and '-', starting with a letter, at most 63 characters)"
        )
    if not _is_label(resource.kind.lower()):
        problems.append(f"kind {resource.kind!r} is not a DNS label once lowercased")
    if not _DNS_SUBDOMAIN.fullmatch(resource.group) or len(resource.group) > 253:
        problems.append(f"group {resource.group!r} is not a DNS domain with at least one dot")
    if not _is_label(resource.version):
        problems.append(f"version {resource.version!r} is not a lowercase DNS label")
    if not resource.namespaced:
        problems.append("resource is cluster-scoped: job kinds are namespaced")
    return problems


def _short_name_problems(kind: object) -> list[str]:
    names = getattr(kind, "short_names", ())
    if isinstance(names, str):
        return [f"short_names is the string {names!r}, not a sequence of names"]
    return [
        f"short name {name!r} is not a lowercase DNS label"
        for name in names
        if not isinstance(name, str) or not _is_label(name)
    ]


def _clashes(kind: object, others: Iterable[JobKind[Any]]) -> list[str]:
    """Short names, or the resource itself, that one of `others` has too."""
    names = getattr(kind, "short_names", ())
    resource = getattr(kind, "resource", None)
    problems = []
    for other in others:
        if shared := sorted(set(names) & set(other.short_names)):
            problems.append(f"short name(s) {shared} taken by {kind_name(other)}")
        if isinstance(resource, Resource) and (resource.group, resource.plural) == (
            other.resource.group,
            other.resource.plural,
        ):
            problems.append(f"{resource.plural}.{resource.group} is {kind_name(other)}'s too")
    return problems
