"""The security settings of every pod jobcore deploys (the controller, the dashboard): Pod
Security's "restricted" profile. Each call makes new dicts, so that YAML written from several
objects holds no anchors."""

from __future__ import annotations

from typing import Any


def restricted_pod() -> dict[str, Any]:
    """Non-root, and the runtime's seccomp profile. The image's USER 65532:65532, group
    included: with runAsUser alone, the runtime takes the group from the image's /etc/passwd,
    which has no 65532, and runs the process in root's group 0."""
    return {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def restricted_container() -> dict[str, Any]:
    """No privilege escalation, no capability, a read-only root file system."""
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
