"""Validation shared by the kinds whose launcher reaches sshd workers in spec.worker.template.

The job name (it names the workers' headless Service and prefixes their hostnames), the
worker container, absolute paths, the template's volumes and mounts that would collide with
the job's own, and the replica types of spec.runMode. Each returns `FieldError`s; wording
that differs between the kinds is passed in by keyword.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from jobcore import FieldError, Job

DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
CONTAINERS = "spec.worker.template.spec.containers"
INIT_CONTAINERS = "spec.worker.template.spec.initContainers"


def name_errors(job: Job[Any], longest: str, *, exceeds: str = "63 characters") -> list[FieldError]:
    """The job name names a Service (DNS-1035 label) and prefixes worker hostnames (<= 63).

    `longest` is the longest worker hostname the job can have.
    """
    errors = []
    if not DNS1035_LABEL.fullmatch(job.name):
        errors.append(
            FieldError(
                "metadata.name",
                "must be a DNS-1035 label (lowercase letters, digits and '-', starting with a "
                "letter): it names the workers' headless Service",
            )
        )
    if len(longest) > 63:
        errors.append(
            FieldError(
                "metadata.name", f"is too long: worker hostname {longest!r} exceeds {exceeds}"
            )
        )
    return errors


def worker_container(job_spec: Any, container: str) -> int | None:
    """The index of `container` in spec.worker.template, if it has one."""
    containers = job_spec.worker.template.spec.containers
    return next((i for i, c in enumerate(containers) if c.name == container), None)


def container_errors(job_spec: Any, container: str) -> list[FieldError]:
    """The worker template needs `container`, with an image; container names are unique."""
    pod = job_spec.worker.template.spec
    seen: set[str] = set()
    errors = []
    for path, containers in ((CONTAINERS, pod.containers), (INIT_CONTAINERS, pod.init_containers)):
        for i, item in enumerate(containers or ()):
            if item.name in seen:
                errors.append(
                    FieldError(
                        f"{path}[{i}].name", f"{item.name!r}: another container has this name"
                    )
                )
            seen.add(item.name)
    index = worker_container(job_spec, container)
    if index is None:
        errors.append(FieldError(CONTAINERS, f'needs a container named "{container}"'))
    elif not pod.containers[index].image:
        errors.append(FieldError(f"{CONTAINERS}[{index}].image", "is required"))
    return errors


def path_errors(paths: Mapping[str, str | None]) -> list[FieldError]:
    """Each given path (field -> value) must be absolute and without spaces."""
    return [
        FieldError(field, f"must be an absolute path without spaces, got {path!r}")
        for field, path in paths.items()
        if path is not None and (not path.startswith("/") or any(c.isspace() for c in path))
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
