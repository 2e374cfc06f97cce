"""Kueue's CRDs and the Kueue stand-in on the real API server: Workloads created directly, as a job
integration creates them, admitted, preempted, evicted and requeued as Kueue does.

Where Kueue leaves a step to the job integration (clearing an evicted Workload's admission
once its job has stopped, setting PodsReady, marking it Finished), the test takes that step
itself, with the conditions Kueue's jobframework writes.
"""

from __future__ import annotations

from typing import Any

import pytest

from jobcore import Client
from jobcore import Object
from jobcore.testing import KUEUE_WORKLOADS
from jobcore.testing import install_kueue_crds

pytestmark = pytest.mark.integration

TEMPLATE = {"spec": {"containers": [{"name": "c", "image": "i", "args": ["kept"]}]}}
"""A pod template: the fields the CRD does not type are kept as written."""


def workload_body(namespace: str, name: str, spec: Object, **meta: Any) -> Object:
    return {
        "apiVersion": KUEUE_WORKLOADS.api_version,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "spec": spec,
    }


async def test_the_crds_default_and_prune_as_kueues_do(client: Client, namespace: str) -> None:
    await install_kueue_crds(client)
    spec = {"queueName": "team", "unknown": 1, "podSets": [{"template": TEMPLATE}]}
    created = await client.create(KUEUE_WORKLOADS, workload_body(namespace, "plain", spec))
    assert created["spec"]["active"] is True
    assert "unknown" not in created["spec"]
    assert {k: created["spec"]["podSets"][0][k] for k in ("name", "count")} == {
        "name": "main",
        "count": 1,
    }
    assert created["spec"]["podSets"][0]["template"] == TEMPLATE
