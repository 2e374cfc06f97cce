"""What Kueue's admission of a job's Workload changes in the job's pods.

Each pod set's assignment names a ResourceFlavor per resource; a flavour's node labels join
the pods' node selector and its tolerations their tolerations, as Kueue's job framework merges
them (pkg/podset), with Kueue's pod-set label. An admission whose node labels contradict the
pod's own node selector cannot start: Kueue fails such a Workload, and so does jobcore.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobcore._jobs.kind import REPLICA_TYPE_LABEL
from jobcore._jobs.kind import FieldError
from jobcore._jobs.kind import PodSetInfo
from jobcore._jobs.kueueapi import POD_SET_LABEL
from jobcore._runtime.errors import TerminalError
from jobcore._runtime.resources import Object


class AdmissionConflict(TerminalError):
    """The admission's node labels contradict what a pod set's pods already select; `error`
    says so, for the job's status."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.error = FieldError("spec", message)


def admitted_pod_sets(workload: Object, flavors: Mapping[str, Object]) -> dict[str, PodSetInfo]:
    """Each admitted pod set's info, by pod set name, from the Workload's admission and the
    ResourceFlavors (by name) it assigns; a flavour missing from `flavors` adds nothing."""
    sets = {s.get("name"): s for s in workload.get("spec", {}).get("podSets") or ()}
    admission = (workload.get("status") or {}).get("admission") or {}
    infos: dict[str, PodSetInfo] = {}
    for assignment in admission.get("podSetAssignments") or ():
        name = str(assignment.get("name"))
        count = assignment.get("count")
        if not isinstance(count, int):
            count = int((sets.get(name) or {}).get("count") or 0)
        selector: dict[str, str] = {}
        tolerations: list[Object] = []
        for flavor_name in dict.fromkeys((assignment.get("flavors") or {}).values()):
            spec = (flavors.get(str(flavor_name)) or {}).get("spec") or {}
            selector.update(spec.get("nodeLabels") or {})
            tolerations += [t for t in spec.get("tolerations") or () if t not in tolerations]
        infos[name] = PodSetInfo(count, selector, tolerations)
    return infos


def admit_pod(pod: Object, infos: Mapping[str, PodSetInfo]) -> None:
    """Merge its pod set's admission into `pod` (changed in place); AdmissionConflict when a
    flavour's node label contradicts the pod's own node selector."""
    labels = pod["metadata"].setdefault("labels", {})
    pod_set = str(labels.get(REPLICA_TYPE_LABEL, "")).lower()
    info = infos.get(pod_set)
    if info is None:
        return
    spec: dict[str, Any] = pod["spec"]
    selector = dict(spec.get("nodeSelector") or {})
    for key, value in info.node_selector.items():
        if selector.get(key, value) != value:
            raise AdmissionConflict(
                f"pod set {pod_set}: the admitted flavour's node label {key}={value} "
                f"contradicts the pods' nodeSelector {key}={selector[key]}"
            )
        selector[key] = value
    if selector:
        spec["nodeSelector"] = selector
    tolerations = list(spec.get("tolerations") or ())
    tolerations += [t for t in info.tolerations if t not in tolerations]
    if tolerations:
        spec["tolerations"] = tolerations
    labels[POD_SET_LABEL] = pod_set
