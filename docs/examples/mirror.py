"""Mirror every ConfigMap labelled `example.com/mirror` into a Secret it owns."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import sys

from jobcore import CONFIGMAPS
from jobcore import SECRETS
from jobcore import AlreadyExistsError
from jobcore import Client
from jobcore import Controller
from jobcore import EventRecorder
from jobcore import Expectations
from jobcore import FuncPredicate
from jobcore import Informer
from jobcore import LeaderElectionConfig
from jobcore import LeaderElectionLost
from jobcore import Manager
from jobcore import Object
from jobcore import ObjectKey
from jobcore import Request
from jobcore import Result
from jobcore import TerminalError
from jobcore import configure_gc
from jobcore import configure_logging
from jobcore import controller_of
from jobcore import owner_reference
from jobcore import requests_for_owner

LABEL = "example.com/mirror"


def secret_name(configmap_name: str) -> str:
    return f"{configmap_name}-mirror"


@dataclasses.dataclass(frozen=True)
class MirrorReconciler:
    """Keeps `<name>-mirror` (a Secret) equal to the ConfigMap `<name>`'s data."""

    client: Client
    configmaps: Informer
    secrets: Informer
    events: EventRecorder
    expectations: Expectations

    async def reconcile(self, request: Request) -> Result:
        configmap = self.configmaps.get(request.name, request.namespace)
        if configmap is None:
            # Deleted: the Secret goes with it (garbage collection follows the ownerReference).
            self.expectations.forget(request)
            return Result()
        if not self.expectations.satisfied(request):
            return Result()  # the Secret's ADDED event will bring us back
        if configmap.get("binaryData"):
            message = "binaryData is not mirrored"
            await self.events.record(
                configmap, type="Warning", reason="Unsupported", message=message
            )
            raise TerminalError(message)  # logged, not retried until the ConfigMap changes

        data = {
            key: base64.b64encode(value.encode()).decode()
            for key, value in (configmap.get("data") or {}).items()
        }
        name = secret_name(request.name)
        secret = self.secrets.get(name, request.namespace)
        if secret is None:
            await self._create(configmap, name, data)
        elif secret.get("data") != data:
            # Never modify a cached object: build a new one. A stale resourceVersion raises
            # ConflictError, and the failed reconcile is retried with backoff.
            await self.client.update(SECRETS, {**secret, "data": data})
        return Result(requeue_after=600.0)  # look again in 10 minutes even without events

    async def _create(self, configmap: Object, name: str, data: dict[str, str]) -> None:
        key = ObjectKey.of(configmap)
        secret: Object = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": key.namespace,
                "labels": {LABEL: "true"},
                "ownerReferences": [owner_reference(configmap)],
            },
            "data": data,
        }
        self.expectations.expect_creations(key, [name])
        try:
            await self.client.create(SECRETS, secret)
        except AlreadyExistsError:
            self.expectations.creation_observed(key, name)
            return
        except Exception:
            self.expectations.creation_observed(key, name)  # it will never be observed
            raise
        await self.events.record(
            configmap, type="Normal", reason="Created", message=f"created Secret {name}"
        )


class ObserveCreations:
    """An informer handler: tells the expectations when a mirror Secret reaches the cache."""

    def __init__(self, expectations: Expectations) -> None:
        self.expectations = expectations

    def on_add(self, obj: Object) -> None:
        owner = controller_of(obj)
        if owner is not None and owner["kind"] == "ConfigMap":
            key = ObjectKey(obj["metadata"]["namespace"], owner["name"])
            self.expectations.creation_observed(key, obj["metadata"]["name"])

    def on_update(self, old: Object, new: Object) -> None:
        pass

    def on_delete(self, obj: Object) -> None:
        pass


def data_changed(old: Object, new: Object) -> bool:
    return (old.get("data"), old.get("binaryData")) != (new.get("data"), new.get("binaryData"))


def build(manager: Manager) -> Controller:
    configmaps = manager.informer(CONFIGMAPS, label_selector=LABEL)
    secrets = manager.informer(SECRETS, label_selector=LABEL)
    expectations = Expectations()
    secrets.add_handler(ObserveCreations(expectations))
    reconciler = MirrorReconciler(
        manager.client,
        configmaps,
        secrets,
        EventRecorder(manager.client, component="configmap-mirror"),
        expectations,
    )
    controller = Controller("configmap-mirror", reconciler, max_concurrent_reconciles=2)
    controller.watch(configmaps, predicates=[FuncPredicate(update_func=data_changed)])
    controller.watch(secrets, mapper=requests_for_owner(CONFIGMAPS))
    manager.add_controller(controller)
    return controller


async def main() -> int:
    configure_logging(format="auto", level="info")
    client = await Client.from_environment()
    manager = Manager(
        client,
        leader_election=LeaderElectionConfig(name="configmap-mirror", namespace="default"),
    )
    build(manager)
    configure_gc()
    manager.stop_on_signals()
    try:
        await manager.run()
    except LeaderElectionLost:
        return 1  # exit non-zero: the process restarts and competes again as a standby
    finally:
        await client.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
