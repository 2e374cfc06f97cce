"""A kind checked before it runs: each problem named, the controller refusing it, the kit's check.

Without the check, a kind missing a member got a CRD and then failed every reconcile, an
invalid plural wrote a CRD the API server refuses, and a misspelt hook was silently no hook.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any
from typing import ClassVar

import pytest

from controllers.kinds import installed_kinds
from jobcore import Manager
from jobcore import Resource
from jobcore.jobs import T9K_STATUS
from jobcore.jobs import InvalidKindError
from jobcore.jobs import JobSpec
from jobcore.jobs import KindHooks
from jobcore.jobs import add_job_controller
from jobcore.jobs import check_kind
from jobcore.testing import ModelKind
from jobcore.testing import assert_valid_kind

RESOURCE = Resource("example.dev", "v1", "Demo", "demos")
KIND = ModelKind(RESOURCE, JobSpec, short_names=("dm",))


def problems_of(kind: object, **options: Any) -> list[str]:
    with pytest.raises(InvalidKindError) as raised:
        check_kind(kind, **options)
    assert type(kind).__qualname__ in raised.value.kind  # the message names the kind
    return raised.value.problems


def test_a_sound_kind_passes_and_so_does_every_bundled_one() -> None:
    check_kind(KIND)
    assert_valid_kind(KIND)
    for installed in installed_kinds():
        assert_valid_kind(installed.kind)


class Incomplete:
    """A kind that forgot most of the protocol and misspelt one member."""

    resource = RESOURCE
    short_names = ()
    spec_model = JobSpec
    replica_types = ("worker",)
    child_resource = ()  # misspelt
    validate = "not a method"


def test_missing_members_are_each_named_with_a_likely_misspelling() -> None:
    assert problems_of(Incomplete()) == [
        "missing child_resources (is child_resource a misspelling?)",
        "missing containers",
        "missing debug_commands",
        "missing kept_after_cleanup",
        "missing printer_columns",
        "missing replicas",
        "missing render",
        "missing interpret",
        "validate is not a method",
    ]


@pytest.mark.parametrize(
    ("resource", "problem"),
    [
        (
            Resource("example.dev", "v1", "Demo", "Demos"),
            "plural 'Demos' is not a lowercase DNS label",
        ),
        (Resource("example.dev", "v1", "Demo", "my_demos"), "plural 'my_demos' is not"),
        (Resource("example.dev", "v1", "Demo", "d" * 64), "is not a lowercase DNS label"),
        (Resource("example.dev", "v1", "De.mo", "demos"), "kind 'De.mo' is not a DNS label"),
        (Resource("example", "v1", "Demo", "demos"), "group 'example' is not a DNS domain"),
        (Resource("example.dev", "V1", "Demo", "demos"), "version 'V1' is not"),
        (Resource("example.dev", "v1", "Demo", "demos", namespaced=False), "cluster-scoped"),
    ],
)
def test_a_resource_the_api_server_would_refuse_as_a_crd(resource: Resource, problem: str) -> None:
    [found] = problems_of(dataclasses.replace(KIND, resource=resource))
    assert problem in found


def test_short_names_invalid_or_a_string() -> None:
    assert problems_of(dataclasses.replace(KIND, short_names=("d_m", "ok"))) == [
        "short name 'd_m' is not a lowercase DNS label"
    ]
    assert problems_of(dataclasses.replace(KIND, short_names="dm")) == [
        "short_names is the string 'dm', not a sequence of names"
    ]


def test_a_short_name_or_a_resource_another_loaded_kind_has_too() -> None:
    other = ModelKind(Resource("other.dev", "v1", "Other", "others"), JobSpec, short_names=("dm",))
    same = ModelKind(RESOURCE, JobSpec)
    where = "jobcore.testing._shared.kinds.ModelKind"
    assert problems_of(KIND, others=[other, same]) == [
        f"short name(s) ['dm'] taken by Other ({where})",
        f"demos.example.dev is Demo ({where})'s too",
    ]


@dataclass(frozen=True)
class OldStyle(ModelKind[JobSpec]):
    status_part: Any = T9K_STATUS  # a hook, but not declared in hooks


@dataclass(frozen=True)
class Misspelt(ModelKind[JobSpec]):
    hook: ClassVar[KindHooks] = KindHooks(controller_name="demo")
    controler_name: ClassVar[str] = "demo"


@dataclass(frozen=True)
class NotHooks(ModelKind[JobSpec]):
    hooks: ClassVar[Any] = {"controller_name": "demo"}


def test_an_attribute_that_looks_like_a_hook_is_refused() -> None:
    assert problems_of(OldStyle(RESOURCE, JobSpec)) == [
        "status_part is a hook: declare it as hooks = KindHooks(status_part=...)"
    ]
    assert problems_of(Misspelt(RESOURCE, JobSpec)) == [
        "unknown attribute controler_name: a misspelt controller_name?",
        "unknown attribute hook: a misspelt hooks?",
    ]
    assert problems_of(NotHooks(RESOURCE, JobSpec)) == ["hooks is a dict, not a KindHooks"]


@dataclass(frozen=True)
class WithHelper(ModelKind[JobSpec]):
    def worker_count(self) -> int:
        return 1


def test_the_kits_check_also_fails_on_any_other_public_attribute() -> None:
    check_kind(WithHelper(RESOURCE, JobSpec))  # the controller runs it
    with pytest.raises(AssertionError) as raised:
        assert_valid_kind(WithHelper(RESOURCE, JobSpec))
    assert str(raised.value) == (
        "Demo (tests.unit.jobs.test_kindcheck.WithHelper) is not a valid job kind:\n"
        "  - unknown public attribute worker_count: neither a JobKind member nor hooks "
        "(make it private: _worker_count)"
    )


def test_the_controller_refuses_an_invalid_kind_before_it_watches_anything() -> None:
    manager = Manager(None, metrics_address=None, health_address=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidKindError, match="missing render"):
        add_job_controller(manager, Incomplete())  # type: ignore[arg-type]
    bad_plural = dataclasses.replace(KIND, resource=Resource("example.dev", "v1", "Demo", "Demo"))
    with pytest.raises(InvalidKindError) as raised:
        add_job_controller(manager, bad_plural)
    assert str(raised.value) == (
        "Demo (jobcore.testing._shared.kinds.ModelKind) is not a valid job kind:\n"
        "  - plural 'Demo' is not a lowercase DNS label (a-z, 0-9 and '-', starting with a "
        "letter, at most 63 characters)"
    )
