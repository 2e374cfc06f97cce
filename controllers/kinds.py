"""Find the installed job kinds: entry points in the `jobcore.jobkinds` group, by name.

Each kind is checked as it loads (`check_kind`), against the kinds loaded before it (the
bundled ones first), so a broken kind fails here, naming its entry point and every problem,
rather than in its CRD or in every reconcile.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from importlib.metadata import entry_points
from typing import Any

import structlog

from jobcore.jobs import InvalidKindError
from jobcore.jobs import JobKind
from jobcore.jobs import check_kind

ENTRY_POINT_GROUP = "jobcore.jobkinds"
BUNDLED_KINDS = ("colossalaijob", "horovodjob", "kubeflow-mpijob", "mpijob")
"""The kinds this distribution brings (and the controller's image runs)."""
_log = structlog.get_logger("jobcore.kinds")


class KindLoadError(Exception):
    """A kind could not be loaded, or is not a valid kind; names the entry point and its
    distribution."""


@dataclass(frozen=True, slots=True)
class InstalledKind:
    """A loaded kind and where it came from."""

    name: str
    kind: JobKind[Any]
    source: str


def _source(entry: EntryPoint) -> str:
    dist = entry.dist
    return f"{dist.name} {dist.version}" if dist is not None else entry.value


def _load(entry: EntryPoint, loaded: Sequence[InstalledKind]) -> InstalledKind:
    """The entry point's kind, checked against the kinds `loaded` before it."""
    try:
        factory = entry.load()
        kind = factory()
    except Exception as exc:
        raise KindLoadError(f"job kind {entry.name!r} ({_source(entry)}): {exc!r}") from exc
    try:
        check_kind(kind, others=[installed.kind for installed in loaded])
    except InvalidKindError as exc:
        raise KindLoadError(f"job kind {entry.name!r} ({_source(entry)}): {exc}") from exc
    return InstalledKind(entry.name, kind, _source(entry))


def kind_names(text: str | None) -> list[str] | None:
    """The names in a comma-separated `--kinds` value; None for none given."""
    return [name.strip() for name in text.split(",") if name.strip()] if text else None


def _entries() -> dict[str, EntryPoint]:
    return {entry.name: entry for entry in entry_points(group=ENTRY_POINT_GROUP)}


def _load_order(names: Iterable[str]) -> list[str]:
    """The bundled kinds first, then the others by name: a plugin's kind that takes a short
    name or a resource of another is the one refused, never one this distribution brings."""
    return sorted(names, key=lambda name: (name not in BUNDLED_KINDS, name))


def load_all_kinds() -> tuple[list[InstalledKind], list[KindLoadError]]:
    """Every installed kind in name order, and why each one that failed to load failed."""
    kinds: list[InstalledKind] = []
    errors, entries = [], _entries()
    for name in _load_order(entries):
        try:
            kinds.append(_load(entries[name], kinds))
        except KindLoadError as error:
            errors.append(error)
    return sorted(kinds, key=lambda installed: installed.name), errors


def installed_kinds(names: Iterable[str] | None = None) -> list[InstalledKind]:
    """The installed kinds in name order; only `names` when given.

    A kind the user asked for by name fails loudly when it cannot load or is invalid; an
    auto-discovered one is logged and skipped, so one broken plugin never stops the others.
    """
    if names is None:
        loaded, errors = load_all_kinds()
        for error in errors:
            _log.error("skipping a job kind that failed to load", error=str(error))
        return loaded
    wanted, entries = set(names), _entries()
    if unknown := wanted - entries.keys():
        raise KindLoadError(
            f"unknown job kind(s) {sorted(unknown)}; installed: {sorted(entries) or 'none'}"
        )
    kinds: list[InstalledKind] = []
    for name in _load_order(wanted):
        kinds.append(_load(entries[name], kinds))
    return sorted(kinds, key=lambda installed: installed.name)


def find_kind(text: str, kinds: Sequence[InstalledKind]) -> InstalledKind:
    """The kind `text` names, as `kubectl` names resources: its entry-point name, its kind,
    plural, `plural.group` or a short name, any case. The entry-point name wins, so
    `mpijob` is T9k's MPIJob and `kubeflow-mpijob` Kubeflow's; a name two kinds share is an
    error that lists them. KindLoadError when none matches."""
    wanted = text.lower()
    for installed in kinds:
        if installed.name == wanted:
            return installed
    found = [
        installed
        for installed in kinds
        if wanted
        in {
            installed.kind.resource.kind.lower(),
            installed.kind.resource.plural,
            f"{installed.kind.resource.plural}.{installed.kind.resource.group}",
            *(name.lower() for name in installed.kind.short_names),
        }
    ]
    if len(found) == 1:
        return found[0]
    names = sorted(installed.name for installed in (found or kinds))
    problem = "names more than one kind" if found else "is no installed kind"
    raise KindLoadError(f"{text!r} {problem}; say one of: {', '.join(names)}")
