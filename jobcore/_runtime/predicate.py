"""Predicates: filters that decide which cache events are worth a reconcile."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from jobcore._runtime.labels import parse_selector
from jobcore._runtime.resources import Object


class Predicate(Protocol):
    """Says whether an event should be enqueued; every predicate of a watch must agree."""

    def create(self, obj: Object) -> bool: ...

    def update(self, old: Object, new: Object) -> bool: ...

    def delete(self, obj: Object) -> bool: ...


def _always(*_: Object) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class FuncPredicate:
    """A predicate from plain functions; an event type without a function passes."""

    create_func: Callable[[Object], bool] = _always
    update_func: Callable[[Object, Object], bool] = _always
    delete_func: Callable[[Object], bool] = _always

    def create(self, obj: Object) -> bool:
        return self.create_func(obj)

    def update(self, old: Object, new: Object) -> bool:
        return self.update_func(old, new)

    def delete(self, obj: Object) -> bool:
        return self.delete_func(obj)


class GenerationChanged:
    """Passes updates only when `metadata.generation` changed, i.e. the spec, not the status."""

    def create(self, obj: Object) -> bool:
        return True

    def update(self, old: Object, new: Object) -> bool:
        changed: bool = old["metadata"].get("generation") != new["metadata"].get("generation")
        return changed

    def delete(self, obj: Object) -> bool:
        return True


class LabelSelectorPredicate:
    """Passes events of objects whose labels match a selector such as `app=x,tier!=db`."""

    def __init__(self, selector: str) -> None:
        self._matches = parse_selector(selector)

    def _test(self, obj: Object) -> bool:
        return self._matches(obj["metadata"].get("labels") or {})

    def create(self, obj: Object) -> bool:
        return self._test(obj)

    def update(self, old: Object, new: Object) -> bool:
        return self._test(new)

    def delete(self, obj: Object) -> bool:
        return self._test(obj)
