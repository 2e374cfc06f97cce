"""Helpers for testing a job kind on plain objects: jobs, pods in a state, and what it renders.

A kind's `validate`, `render` and `interpret` are pure, so most of its tests build a `Job` and
an `Observed` by hand and read the result; these are the pieces such tests repeat. Children
are found by name (`by_name`, `container_named`) and read as a user would see them
(`env_of`, `secret_text`); `env_list` writes a container's environment. `run_command` and
`accepting_connections` are for the scripts a kind's pods run: a command with stand-in
programs first on PATH, and a port that answers.
`ModelKind` is a kind that is only its declarations, for tests of what jobcore derives from
them (a CRD, an API reference).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import os
import socket
import subprocess
import threading
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import Generic

from jobcore._jobs.kind import FieldError
from jobcore._jobs.kind import Job
from jobcore._jobs.kind import JobKind
from jobcore._jobs.kind import Observed
from jobcore._jobs.kind import Outcome
from jobcore._jobs.kind import SpecT
from jobcore._jobs.models import JobStatus
from jobcore._jobs.parse import job_with
from jobcore._runtime.resources import CONFIGMAPS
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import SECRETS
from jobcore._runtime.resources import SERVICES
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import Resource

CHILD_RESOURCES = (PODS, SECRETS, CONFIGMAPS, SERVICES)
"""The children `observed_of` sorts by their kind unless told others."""


@dataclass(frozen=True)
class ModelKind(Generic[SpecT]):
    """A `JobKind` that is only its declarations: it accepts every job, renders nothing, and
    leaves it pending, with one pod of each replica type at full strength."""

    resource: Resource
    spec_model: type[SpecT]
    short_names: Sequence[str] = ()
    replica_types: Sequence[str] = ("worker",)
    child_resources: Sequence[Resource] = (PODS,)
    containers: Mapping[str, str] = field(default_factory=dict)
    debug_commands: Mapping[str, Sequence[str] | None] = field(default_factory=dict)
    kept_after_cleanup: Sequence[str] = ()
    printer_columns: Sequence[Mapping[str, Any]] = ()

    def validate(self, job: Job[SpecT]) -> list[FieldError]:
        return []

    def replicas(self, job: Job[SpecT]) -> Mapping[str, int]:
        return dict.fromkeys(self.replica_types, 1)

    def render(self, job: Job[SpecT], observed: Observed) -> list[Object]:
        return []

    def interpret(self, job: Job[SpecT], observed: Observed) -> Outcome:
        return Outcome("pending")


def job_manifest(
    kind: JobKind[Any],
    spec: Mapping[str, Any],
    *,
    name: str,
    namespace: str,
    uid: str | None = "uid-1",
) -> Object:
    """A job object of `kind` as the API server would hold it: identity and a copy of `spec`.

    `uid=None` leaves the uid out, as in a job to create through the API server.
    """
    metadata = {"name": name, "namespace": namespace}
    if uid is not None:
        metadata["uid"] = uid
    return {
        "apiVersion": kind.resource.api_version,
        "kind": kind.resource.kind,
        "metadata": metadata,
        "spec": copy.deepcopy(dict(spec)),
    }


def job_of(kind: JobKind[SpecT], obj: Object, *, status: JobStatus | None = None) -> Job[SpecT]:
    """The job `obj` with its spec read through the kind's model, and not checked further.

    Unlike `jobcore.jobs.parse_job`, which refuses a job its kind's `validate` objects to, this
    keeps such a job, so a test can call `validate` on it. A spec the model rejects raises
    pydantic's `ValidationError`.
    """
    return job_with(kind, obj, kind.spec_model.model_validate(obj.get("spec") or {}), status)


def error_messages(errors: Iterable[FieldError]) -> dict[str, str]:
    """Field errors as `{path: message}`, e.g. of `kind.validate(job)`."""
    return {error.path: error.message for error in errors}


def spec_with(spec: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    """`spec` with top-level fields replaced, and a dict merged into a dict one level deep.

    `spec_with(spec, worker={"replicas": 3})` changes the replicas and keeps the rest of the
    worker.
    """
    result = dict(spec)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = {**result[key], **value}
        else:
            result[key] = value
    return result


def pod_of(
    job: Job[Any],
    name: str,
    replica_type: str,
    index: int = 0,
    *,
    phase: str = "Running",
    ready: bool = False,
    containers: Sequence[Mapping[str, Any]] = (),
    **status: Any,
) -> Object:
    """A scheduled pod of `job`, labelled as the job's `replica_type` number `index`.

    Its status has `phase`, a Ready condition, the `containers`' statuses (see `terminated`
    and `waiting`) and any other `status` fields, such as `reason="Evicted"`.
    """
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": job.namespace,
            "labels": job.labels(replica_type, index),
            "uid": f"uid-{name}",
        },
        "spec": {"nodeName": "node-1"},
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [dict(c) for c in containers],
            **status,
        },
    }


def terminated(container: str, exit_code: int, reason: str = "Error", message: str = "") -> Object:
    """The status of a container that exited with `exit_code`."""
    state = {"exitCode": exit_code, "reason": reason, **({"message": message} if message else {})}
    return {"name": container, "state": {"terminated": state}, "restartCount": 0}


def waiting(container: str, reason: str, message: str = "") -> Object:
    """The status of a container that waits, e.g. on `ImagePullBackOff`."""
    return {"name": container, "state": {"waiting": {"reason": reason, "message": message}}}


def observed_of(*children: Object, resources: Iterable[Resource] = CHILD_RESOURCES) -> Observed:
    """`children` as the job's cache would show them: by their kind's resource and name.

    Pods are always there, if none; a child whose kind is not among `resources` is a KeyError.
    """
    by_kind = {resource.kind: resource for resource in resources}
    found: dict[Resource, dict[str, Object]] = {PODS: {}}
    for child in children:
        found.setdefault(by_kind[child["kind"]], {})[child["metadata"]["name"]] = child
    return Observed(found)


def by_name(objects: Iterable[Object]) -> dict[str, Object]:
    """`objects` by `metadata.name`, e.g. what `kind.render` returned."""
    return {obj["metadata"]["name"]: obj for obj in objects}


def container_named(pod: Object, name: str) -> Any:
    """The pod's container `name`; StopIteration if it has none."""
    return next(c for c in pod["spec"]["containers"] if c["name"] == name)


