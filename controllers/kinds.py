"""Find the installed job kinds: entry points in the `jobcore.jobkinds` group, by name."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import structlog

from jobcore import JobKind

ENTRY_POINT_GROUP = "jobcore.jobkinds"
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


def installed_kinds(names: Iterable[str] | None = None) -> list[InstalledKind]:
    """The installed kinds in name order; only `names` when given.

    A kind the user asked for by name fails loudly when it cannot load; an auto-discovered
    kind that cannot load is logged and skipped, so one broken plugin never stops the others.
    """
    wanted = set(names) if names is not None else None
    entries = {entry.name: entry for entry in entry_points(group=ENTRY_POINT_GROUP)}
    if wanted is not None and (unknown := wanted - entries.keys()):
        raise KindLoadError(
            f"unknown job kind(s) {sorted(unknown)}; installed: {sorted(entries) or 'none'}"
        )
    kinds = []
    for name in sorted(entries):
        if wanted is not None and name not in wanted:
            continue
        try:
            kinds.append(_load(entries[name]))
        except KindLoadError as error:
            if wanted is not None:
                raise
            _log.error("skipping a job kind that failed to load", error=str(error))
    return kinds
