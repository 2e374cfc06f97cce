"""Bad input, property-based: mutated samples never crash parse_job, and plans stay valid objects.

Every bundled kind's samples (manifests/samples) are mutated by hypothesis: fields dropped,
replaced by values of the wrong type, huge or negative numbers, unicode and over-long strings,
nulls, extra fields, deep nesting, duplicated list entries, odd names and labels. For each,
`jobcore.parse_job` returns a job or field errors under `spec`/`metadata` and never raises; a
job it accepts plans (`plan`, with and without a gang scheduler) into a bounded number
of objects whose names, labels and hostnames the API server would accept. A spec that looks
valid to parse_job but renders an invalid object is a validation gap of its kind.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import event
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from jobcore import PODS
from jobcore import Object
from jobcore._jobs.plan import gang_scheduling
from jobcore._jobs.plan import plan
from jobcore._jobs.plan import pod_group
from jobcore.jobs import Job
from jobcore.jobs import JobKind
from jobcore.jobs import Observed
from jobcore.jobs import T9kScheduler
from jobcore.jobs import parse_job
from tests.support.jobdocs import FieldPath
from tests.support.jobdocs import at
from tests.support.jobdocs import kind_of
from tests.support.jobdocs import nested
from tests.support.jobdocs import paths
from tests.support.jobdocs import sample_jobs

MAX_PODS = 1001
"""A job renders at most this many pods: 1,000 workers and a launcher."""
EXAMPLES = 2500
"""Per test below; the file runs in well under a minute."""
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _samples() -> list[Object]:
    """The samples as the API server stores them: in a namespace, with a uid."""
    samples = sample_jobs(kubeflow=True)
    for doc in samples:
        doc["metadata"].update(namespace="team", uid="0d1e2f3a-job")
    return samples


SAMPLES = _samples()

# What the API server accepts ----------------------------------------------------------------

DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1123_SUBDOMAIN = re.compile(rf"{DNS1123_LABEL.pattern}(\.{DNS1123_LABEL.pattern})*")
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def label(value: str) -> bool:
    return len(value) <= 63 and DNS1123_LABEL.fullmatch(value) is not None


def subdomain(value: str) -> bool:
    return len(value) <= 253 and DNS1123_SUBDOMAIN.fullmatch(value) is not None


def qualified_name(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and not subdomain(prefix):
        return False
    return len(name) <= 63 and QUALIFIED_NAME.fullmatch(name) is not None


def object_problems(obj: Object, namespace: str) -> list[str]:
    """What the API server would refuse in `obj`'s names, labels and (for a Pod) hostname."""
    meta, kind = obj["metadata"], obj["kind"]
    name = meta.get("name")
    problems = []
    valid_name = (
        isinstance(name, str) and len(name) <= 63 and DNS1035_LABEL.fullmatch(name) is not None
        if kind == "Service"
        else isinstance(name, str) and subdomain(name)
    )
    if not valid_name:
        problems.append(f"{kind} name {name!r}")
    if meta.get("namespace") != namespace:
        problems.append(f"{kind} {name}: namespace {meta.get('namespace')!r}")
    for key, value in (meta.get("labels") or {}).items():
        if not (isinstance(key, str) and qualified_name(key)):
            problems.append(f"{kind} {name}: label key {key!r}")
        if not (isinstance(value, str) and len(value) <= 63 and LABEL_VALUE.fullmatch(value)):
            problems.append(f"{kind} {name}: label {key}={value!r}")
    for key in meta.get("annotations") or {}:
        if not (isinstance(key, str) and qualified_name(key)):
            problems.append(f"{kind} {name}: annotation key {key!r}")
    if kind == "Pod":
        spec = obj["spec"]
        for field in ("hostname", "subdomain"):
            if field in spec and not label(spec[field]):
                problems.append(f"Pod {name}: {field} {spec[field]!r}")
        names = [c.get("name") for c in spec.get("containers") or ()]
        if len(names) != len(set(map(str, names))):
            problems.append(f"Pod {name}: duplicate container names {names}")
    return problems


# Mutations ------------------------------------------------------------------------------


NUMBERS = st.sampled_from(
    [0, -1, -(2**31), -(2**63), 1, 2, 63, 64, 1000, 1001, 10**9, 2**31, 2**63 - 1, 2**63, 10**30]
)
LONG_TEXT = st.sampled_from(
    ["a" * 63, "a" * 64, "a" * 253, "a" * 254, "é" * 40, "a-" * 60 + "a", "x" * 5000]
)
ODD_TEXT = st.one_of(
    st.text(max_size=12),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
    LONG_TEXT,
    st.sampled_from(["", " ", "-", "--", "/", "a/b", "A", "a.b", "a b", "\x00", "²", "१२"]),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    NUMBERS,
    st.integers(),
    st.floats(),
    ODD_TEXT,
)


VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=4),
    st.dictionaries(ODD_TEXT, SCALARS, max_size=4),
    st.builds(nested, st.integers(1, 200), SCALARS),
)
NAMES = st.one_of(
    st.from_regex(r"[a-z]([-a-z0-9]{0,70}[a-z0-9])?", fullmatch=True),
    st.integers(1, 260).map(lambda n: "a" * n),
    st.integers(40, 70).map(lambda n: "j" * n),
    ODD_TEXT,
    st.sampled_from(["a.b", "Upper", "1abc", "abc-", "a_b"]),
)
KEYS = st.one_of(
    ODD_TEXT,
    st.sampled_from(
        ["example.com/team", "app", "a" * 64, "a" * 254 + "/b", "-a", "jobcore.dev/job-name"]
    ),
)


def put(doc: Any, path: FieldPath, value: Any) -> Any:
    if not path:
        return value
    at(doc, path[:-1])[path[-1]] = value
    return doc


GRAFTS = sorted(
    {
        (path[-1], repr(at(sample, path))): (path[-1], at(sample, path))
        for sample in SAMPLES
        for path in paths(sample["spec"], ("spec",))
        if path[1:] and isinstance(path[-1], str)
    }.values(),
    key=repr,
)
"""Every field of every sample's spec, to graft anywhere: one kind's fields into another's."""


@st.composite
def mutation(draw: st.DrawFn, doc: Any) -> Any:
    """`doc` (changed in place, or replaced) with one mutation at a drawn place in its spec.

    The API server fills in apiVersion, kind and the rest of metadata; names come from NAMES.
    """
    if "spec" not in doc:
        doc["spec"] = draw(VALUES)
        return doc
    path = draw(st.sampled_from(list(paths(doc["spec"], ("spec",)))))
    target = at(doc, path)
    choices = ["replace", "drop"]
    if isinstance(target, dict):
        choices += ["insert", "graft", *(["labels"] if "spec" in target else [])]
    if isinstance(target, list) and target:
        choices.append("duplicate")
    if isinstance(target, bool):
        choices.append("flip")
    elif isinstance(target, int):
        choices.append("number")
    if isinstance(target, str):
        choices.append("text")
    op = draw(st.sampled_from(choices))
    if op == "drop":
        del at(doc, path[:-1])[path[-1]]
    elif op == "replace":
        doc = put(doc, path, draw(VALUES))
    elif op == "insert":
        target[draw(KEYS)] = draw(VALUES)
    elif op == "labels":  # on a pod template
        meta = target.setdefault("metadata", {})
        if isinstance(meta, dict):
            field = draw(st.sampled_from(["labels", "annotations"]))
            meta[field] = draw(st.dictionaries(KEYS, ODD_TEXT | NAMES, min_size=1, max_size=3))
    elif op == "graft":
        field, value = draw(st.sampled_from(GRAFTS))
        target[field] = copy.deepcopy(value)
    elif op == "duplicate":
        target.append(copy.deepcopy(draw(st.sampled_from(target))))
    elif op == "flip":
        doc = put(doc, path, not target)
    elif op == "number":
        doc = put(doc, path, draw(NUMBERS | st.integers()))
    elif op == "text":
        doc = put(doc, path, draw(ODD_TEXT | NAMES))
    return doc


@st.composite
def mutated_jobs(draw: st.DrawFn) -> tuple[JobKind[Any], Object]:
    """A sample of one bundled kind with one to four mutations, and perhaps an odd name."""
    obj = copy.deepcopy(draw(st.sampled_from(SAMPLES)))
    kind = kind_of(obj)
    if draw(st.integers(0, 3)) == 0:
        obj["metadata"]["name"] = draw(NAMES)
    for _ in range(draw(st.integers(1, 4))):
        obj = draw(mutation(obj))
    return kind, obj


