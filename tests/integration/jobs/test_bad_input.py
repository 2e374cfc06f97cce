"""Bad input against the real API server: malformed jobs stream in while valid ones keep running.

A few hundred jobs of every bundled kind, drawn by hypothesis from mutated samples (fields
dropped, wrong types, huge and negative numbers, unicode, 253-character names, names that make
worker hostnames too long, extra fields, deep nesting) plus a fixed list of edge cases, are
created through the API with the controllers of all three kinds running. Each one is refused by
the CRD schema (the client raises `InvalidError`), or is accepted and then marked Failed with
reason InvalidSpec naming the field that `jobcore.parse_job` names for the stored object, or is
valid and gets a status like any job. Canary jobs created before, during and after the stream
succeed, no reconcile fails, the manager keeps running, no job marked invalid gets a pod, and
no more pods exist than the valid jobs run.

Mutations stay within the fields jobcore types and checks: what a Pod template passes through to
the API server (resources, volumes, probes...) is the API server's to judge when the pods are
created, which `test_a_pod_the_api_server_refuses_fails_the_job` covers.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from jobcore import PODS
from jobcore import REGISTRY
from jobcore import ApiError
from jobcore import Client
from jobcore import InvalidError
from jobcore import Manager
from jobcore import NotFoundError
from jobcore import Object
from jobcore import owner_reference
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import JobKind
from jobcore.jobs import add_job_controller
from jobcore.jobs import crd_for
from jobcore.jobs import parse_job
from jobcore.testing import background
from jobcore.testing import condition
from jobcore.testing import create_until_phase
from jobcore.testing import install_crd
from jobcore.testing import job_controller
from jobcore.testing import wait_for_phase
from tests.support.draws import fixed_draws
from tests.support.jobdocs import KINDS
from tests.support.jobdocs import FieldPath
from tests.support.jobdocs import at
from tests.support.jobdocs import nested
from tests.support.jobdocs import paths
from tests.support.jobdocs import sample_jobs

pytestmark = pytest.mark.integration

GENERATED = 500
"""Hypothesis-drawn jobs in the stream, next to the fixed `edge_cases` of every kind."""
SETTLE_SECONDS = 45.0
"""How long every accepted job has to get the status it should have."""


SAMPLES = sample_jobs()
CANARIES = [
    s
    for s in SAMPLES
    if s["metadata"]["name"] in ("mpi-env", "horovod-static", "colossalai-example")
]
"""One plain sample of each kind: they succeed on the simulated node."""

# Generation -----------------------------------------------------------------------------

NUMBERS = st.sampled_from([-1, 0, 1, 2, 3, 1001, 10**9, 2**31, 2**63 - 1, 2**63, 10**30])
"""Huge and negative numbers, and small ones: no valid count here makes more than 3 workers."""
TEXT = st.one_of(
    st.text(max_size=8),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8),
    st.sampled_from(["", " ", "-", "/", "/a b", "a:b", "A", "a.b", "²", "日本", "a" * 64]),
)
SCALARS = st.one_of(
    st.none(), st.booleans(), NUMBERS, st.floats(allow_nan=False, allow_infinity=False), TEXT
)


VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.dictionaries(TEXT, SCALARS, max_size=3),
    st.sampled_from([20, 150]).map(lambda depth: nested(depth, "deep")),
)
NAMES = st.one_of(
    st.from_regex(r"[a-z][-a-z0-9]{0,20}[a-z0-9]", fullmatch=True),
    st.sampled_from([253, 120, 63, 56, 55, 54, 50]).map(lambda n: "a" * n),
    st.sampled_from(["Upper", "a.b", "1abc", "abc-", "a_b", "日本", "é" * 10]),
)
# Inside a Pod template only the container list, a container and its name are jobcore's: the
# rest passes through to the pods, for the API server to judge when they are created.
PASS_THROUGH = re.compile(
    r"\.template\.spec\.(?!containers(\.\d+(\.name)?)?$)"
    r"|\.template\.(?!spec$|spec\.|metadata$|metadata\.labels)"
    r"|^spec\.launcher\."
)


def dotted(path: FieldPath) -> str:
    return ".".join(str(part) for part in path)


def passes_through(path: FieldPath) -> bool:
    return bool(PASS_THROUGH.search(dotted(path)))


@st.composite
def mutated(draw: st.DrawFn, obj: Object) -> Object:
    """`obj` with one change at a drawn place of its spec."""
    path = draw(st.sampled_from(list(paths(obj["spec"], ("spec",), skip=passes_through))))
    parent, target = at(obj, path[:-1]), at(obj, path)
    ops = ["replace", "drop"] if path[1:] else ["replace"]
    if isinstance(target, dict):
        ops += ["insert", *(["labels"] if path[-1] == "template" else [])]
    if isinstance(target, list) and target:
        ops.append("duplicate")
    if isinstance(target, int) and not isinstance(target, bool):
        ops += ["number", "number"]
    if isinstance(target, str):
        ops += ["text", "text"]
    op = draw(st.sampled_from(ops))
    if op == "drop":
        del parent[path[-1]]
    elif op in ("replace", "number", "text"):
        pick = {"replace": VALUES, "number": NUMBERS, "text": TEXT | NAMES}[op]
        parent[path[-1]] = draw(pick)
    elif op == "insert":
        key = draw(TEXT)
        if not PASS_THROUGH.search(dotted((*path, key))):
            target[key] = draw(VALUES)
    elif op == "labels":
        labels = draw(st.dictionaries(TEXT | NAMES, TEXT | NAMES, min_size=1, max_size=2))
        target.setdefault("metadata", {})["labels"] = labels
    elif op == "duplicate":
        target.append(copy.deepcopy(draw(st.sampled_from(target))))
    return obj


@st.composite
def malformed_jobs(draw: st.DrawFn) -> Object:
    obj = copy.deepcopy(draw(st.sampled_from(SAMPLES)))
    obj["metadata"] = {"name": draw(NAMES) if draw(st.integers(0, 3)) == 0 else ""}
    for _ in range(draw(st.integers(1, 3))):
        obj = draw(mutated(obj))
    return obj


def edge_cases(sample: Object) -> list[Object]:
    """What the issue names, on one sample of each kind: each job is a copy with one change.

    Names start with the kind's initial: jobs of two kinds with one name would want the same
    children (`test_two_kinds_of_job_with_one_name_both_get_a_status`).
    """
    initial = sample["kind"][0].lower()

    def case(name: str, change: Any = None) -> Object:
        obj = copy.deepcopy(sample)
        obj["metadata"] = {"name": name if name[0] == initial else f"{initial}-{name}"}
        if change is not None:
            change(obj["spec"])
        return obj

    def worker(**fields: Any) -> Any:
        return lambda spec: spec["worker"].update(fields)

    def template_labels(labels: dict[str, str]) -> Any:
        return lambda spec: (
            spec["worker"]["template"].setdefault("metadata", {}).update(labels=labels)
        )

    return [
        case(initial * 253),  # the API's limit: accepted, too long for worker hostnames
        case(initial * 254),  # refused by the API server
        case(initial * 63),  # a valid label, but its workers' hostnames are too long
        case("job.with.dots"),  # a valid object name, not a Service name
        case("日本語"),
        case("billion", worker(replicas=10**9)),
        case("just-over", worker(replicas=1001)),
        case("negative", worker(replicas=-1)),
        case("zero", worker(replicas=0)),
        case("beyond-int64", worker(replicas=2**64)),
        case("string-count", worker(replicas="3")),
        case("float-count", worker(replicas=2.5)),
        case("null-count", worker(replicas=None)),  # pruned: the default applies
        case("unicode-label", template_labels({"team": "é"})),
        case("unicode-label-key", template_labels({"é": "team"})),
        case("no-worker", lambda spec: spec.pop("worker")),
        case("worker-list", worker(template=[])),
        case(
            "deep",
            worker(template={**sample["spec"]["worker"]["template"], "x": nested(150, "deep")}),
        ),
        case("extra-fields", lambda spec: spec.update(unknown={"a": 1}, moreUnknown=[1])),
        case(
            "unicode-queue",
            lambda spec: spec.update(scheduler={"t9kScheduler": {"queue": "队列"}}),
        ),
        case(
            "huge-deadline",
            lambda spec: spec.update(runPolicy={"activeDeadlineSeconds": 2**63 - 1}),
        ),
    ]


# Running the stream ---------------------------------------------------------------------


@dataclass
class Tally:
    """What became of the stream's jobs, by outcome, with the expectation for each accepted one."""

    refused: int = 0
    invalid: dict[tuple[str, str], str] = field(default_factory=dict)
    """(kind, name) -> the first field parse_job names for the stored job."""
    valid: set[tuple[str, str]] = field(default_factory=set)
    ttl: set[tuple[str, str]] = field(default_factory=set)
    """Valid jobs the controller may delete once they end (runPolicy.ttlSecondsAfterFinished)."""
    pods: int = 0
    """How many pods the valid jobs run at full strength."""


