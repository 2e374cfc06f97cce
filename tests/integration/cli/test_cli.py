"""The `jobcore` command as users run it: a real process against a real API server."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from jobcore import PODS
from jobcore import Client
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import crd_for
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import create_until_phase
from jobcore.testing import install_crd
from jobkinds.mpijob import MPIJobKind
from tests.support.commands import run_args
from tests.support.commands import start_jobcore
from tests.support.mpijobs import MPIJOBS
from tests.support.mpijobs import mpijob
from tests.support.mpijobs import pods_of

pytestmark = pytest.mark.integration


async def test_run_reconciles_and_stops_gracefully_on_sigterm(
    client: Client, namespace: str, kubeconfig_path: str
) -> None:
    await install_crd(client, crd_for(MPIJobKind()))
    node = SimulatedNode(client, name=f"node-{namespace}", namespace=namespace)
    node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=0.2)
    process = await start_jobcore(
        "--log-format", "json", "--log-level", "debug", *run_args(kubeconfig_path, namespace)
    )
    try:
        async with background(node.run()):
            await create_until_phase(client, MPIJOBS, mpijob(namespace, "cli"), "Succeeded")
            pods = (await client.list(PODS, namespace))["items"]
            assert {p["metadata"]["name"] for p in pods} == pods_of(["cli"])
        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        output, _ = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 0, output.decode()
        assert time.monotonic() - started < 30
        assert b'"event": "shutting down"' in output or b'"event":"shutting down"' in output
        reconciled = [line for line in output.splitlines() if b'"reconciled"' in line]
        assert (
            reconciled and b'"reconcile_id"' in reconciled[0] and b'"controller"' in reconciled[0]
        )
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


BAD_PLUGIN = '''
from jobcore import Resource
from jobcore.jobs import T9K_STATUS
from jobcore.jobs import JobSpec


class BadKind:
    """Half a kind: no children, status or interpretation, an invalid plural, and a hook
    outside its hooks."""

    resource = Resource("example.dev", "v1", "Bad", "Bad_Jobs")
    short_names = ()
    spec_model = JobSpec
    replica_types = ("worker",)
    statuspart = T9K_STATUS

    def validate(self, job):
        return []


class ClashKind:
    """Sound, but for the short name the bundled MPIJob has."""

    resource = Resource("example.dev", "v1", "Clash", "clashes")
    short_names = ("mj",)
    spec_model = JobSpec
    replica_types = ("worker",)
    child_resources = ()
    containers = {}
    debug_commands = {}
    kept_after_cleanup = ()
    printer_columns = ()

    def validate(self, job):
        return []

    def replicas(self, job):
        return {"worker": 1}

    def render(self, job, observed):
        return []

    def interpret(self, job, observed):
        raise NotImplementedError
'''


def bad_plugin(folder: Path) -> dict[str, str]:
    """A distribution with two bad kinds, found through its entry points as pip installs them;
    the environment that puts it on the path."""
    (folder / "bad_kinds.py").write_text(BAD_PLUGIN)
    info = folder / "bad_kinds-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bad-kinds\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[jobcore.jobkinds]\nbadjob = bad_kinds:BadKind\nclashjob = bad_kinds:ClashKind\n"
    )
    return {"PYTHONPATH": os.pathsep.join([str(folder), *sys.path])}


async def test_kinds_and_run_name_every_problem_of_an_invalid_plugin_kind(tmp_path: Path) -> None:
    env = bad_plugin(tmp_path)
    process = await start_jobcore("kinds", env=env)
    output, _ = await asyncio.wait_for(process.communicate(), 60)
    text = output.decode()
    assert process.returncode == 1, text
    assert "mpijob " in text and "badjob " not in text.split("NAME")[-1]
    bad = (
        "jobcore kinds: skipped, failed to load: job kind 'badjob' (bad-kinds 1.0): "
        "Bad (bad_kinds.BadKind) is not a valid job kind:\n"
        "  - missing child_resources\n"
        "  - missing containers\n"
        "  - missing debug_commands\n"
        "  - missing kept_after_cleanup\n"
        "  - missing printer_columns\n"
        "  - missing replicas\n"
        "  - missing render\n"
        "  - missing interpret\n"
        "  - plural 'Bad_Jobs' is not a lowercase DNS label (a-z, 0-9 and '-', starting with a "
        "letter, at most 63 characters)\n"
        "  - unknown attribute statuspart: a misspelt status_part?\n"
    )
    assert bad in text
    assert (
        "job kind 'clashjob' (bad-kinds 1.0): Clash (bad_kinds.ClashKind) is not a valid job "
        "kind:\n  - short name(s) ['mj'] taken by MPIJob (jobkinds.mpijob.kind.MPIJobKind)\n"
        "NAME"  # the table follows: that was its only problem
    ) in text
    process = await start_jobcore("run", "--kinds", "badjob,mpijob", env=env)
    output, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2, output.decode()
    assert "jobcore: job kind 'badjob' (bad-kinds 1.0): Bad (bad_kinds.BadKind)" in output.decode()
