"""What the dashboard and `jobcore describe` make of jobs, pods and names, without a cluster:
a status no kind can read, a wide job's page, the kinds a name picks, a terminal's safety and
the Host check."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from datetime import timedelta

import pytest

from controllers.dashboard.details import PODS_SHOWN
from controllers.dashboard.details import job_details
from controllers.dashboard.server import _host_name
from controllers.dashboard.server import _loopback
from controllers.dashboard.summary import age
from controllers.dashboard.summary import summarize
from controllers.describe import printable
from controllers.kinds import KindLoadError
from controllers.kinds import find_kind
from controllers.kinds import installed_kinds
from jobcore import Object
from jobkinds.mpijob import MPIJobKind

KIND = MPIJobKind()


def _job(status: object) -> Object:
    return {"metadata": {"name": "j", "namespace": "ns", "uid": "u"}, "status": status}


def _pod(index: int, phase: str = "Running", restarts: int = 0) -> Object:
    return {
        "metadata": {
            "name": f"j-worker-{index}",
            "labels": {
                "jobcore.dev/replica-type": "worker",
                "jobcore.dev/replica-index": str(index),
            },
        },
        "status": {
            "phase": phase,
            "containerStatuses": [{"name": "w", "restartCount": restarts, "state": {}}],
        },
    }


def test_a_status_no_kind_can_read_is_shown_as_such_not_raised() -> None:
    summary = summarize(KIND, _job({"phase": "Exploded", "conditions": "not a list"}))
    assert summary.phase == "Unknown"
    assert summary.message.startswith("the stored status cannot be read: ")


def test_a_retry_backoff_counts_down_to_its_end() -> None:
    last = datetime(2026, 1, 1, tzinfo=UTC)
    status = {"lastRetryTime": "2026-01-01T00:00:00Z", "retryDelaySeconds": 30}
    summary = summarize(KIND, _job(status))
    assert summary.retrying(last + timedelta(seconds=10)) == "retry in 20s"
    assert summary.retrying(last + timedelta(seconds=31)) == ""
    assert age("2026-01-01T00:00:00Z", last + timedelta(hours=3, minutes=5)) == "3h"


def test_a_wide_jobs_page_lists_the_pods_in_trouble_first_and_counts_the_rest() -> None:
    pods = [_pod(i) for i in range(1000)]
    pods[700] = _pod(700, phase="Failed")
    pods[900] = _pod(900, restarts=2)
    details = job_details(KIND, _job({"phase": "Running"}), pods, [])
    shown = [p.name for p in details.pods]
    assert len(shown) == PODS_SHOWN and details.hidden_pods == 1000 - PODS_SHOWN
    assert {"j-worker-700", "j-worker-900"} <= set(shown)
    assert shown == sorted(shown, key=lambda name: int(name.rsplit("-", 1)[1]))  # rank order


def test_a_name_picks_one_kind_as_kubectl_would_or_says_which() -> None:
    kinds = installed_kinds(["mpijob", "kubeflow-mpijob", "horovodjob"])
    assert find_kind("mpijob", kinds).name == "mpijob"
    assert find_kind("kubeflow-mpijob", kinds).name == "kubeflow-mpijob"
    assert find_kind("HorovodJobs", kinds).name == "horovodjob"
    assert find_kind("mpijobs.kubeflow.org", kinds).name == "kubeflow-mpijob"
    with pytest.raises(KindLoadError, match="names more than one kind; say one of: "):
        find_kind("mpijobs", kinds)
    with pytest.raises(KindLoadError, match="is no installed kind"):
        find_kind("pods", kinds)


def test_control_characters_are_escaped_for_a_terminal() -> None:
    assert printable("\x1b[2Jok\tthen\x07\x9b") == "\\x1b[2Jok\tthen\\x07\\x9b"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1:8080", True),
        ("localhost:8080", True),
        ("[::1]:8080", True),
        ("127.3.4.5", True),
        ("rebound.example:8080", False),
        ("127.0.0.1.nip.io:8080", False),
        ("10.0.0.1:8080", False),
    ],
)
def test_only_loopback_hosts_pass_the_rebinding_check(host: str, loopback: bool) -> None:
    assert _loopback(_host_name(host)) is loopback
