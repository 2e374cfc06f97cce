"""Admission arithmetic as Kueue's flavour assigner does it.

A pod set's requests, the first flavour of a ClusterQueue where they fit its nominal quota,
and the message when none does.

Pure functions over plain objects; the scheduler (`jobcore.testing._kueue.scheduler`) feeds
them the cluster's state.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from fractions import Fraction
from typing import Any

from jobcore._jobs.quantity import QuantityError
from jobcore._jobs.quantity import format_quantity
from jobcore._jobs.quantity import parse_quantity
from jobcore._runtime.resources import Object

Amounts = dict[str, Fraction]
Usage = dict[tuple[str, str], Fraction]
"""(flavour, resource) to an amount: what a ClusterQueue's admitted workloads hold."""

_BINARY_RESOURCES = ("memory", "ephemeral-storage", "hugepages-")


def _amounts(values: Any) -> Amounts:
    result: Amounts = {}
    for name, quantity in (values or {}).items():
        try:
            result[name] = parse_quantity(quantity)[0]
        except QuantityError:
            continue
    return result


def _container_requests(container: Object) -> Amounts:
    resources = container.get("resources") or {}
    return {**_amounts(resources.get("limits")), **_amounts(resources.get("requests"))}


def pod_requests(template: Object) -> Amounts:
    """One pod's requests, as Kueue counts them (workload.Info): its containers' requests
    (a limit where nothing is requested) summed, at least each init container's, plus the
    pod's overhead."""
    spec = template.get("spec") or {}
    total: Amounts = {}
    for container in spec.get("containers") or []:
        for name, value in _container_requests(container).items():
            total[name] = total.get(name, Fraction(0)) + value
    for container in spec.get("initContainers") or []:
        for name, value in _container_requests(container).items():
            total[name] = max(total.get(name, Fraction(0)), value)
    for name, value in _amounts(spec.get("overhead")).items():
        total[name] = total.get(name, Fraction(0)) + value
    return total


def format_amount(resource: str, value: Fraction) -> str:
    return format_quantity(value, binary=resource.startswith(_BINARY_RESOURCES))


@dataclass(frozen=True, slots=True)
class PodSetAssignment:
    name: str
    count: int
    flavors: dict[str, str]
    usage: Amounts

    def to_api(self) -> Object:
        return {
            "name": self.name,
            "flavors": dict(self.flavors),
            "resourceUsage": {r: format_amount(r, v) for r, v in sorted(self.usage.items())},
            "count": self.count,
        }


@dataclass(slots=True)
class Assignment:
    """Where each pod set would go; `preempt` when it fits only if others leave."""

    pod_sets: list[PodSetAssignment] = field(default_factory=list)
    fits: bool = True
    preempt: bool = False
    messages: list[str] = field(default_factory=list)

    def usage(self) -> Usage:
        total: Usage = {}
        for pod_set in self.pod_sets:
            for resource, value in pod_set.usage.items():
                slot = (pod_set.flavors[resource], resource)
                total[slot] = total.get(slot, Fraction(0)) + value
        return total

    def message(self) -> str:
        return "; ".join(self.messages)


@dataclass(frozen=True, slots=True)
class Flavor:
    """A flavour of a resource group, with its nominal quota per resource."""

    name: str
    nominal: Amounts
    node_labels: Mapping[str, str]
    node_taints: tuple[Object, ...]
    tolerations: tuple[Object, ...]


def resource_groups(
    cluster_queue: Object, flavors: Mapping[str, Object]
) -> list[tuple[tuple[str, ...], list[Flavor]]]:
    """The ClusterQueue's resource groups: covered resources and flavours, in order; a flavour
    with no ResourceFlavor object is left out (Kueue holds such a ClusterQueue inactive)."""
    groups = []
    for group in cluster_queue.get("spec", {}).get("resourceGroups") or []:
        found = []
        for entry in group.get("flavors") or []:
            flavor = flavors.get(entry["name"])
            if flavor is None:
                continue
            spec = flavor.get("spec") or {}
            found.append(
                Flavor(
                    name=entry["name"],
                    nominal={
                        r["name"]: parse_quantity(r["nominalQuota"])[0]
                        for r in entry.get("resources") or []
                    },
                    node_labels=spec.get("nodeLabels") or {},
                    node_taints=tuple(spec.get("nodeTaints") or ()),
                    tolerations=tuple(spec.get("tolerations") or ()),
                )
            )
        groups.append((tuple(group.get("coveredResources") or ()), found))
    return groups


def missing_flavors(cluster_queue: Object, flavors: Mapping[str, Object]) -> list[str]:
    return [
        entry["name"]
        for group in cluster_queue.get("spec", {}).get("resourceGroups") or []
        for entry in group.get("flavors") or []
        if entry["name"] not in flavors
    ]


def _tolerates(tolerations: Iterable[Object], taint: Object) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
            continue
        if toleration.get("operator") == "Exists":
            if not toleration.get("key") or toleration["key"] == taint.get("key"):
                return True
        elif toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get(
            "value", ""
        ):
            return True
    return False


