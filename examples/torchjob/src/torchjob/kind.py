"""The TorchJob kind: what the schema cannot check, the children, and what the Pods mean."""

from __future__ import annotations

import re
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from jobcore import PODS
from jobcore import SERVICES
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import FieldError
from jobcore.jobs import Job
from jobcore.jobs import Observed
from jobcore.jobs import Outcome
from jobcore.jobs import PodTemplateSpec
from torchjob.children import ENV_NAMES
from torchjob.children import MASTER
from torchjob.children import WORKER
from torchjob.children import children
from torchjob.children import master_name
from torchjob.children import worker_name
from torchjob.spec import CONTAINER
from torchjob.spec import TorchJobSpec

_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


class TorchJobKind:
    """TorchJob: a master and workers running torchrun; satisfies `JobKind[TorchJobSpec]`."""

    resource: Resource = Resource("examples.jobcore.dev", "v1alpha1", "TorchJob", "torchjobs")
    short_names: Sequence[str] = ("tj",)
    spec_model: type[TorchJobSpec] = TorchJobSpec
    replica_types: Sequence[str] = (MASTER, WORKER)
    child_resources: Sequence[Resource] = (SERVICES, PODS)
    containers: Mapping[str, str] = {MASTER: CONTAINER, WORKER: CONTAINER}
    debug_commands: Mapping[str, Sequence[str] | None] = {}  # `sleep inf` in debug mode
    kept_after_cleanup: Sequence[str] = (MASTER,)  # rank 0's log, after cleanUpWorkers
    printer_columns: Sequence[Mapping[str, Any]] = (
        {"name": "Workers", "type": "integer", "jsonPath": ".spec.worker.replicas"},
    )

    def validate(self, job: Job[TorchJobSpec]) -> list[FieldError]:
        """What would otherwise fail at Pod creation or leave torchrun waiting for a rank."""
        spec = job.spec
        return [
            *_name_errors(job),
            *_template_errors("spec.master.template", spec.master.template),
            *_template_errors("spec.worker.template", spec.worker.template),
        ]

    def replicas(self, job: Job[TorchJobSpec]) -> Mapping[str, int]:
        return {MASTER: 1, WORKER: job.spec.worker.replicas}

    def render(self, job: Job[TorchJobSpec], observed: Observed) -> list[Object]:
        return children(job)

    def interpret(self, job: Job[TorchJobSpec], observed: Observed) -> Outcome:
        """The master's exit decides; a worker that fails before it fails the job.

        A worker that exits 0 first is fine: the ranks of a finished run end in any order.
        """
        names = [master_name(job)] + [worker_name(job, i) for i in range(job.spec.worker.replicas)]
        pods = {name: observed.get(PODS, name) for name in names}
        master_phase = _phase(pods[master_name(job)])
        if master_phase == "Succeeded":
            return Outcome("succeeded")
        if failed := [p for p in pods.values() if p is not None and _phase(p) == "Failed"]:
            message = (
                "The master exited with an error code."
                if master_phase == "Failed"
                else "A worker failed before the master finished."
            )
            more = f"; and {len(failed) - 3} more" if failed[3:] else ""
            replica_failure = "; ".join(_failure(p) for p in failed[:3]) + more
            return Outcome("failed", "Failed", message, replica_failure=replica_failure)
        waiting = [n for n, p in pods.items() if _phase(p) not in ("Running", "Succeeded")]
        if not waiting:
            return Outcome("running")
        shown = ", ".join(waiting[:5]) + (f" and {len(waiting) - 5} more" if waiting[5:] else "")
        return Outcome(
            "pending", "PodsStarting", f"Waiting for {len(waiting)} Pod(s) to start: {shown}."
        )


# Validation ------------------------------------------------------------------------------


def _name_errors(job: Job[TorchJobSpec]) -> list[FieldError]:
    """The job name names the Service and prefixes every Pod's hostname."""
    errors = []
    if not _DNS1035_LABEL.fullmatch(job.name):
        errors.append(
            FieldError(
                "metadata.name",
                "must be a DNS-1035 label (lowercase letters, digits and '-', starting with a "
                "letter): it names the job's headless Service",
            )
        )
    longest = worker_name(job, job.spec.worker.replicas - 1)
    if len(longest) > 63:
        errors.append(
            FieldError("metadata.name", f"is too long: hostname {longest!r} exceeds 63 characters")
        )
    return errors


def _template_errors(path: str, template: PodTemplateSpec) -> list[FieldError]:
    """The `pytorch` container, with an image and without the env the job sets; Never."""
    containers = template.spec.containers
    index = next((i for i, c in enumerate(containers) if c.name == CONTAINER), None)
    if index is None:
        return [FieldError(f"{path}.spec.containers", f'needs a container named "{CONTAINER}"')]
    container = containers[index]
    where = f"{path}.spec.containers[{index}]"
    errors = []
    if not container.image:
        errors.append(FieldError(f"{where}.image", "is required"))
    errors += [
        FieldError(f"{where}.env[{i}].name", f"{var['name']} is set by the TorchJob")
        for i, var in enumerate(container.env or ())
        if var.get("name") in ENV_NAMES
    ]
    if template.spec.restart_policy not in (None, "Never"):
        errors.append(
            FieldError(
                f"{path}.spec.restartPolicy",
                "must be Never: a restarted rank cannot rejoin the group; "
                "spec.runPolicy.restartPolicy restarts the whole job",
            )
        )
    return errors


# Reading Pods ----------------------------------------------------------------------------


def _phase(pod: Object | None) -> str | None:
    return None if pod is None else (pod.get("status") or {}).get("phase")


def _failure(pod: Object) -> str:
    """`Pod[name] exited with error code N (container c)`: the `pytorch` container's exit,
    else the first container that exited non-zero, else the Pod's reason (e.g. Evicted)."""
    name = pod["metadata"]["name"]
    status = pod.get("status") or {}
    exits = [
        (s["name"], s["state"]["terminated"])
        for s in (status.get("initContainerStatuses") or [])
        + (status.get("containerStatuses") or [])
        if "terminated" in (s.get("state") or {})
    ]
    failed = [(c, t) for c, t in exits if t.get("exitCode")]
    failed.sort(key=lambda exit: exit[0] != CONTAINER)
    if failed:
        container, terminated = failed[0]
        code = terminated["exitCode"]
        return f"Pod[{name}] exited with error code {code} (container {container})"
    reason = status.get("reason")
    return f"Pod[{name}] failed" + (f": {reason}" if reason else "")