@st.composite
def edge_case_jobs(draw: st.DrawFn) -> tuple[JobKind[Any], Object]:
    """A sample with up to two well-typed edge values where the kinds read numbers and strings,
    and perhaps an odd name."""
    obj = copy.deepcopy(draw(st.sampled_from(SAMPLES)))
    kind = kind_of(obj)
    obj["metadata"]["name"] = draw(st.just(obj["metadata"]["name"]) | NAMES)
    leaves = [p for p in paths(obj["spec"], ("spec",)) if isinstance(at(obj, p), int | str)]
    for path in draw(st.lists(st.sampled_from(leaves), max_size=2)):
        value = at(obj, path)
        edge = NUMBERS if isinstance(value, int) and not isinstance(value, bool) else ODD_TEXT
        put(obj, path, draw(edge))
    return kind, obj


# Properties -----------------------------------------------------------------------------


def check(kind: JobKind[Any], obj: Object) -> bool:
    """parse_job answers; an accepted job plans into a bounded set of valid objects.

    True when the job was accepted.
    """
    job, errors = parse_job(kind, obj)
    if job is None:
        assert errors, "no job and no reason"
        for error in errors:
            assert error.path.split(".")[0].split("[")[0] in ("spec", "metadata"), error
            assert error.message.strip(), error
        return False
    assert errors == []
    pods = sum(kind.replicas(job).values())
    assert 1 <= pods <= MAX_PODS, f"{pods} pods would be created"
    kind.interpret(job, Observed({}))
    problems = []
    for planned in _plans(kind, job):
        assert len([o for o in planned if o["kind"] == PODS.kind]) <= pods
        names = [(o["kind"], o["metadata"]["name"]) for o in planned]
        assert len(names) == len(set(names)), f"duplicate children: {names}"
        for child in planned:
            problems += object_problems(child, job.namespace)
    assert not problems, f"{obj['metadata']['name']!r} passes validation but renders {problems}"
    return True


def _plans(kind: JobKind[Any], job: Job[Any]) -> Iterator[list[Object]]:
    """Without a gang (no launcher yet), under T9k Scheduler (every pod), and resumed."""
    yield plan(kind, job, Observed({}))
    gang, scheduler = gang_scheduling(job, T9kScheduler(queue="default"))
    if scheduler is not None:
        children = plan(kind, gang, Observed({}), scheduler=scheduler)
        yield [*children, pod_group(kind, gang, scheduler, children)]
    mode = job.policy.run_mode
    if mode is not None and mode.pause is not None:
        running = mode.model_copy(
            update={"pause": mode.pause.model_copy(update={"enabled": False})}
        )
        policy = dataclasses.replace(job.policy, run_mode=running)
        resumed = dataclasses.replace(job, policy=policy, gang=True)
        yield plan(kind, resumed, Observed({}), resume_specs=mode.pause.resume_specs or [])


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s["metadata"]["name"])
def test_every_sample_parses_and_plans_valid_objects(sample: Object) -> None:
    assert check(kind_of(sample), copy.deepcopy(sample))


@pytest.mark.parametrize("jobs", [mutated_jobs(), edge_case_jobs()], ids=["mutated", "edge-values"])
@SETTINGS
@given(data=st.data())
def test_odd_jobs_are_refused_by_field_or_plan_valid_objects(
    jobs: st.SearchStrategy[tuple[JobKind[Any], Object]], data: st.DataObject
) -> None:
    """Mutated samples, and samples with edge values where the kinds read numbers and text."""
    event("accepted" if check(*data.draw(jobs)) else "refused")


# What the properties found, one example each -------------------------------------------


def sample(name: str) -> Object:
    return copy.deepcopy(next(s for s in SAMPLES if s["metadata"]["name"] == name))


def errors_of(obj: Object) -> list[str]:
    job, errors = parse_job(kind_of(obj), obj)
    assert job is None
    return [str(error) for error in errors]


@pytest.mark.parametrize("name", ["mpi-env", "horovod-static", "colossalai-example"])
def test_a_worker_count_beyond_the_limit_is_refused_before_any_pod_is_planned(name: str) -> None:
    obj = sample(name)
    obj["spec"]["worker"]["replicas"] = 10**9
    assert errors_of(obj) == ["spec.worker.replicas: Input should be less than or equal to 1000"]