def _flavor_mismatch(flavor: Flavor, template: Object) -> str | None:
    """Why the pod set cannot go to `flavor` whatever the quota: a node selector naming one
    of its node labels with another value, or an untolerated NoSchedule/NoExecute taint."""
    spec = template.get("spec") or {}
    for label, value in (spec.get("nodeSelector") or {}).items():
        if label in flavor.node_labels and flavor.node_labels[label] != value:
            return f"flavor {flavor.name} doesn't match node affinity"
    tolerations = [*(spec.get("tolerations") or []), *flavor.tolerations]
    for taint in flavor.node_taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(
            tolerations, taint
        ):
            shown = f"{taint.get('key')}: {taint.get('value', '')}"
            return f"untolerated taint {{{shown}}} in flavor {flavor.name}"
    return None


def assign(
    pod_sets: list[Object],
    counts: list[int],
    groups: list[tuple[tuple[str, ...], list[Flavor]]],
    used: Usage,
    *,
    can_preempt: bool,
) -> Assignment:
    """Each pod set's flavour per resource group: the first that fits the unused nominal
    quota (Kueue's default fungibility: try the next flavour before preempting); failing
    that, when preemption is allowed, the first whose nominal quota would hold it."""
    result = Assignment()
    own: Usage = {}
    for pod_set, count in zip(pod_sets, counts, strict=True):
        name = pod_set.get("name", "main")
        per_pod = pod_requests(pod_set.get("template") or {})
        usage = {resource: value * count for resource, value in per_pod.items() if value}
        flavors: dict[str, str] = {}
        reasons = [
            f"resource {resource} unavailable in ClusterQueue"
            for resource in sorted(usage)
            if not any(resource in covered for covered, _ in groups)
        ]
        preempting = False
        for covered, group_flavors in groups:
            wanted = {r: v for r, v in usage.items() if r in covered}
            if not wanted:
                continue
            trial = _Trial(pod_set, wanted, used, own, reasons)
            chosen = trial.choose(group_flavors, can_preempt=can_preempt)
            if chosen is None:
                break
            preempting |= trial.preempting
            flavors.update(dict.fromkeys(wanted, chosen))
        if len(flavors) < len(usage) or preempting:
            result.messages.append(
                f"couldn't assign flavors to pod set {name}: {', '.join(reasons)}"
            )
        if len(flavors) < len(usage):
            result.fits = False
            continue
        result.preempt |= preempting
        for resource, value in usage.items():
            slot = (flavors[resource], resource)
            own[slot] = own.get(slot, Fraction(0)) + value
        result.pod_sets.append(PodSetAssignment(name, count, flavors, usage))
    result.fits = result.fits and not result.preempt
    return result


@dataclass(slots=True)
class _Trial:
    """One pod set's resource group against that group's flavours, in order."""

    pod_set: Object
    wanted: Amounts
    used: Usage
    own: Usage
    reasons: list[str]
    preempting: bool = False

    def choose(self, flavors: list[Flavor], *, can_preempt: bool) -> str | None:
        preemptible: str | None = None
        for flavor in flavors:
            mismatch = _flavor_mismatch(flavor, self.pod_set.get("template") or {})
            if mismatch:
                self.reasons.append(mismatch)
                continue
            verdict = self._verdict(flavor)
            if verdict == "fit":
                return flavor.name
            if verdict == "preempt" and can_preempt and preemptible is None:
                preemptible = flavor.name
        self.preempting = preemptible is not None
        return preemptible

    def _verdict(self, flavor: Flavor) -> str:
        for resource, value in sorted(self.wanted.items()):
            slot = (flavor.name, resource)
            nominal = flavor.nominal.get(resource, Fraction(0))
            before = self.own.get(slot, Fraction(0))
            if before + value > nominal:
                self.reasons.append(
                    f"insufficient quota for {resource} in flavor {flavor.name}, previously"
                    f" considered podsets requests ({format_amount(resource, before)}) + current"
                    f" podset request ({format_amount(resource, value)}) > maximum capacity"
                    f" ({format_amount(resource, nominal)})"
                )
                return "none"
            more = self.used.get(slot, Fraction(0)) + before + value - nominal
            if more > 0:
                self.reasons.append(
                    f"insufficient unused quota for {resource} in flavor {flavor.name},"
                    f" {format_amount(resource, more)} more needed"
                )
                return "preempt"
        return "fit"


def usage_of(workloads: Iterable[Object]) -> Usage:
    """What these workloads' admissions hold, by flavour and resource."""
    total: Usage = {}
    for workload in workloads:
        admission = workload.get("status", {}).get("admission") or {}
        for assignment in admission.get("podSetAssignments") or []:
            flavors = assignment.get("flavors") or {}
            for resource, value in _amounts(assignment.get("resourceUsage")).items():
                slot = (flavors.get(resource, ""), resource)
                total[slot] = total.get(slot, Fraction(0)) + value
    return total


def fits(
    assignment: Assignment, used: Usage, groups: list[tuple[tuple[str, ...], list[Flavor]]]
) -> bool:
    """Whether the assignment fits the nominal quota beside `used`."""
    nominal = {
        (f.name, r): q for _, flavors in groups for f in flavors for r, q in f.nominal.items()
    }
    for slot, value in assignment.usage().items():
        if used.get(slot, Fraction(0)) + value > nominal.get(slot, Fraction(0)):
            return False
    return True