async def create_all(client: Client, namespace: str, jobs: list[Object], tally: Tally) -> None:
    """Create the jobs, ten at a time; sort them into refused, invalid and valid."""

    async def create(obj: Object) -> None:
        kind = KINDS[obj["kind"]]
        obj["metadata"]["namespace"] = namespace
        try:
            stored = await client.create(kind.resource, obj)
        except InvalidError as exc:
            assert exc.status == 422
            tally.refused += 1
            return
        except ApiError as exc:
            # A number beyond float64 cannot even be decoded: 400, before any schema.
            assert exc.status == 400 and "cannot be handled" in exc.message, exc
            tally.refused += 1
            return
        key = (obj["kind"], stored["metadata"]["name"])
        job, errors = parse_job(kind, stored)
        if job is None:
            tally.invalid[key] = errors[0].path
        else:
            tally.valid.add(key)
            tally.pods += sum(kind.replicas(job).values())
            if job.spec.run_policy.ttl_seconds_after_finished is not None:
                tally.ttl.add(key)

    for start in range(0, len(jobs), 10):
        await asyncio.gather(*(create(obj) for obj in jobs[start : start + 10]))


def named(jobs: list[Object]) -> list[Object]:
    """The jobs with a name each (drawn or numbered), dropping those whose name is taken."""
    seen: set[str] = set()
    unique = []
    for index, obj in enumerate(jobs):
        name = obj["metadata"]["name"] = obj["metadata"]["name"] or f"generated-{index}"
        if name not in seen:
            seen.add(name)
            unique.append(obj)
    return unique


