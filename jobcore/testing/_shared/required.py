"""Tests that need something from the host: skipped where it is missing, failed under CI.

A real-framework test that skips turns a missing package green. Under CI (`CI=true`) the
project promises the host is set up, so a missing prerequisite fails the test with its reason.
"""

from __future__ import annotations

import os

__all__ = ["require", "under_ci"]


def under_ci() -> bool:
    """True when the environment says it is CI (`CI=true` or `CI=1`)."""
    return os.environ.get("CI", "").lower() in ("true", "1")


def require(missing: str | None) -> None:
    """Go on when `missing` is None; else skip the test with it as the reason, or fail it in CI."""
    if missing is None:
        return
    # Only a test skips or fails: the kit itself imports without pytest (`jobcore sandbox`).
    import pytest  # noqa: PLC0415

    if under_ci():
        pytest.fail(f"cannot run under CI: {missing}", pytrace=False)
    pytest.skip(missing)