def test_elastic_bounds_and_current_shape_replicas_have_the_same_limit() -> None:
    elastic = sample("horovod-elastic")
    elastic["spec"]["elastic"]["maxReplicas"] = 1001
    assert errors_of(elastic) == [
        "spec.elastic.maxReplicas: Input should be less than or equal to 1000"
    ]
    current = sample("mpi-current-shape")
    current["spec"]["replicaSpecs"][1]["replicas"] = 1001
    assert errors_of(current) == [
        "spec.worker.replicas: Input should be less than or equal to 1000"
    ]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("replicaSpecs", 5, "spec.replicaSpecs: must be a list"),
        ("replicaSpecs", ["worker"], "spec.replicaSpecs[0]: must be an object"),
        ("replicaSpecs", [{"type": ["worker"]}], "spec.replicaSpecs[0].type: must be one of"),
        ("replicaSpecs", [{"type": "worker", "template": [1]}], "[0].template: must be an"),
        (
            "replicaSpecs",
            [{"type": "worker", "template": {"spec": "pod"}}],
            "spec.replicaSpecs[0].template.spec: must be an object",
        ),
        (
            "replicaSpecs",
            [{"type": "worker", "template": {"spec": {"containers": [1]}}}],
            "spec.replicaSpecs[0].template.spec.containers: must be a list of objects",
        ),
        ("mpiConfig", [1], "spec.mpiConfig: must be an object"),
    ],
)
def test_a_current_shape_the_rewrite_cannot_read_is_refused_naming_the_field(
    field: str, value: Any, message: str
) -> None:
    obj = sample("mpi-current-shape")
    obj["spec"][field] = value
    (error,) = errors_of(obj)
    assert error.startswith("spec: Value error, ") and message in error


def test_a_current_shape_template_without_a_pod_spec_reads_as_an_empty_one() -> None:
    obj = sample("colossalai-current-shape")
    obj["spec"]["replicaSpecs"][1]["template"] = {"spec": None}
    obj["spec"]["torchConfig"] = 5
    assert errors_of(obj) == ["spec: Value error, spec.torchConfig: must be an object"]
    obj["spec"]["torchConfig"] = {"script": ["train.py"]}
    assert "spec.worker.template.spec.containers: Field required" in errors_of(obj)


def test_pod_labels_and_names_from_the_spec_must_be_what_the_api_server_accepts() -> None:
    obj = sample("mpi-scheduled")
    template = obj["spec"]["worker"]["template"]
    template["metadata"] = {"labels": {"team": "é"}, "annotations": {"a b": "x"}}
    template["spec"]["containers"].append({"name": "Sidecar", "image": "busybox"})
    obj["spec"]["scheduler"]["t9kScheduler"]["queue"] = "队列"
    assert [error.split(":")[0] for error in errors_of(obj)] == [
        "spec.scheduler.t9kScheduler.queue",
        "spec.worker.template.metadata.labels.team",
        "spec.worker.template.metadata.annotations",
        "spec.worker.template.spec.containers.1.name",
    ]


def test_container_names_are_unique_across_containers_and_init_containers() -> None:
    obj = sample("mpi-env")
    pod = obj["spec"]["worker"]["template"]["spec"]
    pod["initContainers"] = [{"name": "mpi-worker", "image": "busybox"}]
    assert errors_of(obj) == [
        "spec.worker.template.spec.initContainers[0].name: 'mpi-worker': another container "
        "has this name"
    ]


def test_an_env_entry_of_the_wrong_shape_is_refused_not_rendered() -> None:
    obj = sample("mpi-env")
    obj["spec"]["worker"]["template"]["spec"]["containers"][0]["env"][1]["valueFrom"] = True
    assert errors_of(obj) == [
        "spec.worker.template.spec.containers.0.env: Value error, entry 1: valueFrom must be "
        "an object"
    ]


@pytest.mark.parametrize("value", ["²", "9" * 5000, "0" * 5000 + "1", "0"])
def test_a_slot_count_mpirun_cannot_read_is_an_error(value: str) -> None:
    obj = sample("mpi-env")
    obj["spec"]["worker"]["extraMPIArgs"] = ["-N", value]
    (error,) = errors_of(obj)
    assert error.startswith("spec.worker.extraMPIArgs: -N needs a positive integer value")


@pytest.mark.parametrize("depth", [101, 5000])
def test_a_spec_nested_too_deep_is_refused_before_it_is_read(depth: int) -> None:
    obj = sample("mpi-env")
    obj["spec"]["worker"]["template"]["spec"]["x"] = nested(depth, None)
    assert errors_of(obj) == ["spec.worker: nests deeper than 100 levels"]


def test_a_job_without_a_name_is_refused_by_field() -> None:
    obj = sample("mpi-env")
    del obj["metadata"]
    assert errors_of(obj) == ["metadata.name: is required"]
    obj["metadata"] = {"name": "ok", "namespace": 3}
    assert errors_of(obj) == ["metadata.namespace: must be a string"]
