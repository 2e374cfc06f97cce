"""The `controller` fixture of the end-to-end tests, from one factory: a kind's controller for
the test's namespace, started and stopped by the kit's `job_controller`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from controllers.sandbox import frameworks
from jobcore import Client
from jobcore import Controller
from jobcore.jobs import JobKind
from jobcore.testing import job_controller
from jobcore.testing import require


def controller_fixture(
    kind: JobKind[Any], *, framework: str | None = None, **options: Any
) -> object:
    """A fixture named `controller`, for a test module to assign to that name: `kind`'s
    controller scoped to the test's namespace, `options` passed on to `add_job_controller`
    (`retry_backoff`, `gang_scheduler`). With `framework`, the test first skips (fails under
    CI) when scripts/frameworks.sh did not install that framework."""

    @pytest.fixture(name="controller")
    async def controller(client: Client, namespace: str) -> AsyncIterator[Controller]:
        if framework is not None:
            require(frameworks.missing(framework))
        async with job_controller(client, kind, namespace=namespace, **options) as running:
            yield running

    return controller
