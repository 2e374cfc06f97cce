"""Kueue's CRDs (kueue.x-k8s.io/v1beta2), written from its API reference, for a test server.

Workload, LocalQueue, ClusterQueue, ResourceFlavor, WorkloadPriorityClass and AdmissionCheck.

They install on Kubernetes 1.20 (apiextensions.k8s.io/v1, no CEL): Kueue's CEL rules
(`x-kubernetes-validations`) are left out, so what its webhook and those rules refuse (a
queueName changed while admitted, podSets changed) is accepted here.
"""

from __future__ import annotations

import dataclasses

from jobcore._runtime.client import Client
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import Resource
from jobcore.testing._kueue import api
from jobcore.testing._kueue.schemas import BOOLEAN
from jobcore.testing._kueue.schemas import CONDITIONS
from jobcore.testing._kueue.schemas import INT32
from jobcore.testing._kueue.schemas import LABEL_SELECTOR
from jobcore.testing._kueue.schemas import NAME
from jobcore.testing._kueue.schemas import OPEN
from jobcore.testing._kueue.schemas import POD_TEMPLATE
from jobcore.testing._kueue.schemas import QUANTITY
from jobcore.testing._kueue.schemas import RESOURCE_LIST
from jobcore.testing._kueue.schemas import STRING
from jobcore.testing._kueue.schemas import STRING_MAP
from jobcore.testing._kueue.schemas import SUBDOMAIN
from jobcore.testing._kueue.schemas import TAINT
from jobcore.testing._kueue.schemas import TIME
from jobcore.testing._kueue.schemas import TOLERATION
from jobcore.testing._kueue.schemas import Schema
from jobcore.testing._kueue.schemas import array
from jobcore.testing._kueue.schemas import enum
from jobcore.testing._kueue.schemas import map_list
from jobcore.testing._kueue.schemas import obj
from jobcore.testing._shared.jobs import install_crd
from jobcore.testing._shared.jobs import schemaless_crd

_STOP_POLICY = enum("None", "Hold", "HoldAndDrain", default="None")
_NAMED = obj({"name": STRING}, required=("name",))

_POD_SET = obj(
    {
        "name": {**NAME, "default": "main"},
        "template": POD_TEMPLATE,
        "count": {**INT32, "minimum": 0, "default": 1},
        "minCount": {**INT32, "minimum": 1},
        "topologyRequest": OPEN,
    },
    required=("template",),
)
_POD_SET_ASSIGNMENT = obj(
    {
        "name": {**NAME, "default": "main"},
        "flavors": STRING_MAP,
        "resourceUsage": RESOURCE_LIST,
        "count": {**INT32, "minimum": 0},
        "topologyAssignment": OPEN,
        "delayedTopologyRequest": enum("Pending", "Ready"),
    }
)
_POD_SET_UPDATE = obj(
    {
        "name": NAME,
        "labels": STRING_MAP,
        "annotations": STRING_MAP,
        "nodeSelector": STRING_MAP,
        "tolerations": array(TOLERATION, maxItems=8),
    },
    required=("name",),
)
_ADMISSION_CHECK_STATE = obj(
    {
        "name": {"type": "string", "minLength": 1, "maxLength": 316},
        "state": enum("Pending", "Ready", "Retry", "Rejected"),
        "lastTransitionTime": TIME,
        "message": {"type": "string", "maxLength": 32768},
        "requeueAfterSeconds": {**INT32, "minimum": 0},
        "retryCount": {**INT32, "minimum": 0},
        "podSetUpdates": array(_POD_SET_UPDATE, maxItems=18),
    },
    required=("name", "state", "lastTransitionTime", "message"),
)

