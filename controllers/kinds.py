"""Find the installed job kinds: entry points in the `jobcore.jobkinds` group, by name."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from importlib.metadata import entry_points
from typing import Any

import structlog

from jobcore.jobs import JobKind

ENTRY_POINT_GROUP = "jobcore.jobkinds"
BUNDLED_KINDS = ("colossalaijob", "horovodjob", "kubeflow-mpijob", "mpijob")
"""The kinds this distribution brings (and the controller's image runs)."""
_log = structlog.get_logger("jobcore.kinds")


class KindLoadError(Exception):
    """A kind could not be loaded; names the entry point and its distribution."""


@dataclass(frozen=True, slots=True)
class InstalledKind:
    """A loaded kind and where it came from."""

    name: str
    kind: JobKind[Any]
    source: str


def _source(entry: EntryPoint) -> str:
    dist = entry.dist
    return f"{dist.name} {dist.version}" if dist is not None else entry.value


def _load(entry: EntryPoint) -> InstalledKind:
    try:
        factory = entry.load()
        kind = factory()
    except Exception as exc:
        raise KindLoadError(f"job kind {entry.name!r} ({_source(entry)}): {exc!r}") from exc
    return InstalledKind(entry.name, kind, _source(entry))


def kind_names(text: str | None) -> list[str] | None:
    """The names in a comma-separated `--kinds` value; None for none given."""
    return [name.strip() for name in text.split(",") if name.strip()] if text else None


def _entries() -> dict[str, EntryPoint]:
    return {entry.name: entry for entry in entry_points(group=ENTRY_POINT_GROUP)}


def load_all_kinds() -> tuple[list[InstalledKind], list[KindLoadError]]:
    """Every installed kind in name order, and why each one that failed to load failed."""
    kinds, errors, entries = [], [], _entries()
    for name in sorted(entries):
        try:
            kinds.append(_load(entries[name]))
        except KindLoadError as error:
            errors.append(error)
    return kinds, errors


def installed_kinds(names: Iterable[str] | None = None) -> list[InstalledKind]:
    """The installed kinds in name order; only `names` when given.

    A kind the user asked for by name fails loudly when it cannot load; an auto-discovered
    kind that cannot load is logged and skipped, so one broken plugin never stops the others.
    """
    if names is None:
        kinds, errors = load_all_kinds()
        for error in errors:
            _log.error("skipping a job kind that failed to load", error=str(error))
        return kinds
    wanted, entries = set(names), _entries()
    if unknown := wanted - entries.keys():
        raise KindLoadError(
            f"unknown job kind(s) {sorted(unknown)}; installed: {sorted(entries) or 'none'}"
        )
    return [_load(entries[name]) for name in sorted(wanted)]
