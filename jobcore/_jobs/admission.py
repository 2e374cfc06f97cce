"""What Kueue's admission of a job's Workload changes in the job's pods.

Each pod set's assignment names a ResourceFlavor per resource; a flavour's node labels join
the pods' node selector and its tolerations their tolerations, with Kueue's pod-set label;
then each admission check's pod set update adds its labels, annotations, node selector and
tolerations, as Kueue's job framework merges them (pkg/podset, getPodSetsInfoFromStatus).
Where two of them, or one and the pod's own, give a key two values, the pod set cannot
start: Kueue fails such a Workload, and so does jobcore.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from jobcore._jobs.kind import REPLICA_TYPE_LABEL
from jobcore._jobs.kind import FieldError
from jobcore._jobs.kind import PodSetInfo
from jobcore._jobs.kueueapi import POD_SET_LABEL
from jobcore._runtime.errors import TerminalError
from jobcore._runtime.resources import Object

_MAPS = (("labels", "labels"), ("annotations", "annotations"), ("node_selector", "nodeSelector"))
"""PodSetInfo's maps and the name a pod set update gives each."""


class AdmissionConflict(TerminalError):
    """The admission gives a key of a pod set's pods a value that contradicts another;
    `error` says so, for the job's status."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.error = FieldError("spec", message)


def admitted_pod_sets(workload: Object, flavors: Mapping[str, Object]) -> dict[str, PodSetInfo]:
    """Each admitted pod set's info, by pod set name, from the Workload's admission, the
    ResourceFlavors (by name) it assigns (a flavour missing from `flavors` adds nothing), and
    its admission checks' pod set updates."""
    sets = {s.get("name"): s for s in workload.get("spec", {}).get("podSets") or ()}
    status = workload.get("status") or {}
    checks = status.get("admissionChecks") or ()
    infos: dict[str, PodSetInfo] = {}
    for assignment in (status.get("admission") or {}).get("podSetAssignments") or ():
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
        info = PodSetInfo(count, selector, tolerations, labels={POD_SET_LABEL: name})
        infos[name] = _with_updates(info, name, checks)
    return infos


def _with_updates(info: PodSetInfo, name: str, checks: Sequence[Object]) -> PodSetInfo:
    """`info` with each admission check's update of pod set `name` merged in, or with the
    first contradiction as its `conflict`."""
    for check in checks:
        update = next((u for u in check.get("podSetUpdates") or () if u.get("name") == name), None)
        if update is None:
            continue
        merged: dict[str, Any] = {}
        for field, key in _MAPS:
            given: Mapping[str, str] = getattr(info, field)
            theirs: Mapping[str, str] = update.get(key) or {}
            clash = _clash(given, theirs)
            if clash is not None:
                why = (
                    f"admission check {check.get('name')}'s {key} {clash}={theirs[clash]} "
                    f"contradicts {clash}={given[clash]}, given by its flavours or another check"
                )
                return dataclasses.replace(info, conflict=why)
            merged[field] = {**given, **theirs}
        tolerations = list(info.tolerations)
        tolerations += [t for t in update.get("tolerations") or () if t not in tolerations]
        info = dataclasses.replace(info, tolerations=tolerations, **merged)
    return info


def _clash(mine: Mapping[str, str], theirs: Mapping[str, str]) -> str | None:
    """The first key to which the two maps give different values, if any."""
    return next((k for k, v in theirs.items() if mine.get(k, v) != v), None)


def admission_conflict(pod_sets: Sequence[Object], infos: Mapping[str, PodSetInfo]) -> str | None:
    """Why the admission cannot be merged into the pods of these pod sets (their templates),
    if it cannot: what `admit_pod` would refuse."""
    for pod_set in pod_sets:
        template = copy.deepcopy(pod_set.get("template") or {})
        template.setdefault("metadata", {})
        template.setdefault("spec", {})
        try:
            admit_pod(template, infos)
        except AdmissionConflict as conflict:
            return str(conflict)
    return None


def admit_pod(pod: Object, infos: Mapping[str, PodSetInfo]) -> None:
    """Merge its pod set's admission into `pod` (changed in place); AdmissionConflict when
    the admission contradicts itself or the pod's own labels, annotations or node selector."""
    meta = pod["metadata"]
    pod_set = str((meta.get("labels") or {}).get(REPLICA_TYPE_LABEL, "")).lower()
    info = infos.get(pod_set)
    if info is None:
        return
    if info.conflict is not None:
        raise AdmissionConflict(f"pod set {pod_set}: {info.conflict}")
    spec: dict[str, Any] = pod["spec"]
    places = {"labels": meta, "annotations": meta, "nodeSelector": spec}
    for field, key in _MAPS:
        own = dict(places[key].get(key) or {})
        given: Mapping[str, str] = getattr(info, field)
        # Kueue's own pod-set label is its to set, whatever an earlier admission left.
        clash = _clash({k: v for k, v in own.items() if k != POD_SET_LABEL}, given)
        if clash is not None:
            raise AdmissionConflict(
                f"pod set {pod_set}: the admission's {key} {clash}={given[clash]} "
                f"contradicts the pods' {key} {clash}={own[clash]}"
            )
        if own or given:
            places[key][key] = {**own, **given}
    tolerations = list(spec.get("tolerations") or ())
    tolerations += [t for t in info.tolerations if t not in tolerations]
    if tolerations:
        spec["tolerations"] = tolerations
