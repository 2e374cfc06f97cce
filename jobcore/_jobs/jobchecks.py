"""Validation any kind of job with workers needs: its name, and its worker template's containers.

The job name names the workers' headless Service and prefixes their hostnames; the worker
template (`spec.worker.template`) needs the container the kind runs its program in, with an
image, and unique container names. Each returns `FieldError`s; wording that differs between
kinds is passed in by keyword.
"""

from __future__ import annotations

from typing import Any

from jobcore._jobs.kind import FieldError
from jobcore._jobs.kind import Job
from jobcore._runtime.resources import DNS1035_LABEL

CONTAINERS = "spec.worker.template.spec.containers"


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
