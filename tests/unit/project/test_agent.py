"""The jobcore agent (agent/, Go) builds as a static binary named by its sources' hash, and its
own Go tests and bounded fuzz runs pass: `scripts/agent.sh` and `scripts/agent.sh --test`, as
CI runs them. Either fails saying why when the Go toolchain cannot be installed."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "agent.sh"


def agent_sh(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """`scripts/agent.sh ARGS`, failing the test with its output when it fails."""
    result = subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, f"scripts/agent.sh {' '.join(args)}:\n{result.stderr}"
    return result


def has_interpreter(elf: bytes) -> bool:
    """Whether a 64-bit little-endian ELF names a dynamic loader (a PT_INTERP program header),
    which a static binary does not."""
    (phoff,) = struct.unpack_from("<Q", elf, 0x20)
    entry_size, count = struct.unpack_from("<HH", elf, 0x36)
    pt_interp = 3
    return any(
        struct.unpack_from("<I", elf, phoff + i * entry_size)[0] == pt_interp for i in range(count)
    )


def test_the_agent_builds_static_and_reports_its_source_hash() -> None:
    binary = Path(agent_sh(timeout=600).stdout.splitlines()[-1])
    assert binary.name == "jobcore-agent" and not binary.is_relative_to(ROOT)
    assert not has_interpreter(binary.read_bytes())
    version = subprocess.run([binary, "version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == binary.parent.name


@pytest.mark.timeout(900)  # go vet, go test and three fuzz targets: over a minute loaded
def test_the_agents_go_tests_and_fuzz_targets_pass() -> None:
    agent_sh("--test", timeout=900)
