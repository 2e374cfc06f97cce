"""The installed entry point: the `jobcore` command finds the kind without a change to jobcore."""

from __future__ import annotations

from controllers.kinds import installed_kinds
from torchjob import TorchJobKind


def test_the_jobcore_command_discovers_torchjob() -> None:
    found = {k.name: k for k in installed_kinds()}
    assert isinstance(found["torchjob"].kind, TorchJobKind)
    assert found["torchjob"].source.startswith("jobcore-torchjob ")
    (only,) = installed_kinds(["torchjob"])  # what `jobcore run --kinds torchjob` loads
    assert isinstance(only.kind, TorchJobKind)