def problem(status: dict[str, Any], expected_path: str | None) -> str | None:
    """What is still wrong with the `status` of a job expected to be invalid at `expected_path`
    (or valid, for None); None once nothing is."""
    failed: dict[str, Any] = next(
        (c for c in status.get("conditions") or () if c["type"] == "Failed"), {}
    )
    invalid = failed.get("reason") == "InvalidSpec" and failed.get("status") == "True"
    if expected_path is None:
        if invalid:
            return f"valid, but marked invalid: {failed.get('message')}"
        return None if status.get("phase") else "no status yet"
    if status.get("phase") != "Failed" or not invalid:
        return f"expected Failed/InvalidSpec naming {expected_path}, got {status.get('phase')}"
    message = str(failed.get("message"))
    if not message.startswith("Invalid spec: ") or expected_path not in message:
        return f"message does not name {expected_path}: {message}"
    return None


async def settle(client: Client, namespace: str, tally: Tally, *, timeout: float) -> None:
    """Wait until every accepted job has the status it should; fail naming those that do not."""
    deadline = time.monotonic() + timeout
    while True:
        problems: dict[tuple[str, str], str] = {}
        for kind_name, kind in KINDS.items():
            items = (await client.list(kind.resource, namespace))["items"]
            stored = {o["metadata"]["name"]: o for o in items}
            for key in [*tally.invalid, *tally.valid]:
                if key[0] != kind_name:
                    continue
                obj = stored.get(key[1])
                if obj is None:
                    if key not in tally.ttl:
                        problems[key] = "deleted"
                    continue
                found = problem(obj.get("status") or {}, tally.invalid.get(key))
                if found:
                    problems[key] = found
        if not problems:
            return
        if time.monotonic() > deadline:
            shown = "\n".join(f"{k[0]}/{k[1][:70]}: {v}" for k, v in sorted(problems.items())[:20])
            pytest.fail(f"{len(problems)} jobs did not settle:\n{shown}")
        await asyncio.sleep(0.5)


def reconcile_errors() -> float:
    return sum(
        REGISTRY.get_sample_value(
            "controller_runtime_reconcile_errors_total", {"controller": kind.resource.plural}
        )
        or 0.0
        for kind in KINDS.values()
    )


@pytest.fixture
async def manager(client: Client, namespace: str) -> AsyncIterator[asyncio.Task[None]]:
    """The controllers of all three kinds in one manager, scoped to the test's namespace.

    The test's jobs and pods are deleted afterwards: a namespace only goes once a controller
    manager runs, and other tests (test_deploy) run controllers over all namespaces.
    """
    for kind in KINDS.values():
        await install_crd(client, crd_for(kind))
    manager = Manager(client, metrics_address=None, health_address=None)
    for kind in KINDS.values():
        add_job_controller(manager, kind, namespace=namespace)
    try:
        async with background(manager.run()) as task:
            yield task
    finally:
        await delete_jobs_and_pods(client, namespace)


