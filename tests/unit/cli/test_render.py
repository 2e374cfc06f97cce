"""The offline tools' pieces: YAML line numbers, job checks with their lines, render."""

from __future__ import annotations

import json
import textwrap
import time
from typing import Any

import pytest
import yaml

from controllers.documents import Document
from controllers.documents import Problem
from controllers.documents import UnreadableInput
from controllers.documents import parse_documents
from controllers.render import PLACEHOLDER_UID
from controllers.render import REDACTED
from controllers.render import LoadedJob
from controllers.render import dump
from controllers.render import load_job
from controllers.render import redact_secrets
from controllers.render import render_job
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import JobKind
from jobcore.jobs import Volcano
from jobkinds.horovodjob import HorovodJobKind
from jobkinds.mpijob import MPIJobKind

KINDS: list[JobKind[Any]] = [MPIJobKind(), HorovodJobKind()]

JOB = """\
# an MPIJob
apiVersion: batch.tensorstack.dev/v1beta1
kind: MPIJob
metadata:
  name: hello
  labels:
    example.com/team: research
spec:
  worker:
    replicas: 2
    cmd: ["./hello"]
    template:
      spec:
        containers:
          - name: mpi-worker
            image: mpi:latest
  runMode:
    debug:
      replicaSpecs:
        - type: launcher
        - type: worker
"""


def document(text: str = JOB, *, index: int = 0) -> Document:
    return parse_documents(textwrap.dedent(text), "job.yaml")[index]


def problems(text: str) -> list[str]:
    found: list[str] = []
    for doc in parse_documents(textwrap.dedent(text), "job.yaml"):
        found += [str(problem) for problem in load_job(doc, KINDS)[1]]
    return found


def loaded(text: str = JOB) -> LoadedJob:
    job, found = load_job(document(text), KINDS)
    assert found == [] and job is not None
    return job


# Line numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("apiVersion", 2),
        ("metadata", 4),
        ("metadata.name", 5),
        ("metadata.labels.example.com/team", 7),  # a key with dots in it
        ("spec.worker.replicas", 10),
        ("spec.worker.template.spec.containers.0.image", 16),  # pydantic's spelling
        ("spec.worker.template.spec.containers[0].image", 16),  # a kind's spelling
        ("spec.worker.template.spec.containers[0]", 15),
        ("spec.runMode.debug.replicaSpecs[1].type", 21),
        ("spec.worker.cmd", 11),
    ],
)
def test_a_field_path_gives_its_line(path: str, line: int) -> None:
    assert document().line_of(path) == line


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("spec.worker.mca", 9),  # missing: the parent's line
        ("spec.worker.template.spec.containers[3].image", 14),  # no such item
        ("spec.worker.replicas.deeper", 10),
        ("nothing", 2),  # the document's first line
        ("spec.runMode.debug.replicaSpecs", 19),
    ],
)
def test_a_missing_field_gives_the_nearest_enclosing_line(path: str, line: int) -> None:
    assert document().line_of(path) == line


def test_a_longer_key_with_dots_wins_over_a_shorter_one() -> None:
    doc = document("a:\n  b: 1\n  b.c: 2\n")
    assert doc.line_of("a.b.c") == 3
    assert doc.line_of("a.b") == 2


def test_documents_keep_their_own_lines_and_empty_ones_are_skipped() -> None:
    docs = parse_documents("---\n---\na: 1\n---\n\nb:\n  c: 2\n...\n", "x.yaml")
    assert [doc.data for doc in docs] == [{"a": 1}, {"b": {"c": 2}}]
    assert [doc.line for doc in docs] == [3, 6]
    assert docs[1].line_of("b.c") == 7


def test_invalid_yaml_names_its_line() -> None:
    with pytest.raises(UnreadableInput) as caught:
        parse_documents("a: 1\nb: [1\nc: 2\n", "bad.yaml")
    problem = caught.value.problem
    assert (problem.source, problem.line) == ("bad.yaml", 3)
    assert problem.message.startswith("not valid YAML: ")


