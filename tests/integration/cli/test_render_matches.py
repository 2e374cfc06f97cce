"""`jobcore render --workers-ready` shows what the controller creates on a real API server."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.render import PLACEHOLDER_UID
from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import SECRETS
from jobcore import SERVICES
from jobcore import Client
from jobcore import Object
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import eventually
from jobkinds.mpijob import MPIJobKind
from tests.support.fixtures import controller_fixture

pytestmark = pytest.mark.integration

KIND = MPIJobKind()
SAMPLES = Path(__file__).resolve().parents[3] / "manifests" / "samples"


controller = controller_fixture(KIND)


def contains(actual: Any, expected: Any, where: str = "") -> list[str]:
    """Where `expected` is not part of `actual`: the API server adds defaults, never removes."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: {actual!r} is not a mapping"]
        return [
            difference
            for key, value in expected.items()
            for difference in (
                contains(actual[key], value, f"{where}.{key}")
                if key in actual
                else [f"{where}.{key}: missing"]
            )
        ]
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: {actual!r} != {expected!r}"]
        return [
            difference
            for i, (a, e) in enumerate(zip(actual, expected, strict=True))
            for difference in contains(a, e, f"{where}[{i}]")
        ]
    return [] if actual == expected else [f"{where}: {actual!r} != {expected!r}"]


async def test_render_matches_what_the_controller_creates(
    client: Client, namespace: str, controller: None
) -> None:
    sample = SAMPLES / "mpijob-random-walk.yaml"
    job: Object = yaml.safe_load(sample.read_text())
    name = job["metadata"]["name"]
    node = SimulatedNode(client, name=f"n-{namespace}"[:63], namespace=namespace)
    async with background(node.run()):
        job["metadata"]["namespace"] = namespace
        created = await client.create(KIND.resource, job)

        async def launched() -> bool:
            pods = (await client.list(PODS, namespace))["items"]
            return any(p["metadata"]["name"] == f"{name}-launcher" for p in pods)

        await eventually(launched, timeout=30)

    command = ["-m", "controllers", "render", "--workers-ready", "-n", namespace, str(sample)]
    process = await asyncio.create_subprocess_exec(
        sys.executable, *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    rendered = list(yaml.safe_load_all(out))

    selector = f"{JOB_NAME_LABEL}={name}"
    actual = {
        (resource.kind, obj["metadata"]["name"]): {
            "apiVersion": resource.api_version,  # not on the items of a list
            "kind": resource.kind,
            **obj,
        }
        for resource in (SECRETS, CONFIGMAPS, SERVICES, PODS)
        for obj in (await client.list(resource, namespace, label_selector=selector))["items"]
    }
    assert sorted((o["kind"], o["metadata"]["name"]) for o in rendered) == sorted(actual)
    assert (PODS.kind, f"{name}-launcher") in actual
    uid = created["metadata"]["uid"]
    for expected in rendered:
        expected["metadata"]["ownerReferences"][0]["uid"] = uid
        assert PLACEHOLDER_UID not in str(expected)
        if expected["kind"] == SECRETS.kind:
            # a fresh keypair on every render: the same files, other keys
            expected["data"] = dict.fromkeys(expected["data"])
            current = actual[("Secret", expected["metadata"]["name"])]
            current = {**current, "data": dict.fromkeys(current["data"])}
        else:
            current = actual[(expected["kind"], expected["metadata"]["name"])]
        assert contains(current, expected) == [], expected["metadata"]["name"]