async def delete_jobs_and_pods(client: Client, namespace: str) -> None:
    """Leave no job to other tests' controllers over all namespaces (this one is terminating)."""
    for resource in [kind.resource for kind in KINDS.values()] + [PODS]:
        with contextlib.suppress(NotFoundError):  # a kind whose CRD this run never installed
            await client.request(
                "DELETE", resource.path(namespace), query={"gracePeriodSeconds": 0}
            )


def pods_of(sample: Object) -> int:
    kind = KINDS[sample["kind"]]
    job, errors = parse_job(kind, sample)
    assert job is not None, errors
    return sum(kind.replicas(job).values())


async def canaries(client: Client, namespace: str, tag: str) -> list[tuple[JobKind[Any], str]]:
    created = []
    for sample in CANARIES:
        obj = copy.deepcopy(sample)
        obj["metadata"] = {"name": f"canary-{tag}-{sample['kind'].lower()}", "namespace": namespace}
        kind = KINDS[obj["kind"]]
        await client.create(kind.resource, obj)
        created.append((kind, obj["metadata"]["name"]))
    return created


async def succeeded(client: Client, namespace: str, jobs: list[tuple[JobKind[Any], str]]) -> None:
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        phases = {
            name: ((await client.get(kind.resource, name, namespace)).get("status") or {}).get(
                "phase"
            )
            for kind, name in jobs
        }
        if all(phase == "Succeeded" for phase in phases.values()):
            return
        assert time.monotonic() < deadline, f"canaries did not succeed: {phases}"
        await asyncio.sleep(0.5)


