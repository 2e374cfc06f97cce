"""Offline `validate` and `render`: job files checked and planned as the controller would.

No cluster is involved. A document is checked the way the API server and then the controller
would check it: its apiVersion and kind name an installed kind, its metadata is a valid name
and namespace, its spec parses with the kind's model (the same pydantic model the CRD schema
is generated from; fields the schema does not know are errors here, where the API server
would drop them silently) and passes `jobcore.jobs.parse_job`, the controller's own checks. The
children are what `plan_children` returns, the reconciler's own plan, owned by the job, after
the PodGroup of the job's gang scheduler.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from typing import Literal

import yaml

from controllers.documents import Document
from controllers.documents import Problem
from controllers.documents import UnreadableInput
from controllers.documents import read_documents
from controllers.documents import source_name
from jobcore import PODS
from jobcore import SECRETS
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import DEFAULT_AGENT
from jobcore.jobs import DEFAULT_CLUSTER_DOMAIN
from jobcore.jobs import AgentSource
from jobcore.jobs import GangScheduler
from jobcore.jobs import Job
from jobcore.jobs import JobKind
from jobcore.jobs import Observed
from jobcore.jobs import UnservedChildren
from jobcore.jobs import parse_job
from jobcore.jobs import plan_children

DEFAULT_NAMESPACE = "default"
"""The namespace of a job that names none, as `kubectl apply` without `-n` would use."""
PLACEHOLDER_UID = "00000000-0000-0000-0000-000000000000"
"""The job's uid in the children's ownerReferences: the API server assigns the real one."""
GENERATED_SUFFIX = "xxxxx"
"""Stands for the 5 random characters the API server appends to `metadata.generateName`."""
REDACTED = "<redacted>"

_FIELDS = ("apiVersion", "kind", "metadata", "spec", "status")
_NAME = "job"
"""The name a job without a usable one is checked under, so its spec is still checked."""
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*")
_READY_CONDITIONS = ("Initialized", "Ready", "ContainersReady", "PodScheduled")

Output = Literal["yaml", "json"]


@dataclass(frozen=True, slots=True)
class LoadedJob:
    """A valid job document: the kind that serves it, and the job as the controller sees it."""

    document: Document
    kind: JobKind[Any]
    job: Job[Any]

    def __str__(self) -> str:
        return f"{self.document.source}:{self.document.line}: {self.job.kind} {self.job.name}"


def cluster_domain(text: str) -> str:
    """`--cluster-domain`'s value: a DNS subdomain (`cluster.local`), else ValueError."""
    if len(text) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(text):
        raise ValueError(f"not a DNS subdomain: {text!r}")
    return text


class RenderError(Exception):
    """A kind rendered something the controller would refuse (a plugin's bug)."""


# Checking -----------------------------------------------------------------------------------


def load_jobs(
    paths: Iterable[str],
    kinds: Sequence[JobKind[Any]],
    *,
    namespace: str = DEFAULT_NAMESPACE,
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN,
    agent: AgentSource = DEFAULT_AGENT,
) -> tuple[list[LoadedJob], list[Problem]]:
    """Every job document of every file, and every problem found, in file order; the jobs
    read for a cluster of `cluster_domain` whose controller takes its launch agent from
    `agent`.

    A file that cannot be read, is not YAML or holds no document is a problem too.
    """
    jobs: list[LoadedJob] = []
    problems: list[Problem] = []
    for path in paths:
        try:
            documents = read_documents(path)
        except UnreadableInput as error:
            problems.append(error.problem)
            continue
        if not documents:
            problems.append(Problem(source_name(path), None, "no documents"))
        for document in documents:
            job, found = load_job(
                document, kinds, namespace=namespace, cluster_domain=cluster_domain, agent=agent
            )
            problems += found
            if job is not None:
                jobs.append(job)
    return jobs, problems


def load_job(
    document: Document,
    kinds: Sequence[JobKind[Any]],
    *,
    namespace: str = DEFAULT_NAMESPACE,
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN,
    agent: AgentSource = DEFAULT_AGENT,
) -> tuple[LoadedJob | None, list[Problem]]:
    """The job in `document`, or None and every problem with it, each with its line."""
    data = document.data
    if not isinstance(data, dict):
        return None, [document.problem("a document must be a mapping: a Kubernetes object")]
    kind, problems = _kind_of(document, kinds)
    if kind is None:
        return None, problems
    problems += [
        document.problem(f"{key}: Extra inputs are not permitted", str(key))
        for key in data
        if key not in _FIELDS
    ]
    meta, meta_problems = _metadata(document, namespace)
    problems += meta_problems
    obj = {
        key: copy.deepcopy(value)
        for key, value in data.items()
        if key not in ("status", "metadata")
    }
    obj["metadata"] = meta
    job, errors = parse_job(kind, obj, cluster_domain=cluster_domain, agent=agent)
    problems += [document.problem(str(error), error.path) for error in errors]
    if job is None or problems:
        return None, problems
    return LoadedJob(document, kind, job), []