WORKLOAD_SPEC = obj(
    {
        "podSets": map_list(_POD_SET, "name", max_items=18) | {"minItems": 1},
        "queueName": SUBDOMAIN,
        "priorityClassRef": obj(
            {
                "group": enum("kueue.x-k8s.io", "scheduling.k8s.io"),
                "kind": enum("WorkloadPriorityClass", "PriorityClass"),
                "name": SUBDOMAIN | {"minLength": 1},
            },
            required=("group", "kind", "name"),
        ),
        "priority": INT32,
        "active": {**BOOLEAN, "default": True},
        "maximumExecutionTimeSeconds": {**INT32, "minimum": 1},
        "preemptionGates": map_list(_NAMED, "name", max_items=8),
    }
)
WORKLOAD_STATUS = obj(
    {
        "conditions": CONDITIONS,
        "admission": obj(
            {
                "clusterQueue": STRING,
                "podSetAssignments": map_list(_POD_SET_ASSIGNMENT, "name", max_items=18),
            },
            required=("clusterQueue", "podSetAssignments"),
        ),
        "requeueState": obj({"count": {**INT32, "minimum": 0}, "requeueAt": TIME}),
        "reclaimablePods": map_list(
            obj({"name": NAME, "count": {**INT32, "minimum": 0}}, required=("name", "count")),
            "name",
            max_items=18,
        ),
        "admissionChecks": map_list(_ADMISSION_CHECK_STATE, "name", max_items=8),
        "resourceRequests": map_list(
            obj({"name": NAME, "resources": RESOURCE_LIST}, required=("name",)),
            "name",
            max_items=18,
        ),
        "accumulatedPastExecutionTimeSeconds": INT32,
        "schedulingStats": obj(
            {"evictions": array(obj({"reason": STRING, "underlyingCause": STRING, "count": INT32}))}
        ),
        "nominatedClusterNames": array(STRING, maxItems=20),
        "clusterName": STRING,
        "unhealthyNodes": map_list(_NAMED, "name", max_items=8),
        "preemptionGates": map_list(
            obj(
                {"name": STRING, "position": enum("Closed", "Open"), "lastTransitionTime": TIME},
                required=("name",),
            ),
            "name",
            max_items=8,
        ),
    }
)

_FLAVOR_USAGE = obj(
    {
        "name": STRING,
        "resources": array(obj({"name": STRING, "total": QUANTITY, "borrowed": QUANTITY})),
    }
)
_QUEUE_STATUS: dict[str, Schema] = {
    "conditions": CONDITIONS,
    "pendingWorkloads": INT32,
    "reservingWorkloads": INT32,
    "admittedWorkloads": INT32,
    "flavorsReservation": array(_FLAVOR_USAGE),
    "flavorsUsage": array(_FLAVOR_USAGE),
    "fairSharing": OPEN,
}
CLUSTER_QUEUE_SPEC = obj(
    {
        "resourceGroups": array(
            obj(
                {
                    "coveredResources": array(STRING, maxItems=64),
                    "flavors": array(
                        obj(
                            {
                                "name": STRING,
                                "resources": array(
                                    obj(
                                        {
                                            "name": STRING,
                                            "nominalQuota": QUANTITY,
                                            "borrowingLimit": QUANTITY,
                                            "lendingLimit": QUANTITY,
                                        },
                                        required=("name", "nominalQuota"),
                                    ),
                                    maxItems=64,
                                ),
                            },
                            required=("name", "resources"),
                        ),
                        maxItems=64,
                    ),
                },
                required=("coveredResources", "flavors"),
            ),
            maxItems=16,
        ),
        "cohortName": STRING,
        "queueingStrategy": enum("StrictFIFO", "BestEffortFIFO", default="BestEffortFIFO"),
        "namespaceSelector": LABEL_SELECTOR,
        "flavorFungibility": obj(
            {
                "whenCanBorrow": enum("MayStopSearch", "TryNextFlavor", default="MayStopSearch"),
                "whenCanPreempt": enum("MayStopSearch", "TryNextFlavor", default="TryNextFlavor"),
                "preference": enum("BorrowingOverPreemption", "PreemptionOverBorrowing"),
            },
            extra={"default": {}},
        ),
        "preemption": obj(
            {
                "reclaimWithinCohort": enum("Never", "LowerPriority", "Any", default="Never"),
                "borrowWithinCohort": obj(
                    {
                        "policy": enum("Never", "LowerPriority", default="Never"),
                        "maxPriorityThreshold": INT32,
                    },
                    extra={"default": {}},
                ),
                "withinClusterQueue": enum(
                    "Never", "LowerPriority", "LowerOrNewerEqualPriority", default="Never"
                ),
            },
            extra={"default": {}},
        ),
        "admissionChecksStrategy": obj(
            {
                "admissionChecks": array(
                    obj({"name": STRING, "onFlavors": array(STRING)}, required=("name",))
                )
            }
        ),
        "stopPolicy": _STOP_POLICY,
        "fairSharing": obj({"weight": QUANTITY}),
        "admissionScope": OPEN,
        "concurrentAdmissionPolicy": OPEN,
    }
)
LOCAL_QUEUE_SPEC = obj(
    {
        "clusterQueue": SUBDOMAIN,
        "stopPolicy": _STOP_POLICY,
        "fairSharing": obj({"weight": QUANTITY}),
    }
)
ADMISSION_CHECK_SPEC = obj(
    {
        "controllerName": STRING,
        "parameters": obj({"apiGroup": STRING, "kind": STRING, "name": STRING}),
    },
    required=("controllerName",),
)
RESOURCE_FLAVOR_SPEC = obj(
    {
        "nodeLabels": STRING_MAP,
        "nodeTaints": array(TAINT, maxItems=8),
        "tolerations": array(TOLERATION, maxItems=8),
        "topologyName": STRING,
    }
)


