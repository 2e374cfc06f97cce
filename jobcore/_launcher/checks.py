"""Validation for kinds whose launcher reaches sshd workers in spec.worker.template.

The job name (it names the workers' headless Service and prefixes their hostnames), the
worker container, the template's volumes and mounts that would collide with the job's own,
and the user strings a launcher writes into a command line that a shell runs: paths,
environment variable names and `envFrom` prefixes. Each returns `FieldError`s; wording that
differs between the kinds is passed in by keyword.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

from jobcore._jobs.kind import FieldError
from jobcore._jobs.kind import Job
from jobcore._runtime.resources import DNS1035_LABEL

CONTAINERS = "spec.worker.template.spec.containers"
SAFE_PATH_CLASS = "A-Za-z0-9._+@=:,/-"
"""SAFE_PATH's characters as a class, the same in a Python regex and a bash pattern (`[!...]`,
under LC_ALL=C)."""
SAFE_PATH = re.compile(f"/[{SAFE_PATH_CLASS}]*")
"""An absolute path of characters that no shell, ssh or sshd gives a meaning to."""
PATH_CHARACTERS = "letters, digits and . _ + @ = : , / -"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A name a POSIX shell can assign (`NAME=value`, `export NAME`)."""


def job_name_errors(
    job: Job[Any], longest: str, *, exceeds: str = "63 characters"
) -> list[FieldError]:
    """The job name names a Service (DNS-1035 label) and prefixes worker hostnames (<= 63).

    `longest` is the longest worker hostname the job can have.
    """
    problems = []
    if not DNS1035_LABEL.fullmatch(job.name):
        problems.append(
            "must be a DNS-1035 label (lowercase letters, digits and '-', starting with a "
            "letter): it names the workers' headless Service"
        )
    if len(longest) > 63:
        problems.append(f"is too long: worker hostname {longest!r} exceeds {exceeds}")
    return [FieldError("metadata.name", problem) for problem in problems]


def worker_container(job_spec: Any, container: str) -> int | None:
    """The index of `container` in spec.worker.template, if it has one."""
    containers = job_spec.worker.template.spec.containers
    return next((i for i, c in enumerate(containers) if c.name == container), None)


def unique_name_errors(pod: Any, path: str) -> list[FieldError]:
    """Names of containers and init containers are unique in the pod spec `pod` at `path`."""
    seen: set[str] = set()
    errors = []
    for field, containers in (
        ("containers", pod.containers),
        ("initContainers", pod.init_containers),
    ):
        for i, item in enumerate(containers or ()):
            if item.name in seen:
                errors.append(
                    FieldError(
                        f"{path}.{field}[{i}].name",
                        f"{item.name!r}: another container has this name",
                    )
                )
            seen.add(item.name)
    return errors


def container_errors(job_spec: Any, container: str) -> list[FieldError]:
    """The worker template needs `container`, with an image; container names are unique."""
    pod = job_spec.worker.template.spec
    errors = unique_name_errors(pod, "spec.worker.template.spec")
    index = worker_container(job_spec, container)
    if index is None:
        errors.append(FieldError(CONTAINERS, f'needs a container named "{container}"'))
    elif not pod.containers[index].image:
        errors.append(FieldError(f"{CONTAINERS}[{index}].image", "is required"))
    return errors


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