def env_of(container: Mapping[str, Any]) -> dict[str, str]:
    """The container's environment variables that have a value (not `valueFrom`), by name."""
    return {e["name"]: e["value"] for e in container.get("env") or () if "value" in e}


def env_list(values: Mapping[str, str]) -> list[dict[str, str]]:
    """A container's `env` setting `values` in their order: the inverse of `env_of`."""
    return [{"name": name, "value": value} for name, value in values.items()]


def secret_text(secret: Object) -> dict[str, str]:
    """The Secret's `data`, decoded from base64 into text."""
    return {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}


def is_subset(small: Any, big: Any) -> bool:
    """Whether every field of `small` is in `big` with the same value, at any depth.

    What a round trip through a kind's model keeps: the fields written, among defaults added.
    """
    if isinstance(small, dict):
        return isinstance(big, dict) and all(
            key in big and is_subset(value, big[key]) for key, value in small.items()
        )
    return bool(small == big)


def run_command(
    command: Sequence[str],
    tmp_path: Path,
    *,
    env: Mapping[str, str] | None = None,
    programs: Mapping[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run `command` as a pod's script would, with stand-ins for the programs it starts.

    Each of `programs` (name: script text) is written to `tmp_path/bin`, executable, which
    goes first on PATH; `env` adds to this process's environment. The output is captured as
    text, and a non-zero exit is returned, not raised.
    """
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    for name, script in (programs or {}).items():
        (fake / name).write_text(script)
        (fake / name).chmod(0o755)
    full_env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", **(env or {})}
    return subprocess.run(
        list(command), check=False, env=full_env, capture_output=True, text=True, timeout=timeout
    )


@contextlib.contextmanager
def accepting_connections(port: int, host: str = "127.0.0.1") -> Iterator[int]:
    """A TCP port that accepts connections and closes them, as a Ready worker's sshd would.

    Yields the port (a free one for port 0). Skips the test when the port cannot be bound,
    e.g. port 22 without privileges or taken by a real sshd.
    """
    server = socket.socket()
    try:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((host, port))
    except OSError:
        server.close()
        import pytest  # noqa: PLC0415 - only a test skips: the kit imports without pytest

        pytest.skip(f"cannot listen on {host}:{port} here")
    server.listen(16)
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                server.accept()[0].close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        server.close()