def _kind_of(
    document: Document, kinds: Sequence[JobKind[Any]]
) -> tuple[JobKind[Any] | None, list[Problem]]:
    api_version, name = document.data.get("apiVersion"), document.data.get("kind")
    missing = [
        document.problem(f"{field}: is required")
        for field, value in (("apiVersion", api_version), ("kind", name))
        if not isinstance(value, str) or not value
    ]
    if missing:
        return None, missing
    for kind in kinds:
        if (kind.resource.api_version, kind.resource.kind) == (api_version, name):
            return kind, []
    by_version: dict[str, list[str]] = {}
    for kind in kinds:
        by_version.setdefault(kind.resource.api_version, []).append(kind.resource.kind)
    installed = "; ".join(
        f"{', '.join(sorted(names))} ({version})" for version, names in sorted(by_version.items())
    )
    field = "apiVersion" if name in {kind.resource.kind for kind in kinds} else "kind"
    message = (
        f"{field}: no installed job kind is {name} in {api_version}; "
        f"installed: {installed or 'none'}"
    )
    return None, [document.problem(message, field)]


def _metadata(document: Document, namespace: str) -> tuple[dict[str, Any], list[Problem]]:
    """The job's metadata as the API server would store it: a name, a namespace, a uid.

    A name or namespace that is not valid is replaced by a placeholder, so the spec is still
    checked; the problem is reported.
    """
    given = document.data.get("metadata")
    if given is not None and not isinstance(given, dict):
        problem = document.problem("metadata: must be a mapping", "metadata")
        return {"name": _NAME, "namespace": namespace, "uid": PLACEHOLDER_UID}, [problem]
    meta = copy.deepcopy(given or {})
    problems = []
    name = meta.get("name")
    if not name and isinstance(meta.get("generateName"), str):
        name = meta["generateName"] + GENERATED_SUFFIX
    if not name:
        problems.append(document.problem("metadata.name: is required", "metadata"))
        name = _NAME
    elif not isinstance(name, str) or len(name) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(name):
        problems.append(
            document.problem(
                "metadata.name: must be a lowercase RFC 1123 subdomain (lowercase letters, "
                "digits, '-' and '.', starting and ending with a letter or digit)",
                "metadata.name",
            )
        )
        name = _NAME
    own_namespace = meta.get("namespace") or namespace
    if not isinstance(own_namespace, str) or not _is_dns_label(own_namespace):
        problems.append(
            document.problem(
                "metadata.namespace: must be a lowercase RFC 1123 label (at most 63 "
                "lowercase letters, digits and '-', starting and ending with a letter or digit)",
                "metadata.namespace",
            )
        )
        own_namespace = namespace
    return {**meta, "name": name, "namespace": own_namespace, "uid": PLACEHOLDER_UID}, problems


def _is_dns_label(text: str) -> bool:
    return len(text) <= 63 and re.fullmatch(_DNS1123_LABEL, text) is not None


# Rendering ----------------------------------------------------------------------------------


def render_job(
    kind: JobKind[Any],
    job: Job[Any],
    *,
    workers_ready: bool = False,
    gang_scheduler: GangScheduler | None = None,
) -> list[Object]:
    """Every child the controller would create for a new job, as it would create them.

    Nothing exists yet: the kind renders as on the job's first reconcile. With
    `workers_ready`, as on a later one: every child of that first render exists and each of
    its pods is Running and Ready, so a kind that waits for Ready workers renders its
    launcher too. A gang-scheduled job's PodGroup comes first, as the controller applies it
    before the pods. A `resumeSpecs` applies only once a job was paused and resumed, which a
    new job never was.
    """
    first = _children(kind, job, Observed({}), gang_scheduler)
    if not workers_ready:
        return first
    return _children(kind, job, _existing(kind, first), gang_scheduler)


def _children(
    kind: JobKind[Any], job: Job[Any], observed: Observed, gang_scheduler: GangScheduler | None
) -> list[Object]:
    try:
        planned = plan_children(kind, job, observed, gang_scheduler)
    except UnservedChildren as error:
        raise RenderError(str(error)) from error
    return planned.adopted()


def _existing(kind: JobKind[Any], children: Sequence[Object]) -> Observed:
    """`children` as the cache would show them once created, their pods Running and Ready."""
    resources: dict[str, Resource] = {resource.kind: resource for resource in kind.child_resources}
    existing: dict[Resource, dict[str, Object]] = {}
    for child in children:
        resource = resources.get(child["kind"])
        if resource is None:
            continue  # the PodGroup: the controller does not watch it
        obj = copy.deepcopy(child)
        if resource == PODS:
            obj["status"] = _running_and_ready(obj)
        existing.setdefault(resource, {})[obj["metadata"]["name"]] = obj
    return Observed(existing)


def _running_and_ready(pod: Object) -> dict[str, Any]:
    containers = pod["spec"].get("containers") or ()
    return {
        "phase": "Running",
        "conditions": [{"type": kind, "status": "True"} for kind in _READY_CONDITIONS],
        "containerStatuses": [
            {
                "name": container["name"],
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {}},
            }
            for container in containers
        ],
    }


# Output -------------------------------------------------------------------------------------


def redact_secrets(children: Iterable[Object]) -> list[Object]:
    """`children` with every value of a Secret's `data` and `stringData` replaced."""
    redacted = []
    for child in children:
        if child.get("kind") != SECRETS.kind:
            redacted.append(child)
            continue
        secret = copy.deepcopy(child)
        for field in ("data", "stringData"):
            if isinstance(secret.get(field), dict):
                secret[field] = dict.fromkeys(secret[field], REDACTED)
        redacted.append(secret)
    return redacted


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (scripts, hostfiles) as literal blocks, as one would write them."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)


def dump(children: Sequence[Object], output: Output = "yaml") -> str:
    """A YAML stream of one document per object, or a JSON `v1 List` of them."""
    if output == "json":
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(children)}, indent=2)
    return yaml.dump_all(
        children, Dumper=_Dumper, sort_keys=False, explicit_start=True, allow_unicode=True
    )
