"""Validation for kinds whose launcher reaches sshd workers in spec.worker.template.

The template's volumes and mounts that would collide with the job's own, and the user strings
a launcher writes into a command line that a shell runs: paths, environment variable names and
`envFrom` prefixes (the job name and the worker container are the job layer's, in
`jobcore._jobs.jobchecks`). Each returns `FieldError`s; wording that differs between the
kinds is passed in by keyword.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

from jobcore._jobs.jobchecks import CONTAINERS
from jobcore._jobs.jobchecks import worker_container
from jobcore._jobs.kind import FieldError

SAFE_PATH_CLASS = "A-Za-z0-9._+@=:,/-"
"""SAFE_PATH's characters as a class, the same in a Python regex and a bash pattern (`[!...]`,
under LC_ALL=C)."""
SAFE_PATH = re.compile(f"/[{SAFE_PATH_CLASS}]*")
"""An absolute path of characters that no shell, ssh or sshd gives a meaning to."""
PATH_CHARACTERS = "letters, digits and . _ + @ = : , / -"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A name a POSIX shell can assign (`NAME=value`, `export NAME`)."""


def template_container(job_spec: Any, container: str) -> tuple[str, Any] | None:
    """`container` of spec.worker.template and its field path, if the template has it."""
    index = worker_container(job_spec, container)
    if index is None:
        return None
    return f"{CONTAINERS}[{index}]", job_spec.worker.template.spec.containers[index]


def path_errors(paths: Mapping[str, str | None]) -> list[FieldError]:
    """Each given path (field -> value) must be absolute, of SAFE_PATH's characters only.

    Launchers write such paths into command lines a shell runs (e.g. Open MPI's
    `--prefix`, horovodrun's ssh command, the `cd` that colossalai run and horovodrun send to
    every worker), and sshd and ssh expand `%` in the key paths.
    """
    return [
        FieldError(
            field,
            f"must be an absolute path of {PATH_CHARACTERS} only (a shell on the launcher or "
            f"the workers reads it), got {path!r}",
        )
        for field, path in paths.items()
        if path is not None and not SAFE_PATH.fullmatch(path)
    ]


def env_name_errors(
    env: Iterable[Mapping[str, Any]], path: str, *, reader: str
) -> list[FieldError]:
    """Each entry of the env list at `path` must be named like a shell variable: `reader`
    (the launcher) writes the names, unquoted, into the command its workers' shell runs."""
    return [
        FieldError(
            f"{path}[{i}].name",
            f"must be a shell variable name ([A-Za-z_][A-Za-z0-9_]*): {reader} writes it "
            f"unquoted into the command the workers' shell runs, got {entry.get('name')!r}",
        )
        for i, entry in enumerate(env)
        if not ENV_NAME.fullmatch(str(entry.get("name", "")))
    ]


def env_from_errors(container: Any, path: str, *, reader: str) -> list[FieldError]:
    """Each `envFrom` prefix of `container` (at `path`) must be a shell variable name:
    `reader` writes the names it makes, unquoted, into the command the workers' shell runs.

    The rest of such a name is a ConfigMap's or Secret's key, which the API server allows
    only letters, digits, `-`, `_` and `.`; a prefix may hold more on Kubernetes 1.30 and later.
    """
    sources = (container.model_extra or {}).get("envFrom")
    return [
        FieldError(
            f"{path}[{i}].prefix",
            f"must be a shell variable name ([A-Za-z_][A-Za-z0-9_]*): {reader} writes the "
            f"names it makes unquoted into the command the workers' shell runs, got "
            f"{source['prefix']!r}",
        )
        for i, source in enumerate(sources if isinstance(sources, list) else ())
        if isinstance(source, dict)
        and source.get("prefix")
        and not ENV_NAME.fullmatch(str(source["prefix"]))
    ]


def mount_errors(
    job_spec: Any,
    *,
    container: str,
    volumes: Collection[str],
    mount_paths: Collection[str],
    message: str,
) -> list[FieldError]:
    """The template's volumes named like ours, and `container`'s mounts at our mount paths
    (compared without a trailing `/`), would make the pod invalid."""
    pod = job_spec.worker.template.spec
    errors = [
        FieldError(f"spec.worker.template.spec.volumes[{i}].name", "is reserved")
        for i, volume in enumerate(pod.volumes or ())
        if volume.get("name") in volumes
    ]
    index = worker_container(job_spec, container)
    if index is not None:
        errors += [
            FieldError(f"{CONTAINERS}[{index}].volumeMounts[{i}].mountPath", message)
            for i, mount in enumerate(pod.containers[index].volume_mounts or ())
            if str(mount.get("mountPath", "")).rstrip("/") in mount_paths
        ]
    return errors
