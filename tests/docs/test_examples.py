"""The code in docs/ is the code the suite runs: each block the pages show is its file under
docs/examples/, every such file is shown, and the library page's program works.

docs/examples/sleepjob, the smallest kind, runs through the kit with the suite (its tests are
among pytest's testpaths) and is built and tested in a fresh virtualenv by test_quickstart.py.
mypy --strict checks docs/examples with the rest of the repository (pyproject's mypy files).
"""

from __future__ import annotations

import base64
import difflib
import importlib.util
import sys
from types import ModuleType

from jobcore import CONFIGMAPS
from jobcore import SECRETS
from jobcore import Client
from jobcore import Manager
from jobcore import NotFoundError
from jobcore import Object
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import wait_for_events
from tests.docs.shown import DOCS
from tests.docs.shown import EXAMPLES
from tests.docs.shown import example_files
from tests.docs.shown import shown_files


def test_each_block_shown_is_its_file() -> None:
    shown = shown_files()
    assert shown, "no page shows an example file"
    stale = []
    for path, showings in shown.items():
        assert path.is_file(), f"a page shows {path.relative_to(DOCS)}, which does not exist"
        text = path.read_text(encoding="utf-8")
        for page, block in showings:
            if block != text:
                diff = difflib.unified_diff(
                    block.splitlines(keepends=True),
                    text.splitlines(keepends=True),
                    f"{page.name}'s block",
                    str(path.relative_to(DOCS)),
                )
                stale.append("".join(diff))
    assert not stale, "blocks differ from their files:\n" + "\n".join(stale)


def test_every_example_file_is_shown() -> None:
    assert set(example_files()) - set(shown_files()) == set()


def _mirror() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mirror", EXAMPLES / "mirror.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import does: a dataclass looks its module up
    spec.loader.exec_module(module)
    return module


async def test_the_library_pages_program_mirrors_labelled_configmaps(
    client: Client, namespace: str
) -> None:
    mirror = _mirror()
    manager = Manager(client, metrics_address=None, health_address=None)
    mirror.build(manager)

    def configmap(name: str, **content: dict[str, str]) -> Object:
        metadata = {"name": name, "namespace": namespace, "labels": {mirror.LABEL: "true"}}
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, **content}

    async def mirrored(name: str) -> dict[str, str] | None:
        try:
            secret = await client.get(SECRETS, f"{name}-mirror", namespace)
        except NotFoundError:
            return None
        data: dict[str, str] = secret.get("data") or {}
        return {key: base64.b64decode(value).decode() for key, value in data.items()}

    async with background(manager.run()):
        await client.create(CONFIGMAPS, configmap("settings", data={"mode": "fast"}))
        await eventually(lambda: mirrored("settings"))
        assert await mirrored("settings") == {"mode": "fast"}

        await client.patch(CONFIGMAPS, "settings", {"data": {"mode": "slow"}}, namespace)

        async def slowed() -> bool:
            return await mirrored("settings") == {"mode": "slow"}

        await eventually(slowed)

        await client.create(CONFIGMAPS, configmap("blob", binaryData={"b": "AA=="}))
        assert "Unsupported" in await wait_for_events(
            client, namespace, "blob", "Unsupported", kind="ConfigMap"
        )
        assert await mirrored("blob") is None