def _column(name: str, path: str, kind: str = "string") -> Object:
    return {"name": name, "jsonPath": path, "type": kind}


def _crd(
    resource: Resource,
    properties: dict[str, Schema],
    *,
    short_names: list[str],
    columns: list[Object],
    status: bool,
) -> Object:
    crd = schemaless_crd(dataclasses.replace(resource, namespaced=True))
    crd["spec"]["scope"] = "Namespaced" if resource.namespaced else "Cluster"
    crd["spec"]["names"]["shortNames"] = short_names
    (version,) = crd["spec"]["versions"]
    envelope = {"apiVersion": STRING, "kind": STRING, "metadata": {"type": "object"}}
    version["schema"] = {"openAPIV3Schema": obj(envelope | properties)}
    version["additionalPrinterColumns"] = columns
    if status:
        version["subresources"] = {"status": {}}
    return crd


def kueue_crds() -> list[Object]:
    """The CRDs of the six Kueue kinds the stand-in, a job integration and a test playing an
    admission check's controller use."""
    age = _column("Age", ".metadata.creationTimestamp", "date")
    return [
        _crd(
            api.WORKLOADS,
            {"spec": WORKLOAD_SPEC, "status": WORKLOAD_STATUS},
            short_names=["kwl", "kueueworkload", "kueueworkloads"],
            columns=[
                _column("Queue", ".spec.queueName"),
                _column("Reserved in", ".status.admission.clusterQueue"),
                _column("Admitted", ".status.conditions[?(@.type=='Admitted')].status"),
                _column("Finished", ".status.conditions[?(@.type=='Finished')].status"),
                age,
            ],
            status=True,
        ),
        _crd(
            api.LOCAL_QUEUES,
            {"spec": LOCAL_QUEUE_SPEC, "status": obj(_QUEUE_STATUS)},
            short_names=["queue", "queues", "lq"],
            columns=[
                _column("ClusterQueue", ".spec.clusterQueue"),
                _column("Pending Workloads", ".status.pendingWorkloads", "integer"),
                _column("Admitted Workloads", ".status.admittedWorkloads", "integer"),
            ],
            status=True,
        ),
        _crd(
            api.CLUSTER_QUEUES,
            {"spec": CLUSTER_QUEUE_SPEC, "status": obj(_QUEUE_STATUS)},
            short_names=["cq"],
            columns=[
                _column("Cohort", ".spec.cohortName"),
                _column("Pending Workloads", ".status.pendingWorkloads", "integer"),
            ],
            status=True,
        ),
        _crd(
            api.RESOURCE_FLAVORS,
            {"spec": RESOURCE_FLAVOR_SPEC},
            short_names=["flavor", "flavors", "rf"],
            columns=[age],
            status=False,
        ),
        _crd(
            api.WORKLOAD_PRIORITY_CLASSES,
            {"value": INT32, "description": STRING},
            short_names=["wpc"],
            columns=[_column("Value", ".value", "integer")],
            status=False,
        ),
        _crd(
            api.ADMISSION_CHECKS,
            {"spec": ADMISSION_CHECK_SPEC, "status": obj({"conditions": CONDITIONS})},
            short_names=["ac"],
            columns=[_column("Controller", ".spec.controllerName"), age],
            status=True,
        ),
    ]


async def install_kueue_crds(client: Client) -> None:
    """Install Kueue's CRDs (if new) and wait until the API server serves them."""
    for crd in kueue_crds():
        await install_crd(client, crd)
