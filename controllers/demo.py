"""A demo job kind, `DemoJob`, that runs N pods to completion: the sandbox's placeholder kind."""

from __future__ import annotations

from typing import Any

from jobcore import (
    CONTROLLER_UID_INDEX,
    PODS,
    AlreadyExistsError,
    Client,
    Controller,
    EventRecorder,
    Expectations,
    GenerationChanged,
    Informer,
    Manager,
    Object,
    ObjectKey,
    Request,
    Resource,
    Result,
    owner_reference,
    requests_for_owner,
)

DEMOJOBS = Resource("demo.jobcore.dev", "v1alpha1", "DemoJob", "demojobs")
JOB_LABEL = "demo.jobcore.dev/job"

CRD: Object = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{DEMOJOBS.plural}.{DEMOJOBS.group}"},
    "spec": {
        "group": DEMOJOBS.group,
        "names": {"kind": "DemoJob", "plural": "demojobs", "singular": "demojob"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": DEMOJOBS.version,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                    {"name": "Succeeded", "type": "integer", "jsonPath": ".status.succeeded"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["replicas", "image"],
                                "properties": {
                                    "replicas": {"type": "integer", "minimum": 1},
                                    "image": {"type": "string"},
                                    "command": {"type": "array", "items": {"type": "string"}},
                                },
                            },
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}


def _phase(pods: list[Object], replicas: int) -> str:
    phases = [pod.get("status", {}).get("phase", "Pending") for pod in pods]
    if "Failed" in phases:
        return "Failed"
    if len(pods) == replicas and all(phase == "Succeeded" for phase in phases):
        return "Succeeded"
    if any(phase in ("Running", "Succeeded") for phase in phases):
        return "Running"
    return "Pending"


class DemoJobReconciler:
    """Creates `spec.replicas` pods per DemoJob and sums their phases into its status."""

    def __init__(self, client: Client, jobs: Informer, pods: Informer) -> None:
        self.client = client
        self.jobs = jobs
        self.pods = pods
        self.events = EventRecorder(client, component="demojob-controller")
        self.expectations = Expectations()
        pods.add_handler(self)

    # Pod events confirm our own creations, so a stale cache never creates a pod twice.
    def on_add(self, obj: Object) -> None:
        owner = obj["metadata"].get("labels", {}).get(JOB_LABEL)
        if owner:
            key = ObjectKey(obj["metadata"]["namespace"], owner)
            self.expectations.creation_observed(key, obj["metadata"]["name"])

    def on_update(self, old: Object, new: Object) -> None:
        pass

    def on_delete(self, obj: Object) -> None:
        pass

    async def reconcile(self, request: Request) -> Result:
        job = self.jobs.get(request.name, request.namespace)
        if job is None:
            self.expectations.forget(request)
            return Result()
        if not self.expectations.satisfied(request):
            # The pending pods' events bring us back; the requeue covers pods never observed.
            return Result(requeue_after=5.0)
        spec = job["spec"]
        pods = self.pods.by_index(CONTROLLER_UID_INDEX, job["metadata"]["uid"])
        existing = {pod["metadata"]["name"] for pod in pods}
        wanted = [f"{request.name}-{i}" for i in range(spec["replicas"])]
        missing = [name for name in wanted if name not in existing]
        if missing and job.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
            self.expectations.expect_creations(request, missing)
            for name in missing:
                await self._create_pod(job, name)
        await self._update_status(job, pods, spec["replicas"])
        return Result()

    async def _create_pod(self, job: Object, name: str) -> None:
        meta = job["metadata"]
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": meta["namespace"],
                "labels": {JOB_LABEL: meta["name"]},
                "ownerReferences": [owner_reference(job)],
            },
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": job["spec"]["image"],
                        "command": job["spec"].get("command") or ["true"],
                    }
                ],
            },
        }
        try:
            await self.client.create(PODS, pod)
        except AlreadyExistsError:
            self.expectations.creation_observed(ObjectKey.of(job), name)
        except Exception:
            # The pod will never be observed: stop waiting for it, and let the retry recreate it.
            self.expectations.creation_observed(ObjectKey.of(job), name)
            raise

    async def _update_status(self, job: Object, pods: list[Object], replicas: int) -> None:
        phases = [pod.get("status", {}).get("phase") for pod in pods]
        status: dict[str, Any] = {
            "phase": _phase(pods, replicas),
            "running": phases.count("Running"),
            "succeeded": phases.count("Succeeded"),
            "failed": phases.count("Failed"),
        }
        old = job.get("status") or {}
        if status == old:
            return
        meta = job["metadata"]
        # A merge patch of the status subresource: no resourceVersion, so a cache that lags
        # behind our own last write cannot make it conflict.
        await self.client.patch(
            DEMOJOBS, meta["name"], {"status": status}, meta["namespace"], subresource="status"
        )
        if status["phase"] != old.get("phase"):
            phase = str(status["phase"])
            await self.events.record(
                job,
                type="Warning" if phase == "Failed" else "Normal",
                reason=phase,
                message=f"DemoJob is {phase}",
            )


def add_demo_controller(manager: Manager, *, namespace: str | None = None) -> Controller:
    """Wire the DemoJob controller into `manager`: DemoJobs and the pods they own."""
    jobs = manager.informer(DEMOJOBS, namespace=namespace)
    pods = manager.informer(PODS, namespace=namespace, label_selector=JOB_LABEL)
    reconciler = DemoJobReconciler(manager.client, jobs, pods)
    controller = Controller("demojob", reconciler, max_concurrent_reconciles=4)
    controller.watch(jobs, predicates=[GenerationChanged()])
    controller.watch(pods, mapper=requests_for_owner(DEMOJOBS))
    manager.add_controller(controller)
    return controller