def billion_laughs(levels: int = 10) -> str:
    """An alias bomb: each level names the one before it ten times; 10 levels are 10^10 nodes."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def refusal(text: str) -> tuple[Problem, float]:
    """The problem that reading `text` raises, and the CPU time reading it took (a loaded
    machine's waits are not the parser's)."""
    start = time.process_time()
    with pytest.raises(UnreadableInput) as caught:
        parse_documents(text, "hostile.yaml")
    return caught.value.problem, time.process_time() - start


def test_an_alias_bomb_is_refused_at_once_where_it_goes_off() -> None:
    problem, seconds = refusal("kind: MPIJob\n" + billion_laughs())
    assert str(problem) == (
        "hostile.yaml:7: not accepted: aliases expand to more than 1,000,000 nodes (an alias bomb?)"
    )
    assert seconds < 2


def test_absurd_nesting_is_refused_at_once() -> None:
    for text in ("[" * 100_000, "a:\n" + "- " * 100_000 + "x\n"):
        problem, seconds = refusal(text)
        assert problem.message == "not accepted: collections nested more than 100 deep"
        assert seconds < 2


def test_nesting_through_aliases_counts_and_a_recursive_alias_is_refused() -> None:
    nested = "[" * 60 + "1" + "]" * 60
    problem, _ = refusal(f"a: &a {nested}\nb: [{nested.replace('1', '*a', 1)}]\n")
    assert (problem.line, problem.message) == (
        2,
        "not accepted: collections nested more than 100 deep, with this alias expanded",
    )
    problem, _ = refusal("a: &a [1, *a]\n")
    assert problem.message == "not accepted: an alias inside the node it names"


def test_ordinary_anchors_aliases_and_merges_still_read() -> None:
    docs = parse_documents(
        "base: &base {image: mpi, env: &env [{name: A, value: '1'}]}\n"
        "worker: {<<: *base, name: w, more: *env}\n"
        "---\n"
        "again: &x [1, 2]\n"
        "twice: [*x, *x]\n",
        "ok.yaml",
    )
    env = [{"name": "A", "value": "1"}]
    assert docs[0].data["worker"] == {"image": "mpi", "env": env, "name": "w", "more": env}
    assert docs[1].data == {"again": [1, 2], "twice": [[1, 2], [1, 2]]}
    assert docs[1].line_of("twice") == 5


def test_a_problem_reads_like_a_compiler_error() -> None:
    assert str(Problem("job.yaml", 14, "spec.x: bad")) == "job.yaml:14: spec.x: bad"
    assert str(Problem("job.yaml", None, "no documents")) == "job.yaml: no documents"


# Checks ----------------------------------------------------------------------------------------


def test_a_valid_job_gets_the_default_namespace_and_a_placeholder_uid() -> None:
    job = loaded().job
    assert (job.name, job.namespace, job.uid) == ("hello", "default", PLACEHOLDER_UID)
    assert job.obj["metadata"]["labels"] == {"example.com/team": "research"}


def test_the_namespace_given_wins_over_the_default() -> None:
    job, _ = load_job(document(JOB.replace("  name: hello", "  name: a\n  namespace: x")), KINDS)
    assert job is not None and job.job.namespace == "x"
    job, _ = load_job(document(), KINDS, namespace="team")
    assert job is not None and job.job.namespace == "team"


def test_schema_errors_have_lines_and_field_paths() -> None:
    text = JOB.replace("replicas: 2", "replicas: 0").replace("cmd:", "cmnd:")
    assert problems(text) == [
        "job.yaml:10: spec.worker.replicas: Input should be greater than or equal to 1",
        "job.yaml:9: spec.worker.cmd: Field required",
        "job.yaml:11: spec.worker.cmnd: Extra inputs are not permitted",
    ]


def test_the_controllers_own_checks_have_lines() -> None:
    text = JOB.replace("type: worker", "type: master").replace("mpi-worker", "main")
    assert problems(text) == [
        "job.yaml:21: spec.runMode.debug.replicaSpecs[1].type: "
        "must be 'launcher' or 'worker', got 'master'",
        'job.yaml:14: spec.worker.template.spec.containers: needs a container named "mpi-worker"',
    ]


def test_an_unknown_kind_names_the_installed_ones() -> None:
    text = JOB.replace("kind: MPIJob", "kind: PyTorchJob")
    assert problems(text) == [
        "job.yaml:3: kind: no installed job kind is PyTorchJob in "
        "batch.tensorstack.dev/v1beta1; installed: HorovodJob, MPIJob "
        "(batch.tensorstack.dev/v1beta1)"
    ]


def test_a_known_kind_in_an_unknown_version_points_at_the_api_version() -> None:
    [problem] = problems(JOB.replace("v1beta1", "v2"))
    assert problem.startswith("job.yaml:2: apiVersion: no installed job kind is MPIJob in ")


def test_missing_identity() -> None:
    assert problems("metadata: {name: x}\n") == [
        "job.yaml:1: apiVersion: is required",
        "job.yaml:1: kind: is required",
    ]
    assert problems("- a list\n") == [
        "job.yaml:1: a document must be a mapping: a Kubernetes object"
    ]


def test_metadata_is_checked_as_the_api_server_would_and_the_spec_still_is() -> None:
    text = JOB.replace("name: hello", "name: Hello_World\n  namespace: Team").replace(
        "replicas: 2", "replicas: 0"
    )
    assert problems(text) == [
        "job.yaml:5: metadata.name: must be a lowercase RFC 1123 subdomain (lowercase "
        "letters, digits, '-' and '.', starting and ending with a letter or digit)",
        "job.yaml:6: metadata.namespace: must be a lowercase RFC 1123 label (at most 63 "
        "lowercase letters, digits and '-', starting and ending with a letter or digit)",
        "job.yaml:11: spec.worker.replicas: Input should be greater than or equal to 1",
    ]


def test_a_name_is_required_and_generate_name_stands_in() -> None:
    without = JOB.replace("  name: hello\n", "")
    assert problems(without) == ["job.yaml:4: metadata.name: is required"]
    generated = JOB.replace("  name: hello", "  generateName: hello-")
    job, _ = load_job(document(generated), KINDS)
    assert job is not None and job.job.name == "hello-xxxxx"


def test_unknown_top_level_fields_are_errors_and_status_is_ignored() -> None:
    assert problems(JOB + "extra: 1\nstatus: {phase: Running}\n") == [
        "job.yaml:22: extra: Extra inputs are not permitted"
    ]
    job = loaded(JOB + "status: {phase: Running}\n").job
    assert "status" not in job.obj and job.status.phase is None


# Render ----------------------------------------------------------------------------------------


def names(children: list[dict[str, Any]]) -> list[str]:
    return [f"{child['kind']}/{child['metadata']['name']}" for child in children]


def test_a_new_job_renders_its_workers_but_not_yet_its_launcher() -> None:
    job = loaded()
    assert names(render_job(job.kind, job.job)) == [
        "Secret/hello-ssh",
        "ConfigMap/hello-hostfile",
        "Service/hello",
        "Pod/hello-worker-0",
        "Pod/hello-worker-1",
    ]


def test_with_workers_ready_the_launcher_renders_too_and_the_key_is_kept() -> None:
    job = loaded()
    children = render_job(job.kind, job.job, workers_ready=True)
    assert names(children)[-1] == "Pod/hello-launcher"
    assert all("status" not in child for child in children)


def test_every_child_is_owned_like_the_controller_creates_it() -> None:
    job = loaded()
    for child in render_job(job.kind, job.job, workers_ready=True):
        meta = child["metadata"]
        assert meta["namespace"] == "default"
        assert meta["labels"][JOB_NAME_LABEL] == "hello"
        assert meta["ownerReferences"][0]["uid"] == PLACEHOLDER_UID
        assert meta["ownerReferences"][0]["controller"] is True


def test_a_gang_scheduled_job_gets_its_pod_group_first_and_every_pod_at_once() -> None:
    job = loaded(
        JOB.replace("spec:\n  worker:", "spec:\n  scheduler: {t9kScheduler: {queue: q}}\n  worker:")
    )
    children = render_job(job.kind, job.job)
    assert names(children)[0] == "PodGroup/hello"
    assert children[0]["spec"]["minMember"] == 3
    assert names(children)[-1] == "Pod/hello-launcher"  # a gang does not wait for Ready
    pods = [child for child in children if child["kind"] == "Pod"]
    assert {pod["spec"]["schedulerName"] for pod in pods} == {"t9k-scheduler"}


def test_the_default_gang_scheduler_applies_to_jobs_without_their_own() -> None:
    job = loaded()
    children = render_job(job.kind, job.job, gang_scheduler=Volcano(queue="q"))
    assert children[0]["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert children[0]["spec"]["queue"] == "q"


def test_a_paused_job_renders_no_pods_and_no_pod_group() -> None:
    text = JOB.replace("  runMode:\n", "  runMode:\n    pause: {enabled: true}\n")
    job = loaded(text)
    children = render_job(job.kind, job.job, workers_ready=True, gang_scheduler=Volcano())
    assert names(children) == ["Secret/hello-ssh", "ConfigMap/hello-hostfile", "Service/hello"]


def test_elastic_horovod_discovery_probes_every_worker_and_waits_for_ready_ones() -> None:
    text = """\
        apiVersion: batch.tensorstack.dev/v1beta1
        kind: HorovodJob
        metadata: {name: elastic}
        spec:
          worker:
            replicas: 2
            cmd: ["python", "train.py"]
            template:
              spec:
                containers: [{name: worker, image: horovod}]
          elastic: {minReplicas: 1, maxReplicas: 2}
        """
    job, found = load_job(document(text), KINDS)
    assert found == [] and job is not None
    first = render_job(job.kind, job.job)
    ready = render_job(job.kind, job.job, workers_ready=True)
    script = next(c for c in ready if c["kind"] == "ConfigMap")["data"]
    assert "probe 'elastic-worker-1." in next(iter(script.values()))
    assert script == next(c for c in first if c["kind"] == "ConfigMap")["data"]
    assert names(ready)[-1] == "Pod/elastic-launcher"
    assert "Pod/elastic-launcher" not in names(first)


# Output ----------------------------------------------------------------------------------------


def test_redact_secrets_replaces_only_secret_values() -> None:
    job = loaded()
    children = render_job(job.kind, job.job)
    redacted = redact_secrets(children)
    secret = redacted[0]
    assert set(secret["data"].values()) == {REDACTED}
    assert set(secret["data"]) == set(children[0]["data"])
    assert children[0]["data"] != secret["data"]  # the input is left alone
    assert redacted[1:] == children[1:]


def test_yaml_output_is_a_stream_that_reads_back_with_scripts_as_blocks() -> None:
    job = loaded()
    children = render_job(job.kind, job.job, workers_ready=True)
    text = dump(children)
    assert list(yaml.safe_load_all(text)) == children
    assert text.startswith("---\n")
    assert "hostfile: |\n" in text


def test_json_output_is_a_list() -> None:
    job = loaded()
    children = render_job(job.kind, job.job)
    assert json.loads(dump(children, "json")) == {
        "apiVersion": "v1",
        "kind": "List",
        "items": children,
    }