@pytest.mark.usefixtures("launchers_succeed")
async def test_malformed_jobs_are_refused_or_failed_while_valid_jobs_keep_running(
    client: Client, namespace: str, manager: asyncio.Task[None]
) -> None:
    assert len(CANARIES) == len(KINDS)
    jobs = named(
        [
            *(job for sample in CANARIES for job in edge_cases(sample)),
            *fixed_draws(malformed_jobs(), GENERATED),
        ]
    )
    errors_before = reconcile_errors()
    tally = Tally()

    before = await canaries(client, namespace, "before")
    await create_all(client, namespace, jobs[: len(jobs) // 2], tally)
    during = await canaries(client, namespace, "during")
    await create_all(client, namespace, jobs[len(jobs) // 2 :], tally)
    after = await canaries(client, namespace, "after")

    await succeeded(client, namespace, before + during + after)
    await settle(client, namespace, tally, timeout=SETTLE_SECONDS)
    assert not manager.done(), "the manager stopped"
    assert reconcile_errors() == errors_before, "a reconcile failed"
    # The stream holds every outcome, and no refused or invalid job got a pod.
    counts = (tally.refused, len(tally.invalid), len(tally.valid))
    assert min(counts) >= 20 and sum(counts) >= 250, f"refused, invalid, valid: {counts}"
    pods = (await client.list(PODS, namespace))["items"]
    owners = {p["metadata"]["labels"].get(JOB_NAME_LABEL) for p in pods}
    assert not owners & {name for _, name in tally.invalid}
    assert len(pods) <= tally.pods + 3 * sum(map(pods_of, CANARIES))


# Children the API server will not take ----------------------------------------------------


async def test_a_pod_the_api_server_refuses_fails_the_job(
    client: Client, namespace: str, manager: asyncio.Task[None]
) -> None:
    obj = copy.deepcopy(CANARIES[0])
    obj["metadata"] = {"name": "bad-resources", "namespace": namespace}
    container = obj["spec"]["worker"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"cpu": "lots"}}
    kind = KINDS[obj["kind"]]
    # Not Failed in time: the controller keeps retrying the pod's creation.
    status = await create_until_phase(client, kind.resource, obj, "Failed", timeout=8)
    failed = condition(status, "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert "the API server refused Pod" in failed["message"], failed


async def test_a_pod_too_large_to_be_the_controllers_under_a_workers_name_fails_the_job(
    client: Client, namespace: str, manager: asyncio.Task[None]
) -> None:
    """The tenant's own pod of 1.2 MB, owned by its paused job and named as its worker, is
    cached as its metadata only; on resuming, the job says which pod to delete."""
    obj = copy.deepcopy(CANARIES[0])
    obj["metadata"] = {"name": "bulky", "namespace": namespace}
    obj["spec"]["runMode"] = {"pause": {"enabled": True}}
    kind = KINDS[obj["kind"]]
    job = await client.create(kind.resource, obj)
    env = [{"name": f"V{i}", "value": "x" * 4000} for i in range(300)]
    await client.create(
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "bulky-worker-0",
                "labels": {JOB_NAME_LABEL: "bulky"},
                "ownerReferences": [owner_reference(job)],
            },
            "spec": {"containers": [{"name": "c", "image": "i", "env": env}]},
        },
        namespace,
    )
    await client.patch(kind.resource, "bulky", {"spec": {"runMode": {"pause": None}}}, namespace)
    status = await wait_for_phase(client, kind.resource, namespace, "bulky", "Failed", timeout=10)
    failed = condition(status, "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert "Pod bulky-worker-0 exists and is 1,2" in failed["message"], failed
    assert "more than any the controller makes (327,680)" in failed["message"], failed


async def kubectl(*args: str, stdin: str = "") -> int:
    process = await asyncio.create_subprocess_exec(
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    await process.communicate(stdin.encode())
    return await process.wait()


@pytest.mark.usefixtures("launchers_succeed")
async def test_a_job_nested_deeper_than_python_recurses_does_not_stop_the_controller(
    client: Client, namespace: str, kubeconfig_path: str
) -> None:
    binary = Path(os.environ.get("KUBEBUILDER_ASSETS", "")) / "kubectl"
    if not binary.exists():
        pytest.skip("needs kubectl from KUBEBUILDER_ASSETS")
    sample = CANARIES[0]
    kind = KINDS[sample["kind"]]
    await install_crd(client, crd_for(kind))
    deep = copy.deepcopy(sample)
    deep["metadata"] = {"name": "too-deep", "namespace": namespace}
    deep["spec"]["worker"]["template"]["spec"]["x"] = "DEEP"
    text = json.dumps(deep).replace('"DEEP"', "[" * 1500 + "]" * 1500)
    base = [str(binary), "--kubeconfig", kubeconfig_path, "-n", namespace]
    assert await kubectl(*base, "create", "-f", "-", stdin=text) == 0
    try:
        async with job_controller(client, kind, namespace=namespace):
            canary = copy.deepcopy(sample)
            canary["metadata"] = {"name": "canary", "namespace": namespace}
            await client.create(kind.resource, canary)
            with contextlib.suppress(asyncio.TimeoutError):
                async with asyncio.timeout(10):
                    while True:
                        with contextlib.suppress(NotFoundError):
                            got = await client.get(kind.resource, "canary", namespace)
                            if (got.get("status") or {}).get("phase") == "Succeeded":
                                return
                        await asyncio.sleep(0.5)
            pytest.fail("the canary never succeeded next to a deeply nested job")
    finally:
        # Out of the way of other tests' controllers over all namespaces.
        await kubectl(*base, "delete", kind.resource.plural, "too-deep")
        await delete_jobs_and_pods(client, namespace)


@pytest.mark.usefixtures("launchers_succeed")
async def test_two_kinds_of_job_with_one_name_both_get_a_status(
    client: Client, namespace: str, manager: asyncio.Task[None]
) -> None:
    for sample in CANARIES[:2]:
        obj = copy.deepcopy(sample)
        obj["metadata"] = {"name": "same-name", "namespace": namespace}
        await client.create(KINDS[obj["kind"]].resource, obj)
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        phases = [
            (
                (await client.get(KINDS[s["kind"]].resource, "same-name", namespace)).get("status")
                or {}
            ).get("phase")
            for s in CANARIES[:2]
        ]
        if all(phases):
            break
        await asyncio.sleep(0.5)
    else:
        pytest.fail(f"phases after 8 s: {phases}")
    statuses = [
        (await client.get(KINDS[s["kind"]].resource, "same-name", namespace)).get("status") or {}
        for s in CANARIES[:2]
    ]
    refused = [
        c["message"]
        for status in statuses
        for c in status["conditions"]
        if c["type"] == "Failed" and c["status"] == "True"
    ]
    # Created together, each may take some of the names first; a loser is told why.
    assert refused, statuses
    assert all("already exists and belongs to" in message for message in refused), refused
