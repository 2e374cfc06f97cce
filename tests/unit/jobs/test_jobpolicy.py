"""The run policy's rules on plain pods and a fixed clock: retries, timeouts, TTL, clean-up."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

import pytest

from jobcore import Object
from jobcore._jobs.policy import deadline_left
from jobcore._jobs.policy import doomed_after_end
from jobcore._jobs.policy import pending_too_long
from jobcore._jobs.policy import ttl_left
from jobcore._jobs.retries import failed_pods
from jobcore._jobs.retries import should_retry
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import JobStatus
from jobcore.jobs import RunPolicy

T0 = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)
NOW = T0.timestamp() + 100
CONTAINERS = {"launcher": "launcher", "worker": "worker"}


def at(seconds: float) -> str:
    """The API timestamp `seconds` after T0."""
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def policy(**fields: Any) -> RunPolicy:
    return RunPolicy.model_validate(fields)


def pod(
    name: str, replica_type: str = "worker", phase: str | None = "Running", **status: Any
) -> Object:
    return {
        "metadata": {
            "name": name,
            "labels": {REPLICA_TYPE_LABEL: replica_type},
            "creationTimestamp": at(0),
        },
        "status": {"phase": phase, **status} if phase else {},
    }


def exited(name: str, code: int, finished: float = 0) -> dict[str, Any]:
    return {"name": name, "state": {"terminated": {"exitCode": code, "finishedAt": at(finished)}}}


def failed(name: str, code: int | None, finished: float = 0, **status: Any) -> Object:
    """A failed worker whose main container exited `code` (None: never ran) after a sidecar."""
    statuses = [exited("sidecar", 0, finished)]
    if code is not None:
        statuses.append(exited("worker", code, finished))
    return pod(name, phase="Failed", containerStatuses=statuses, **status)


# Retries ---------------------------------------------------------------------------------


def test_failed_pods_read_the_main_container_of_failed_pods_only() -> None:
    sidecar_failed = pod(
        "w-2", phase="Failed", containerStatuses=[exited("sidecar", 2), exited("other", 0)]
    )
    pods = [failed("w-0", 137, finished=5), pod("w-1"), sidecar_failed]
    found = failed_pods(pods, CONTAINERS)
    assert [(f.pod, f.exit_code, f.finished_at) for f in found] == [
        ("w-0", 137, at(5)),
        ("w-2", 2, at(0)),
    ]


@pytest.mark.parametrize(
    ("restart_policy", "code", "retried"),
    [
        ("Never", 137, False),
        ("OnFailure", 1, True),
        ("OnFailure", 137, True),
        ("ExitCode", 1, False),
        ("ExitCode", 127, False),
        ("ExitCode", 128, True),
        ("ExitCode", 137, True),
        ("ExitCode", 143, True),
    ],
)
def test_restart_policy_decides_by_exit_code(restart_policy: str, code: int, retried: bool) -> None:
    failures = failed_pods([failed("w-0", code)], CONTAINERS)
    assert should_retry(policy(restartPolicy=restart_policy), failures) is retried


def test_a_lost_pod_is_retried_whatever_its_exit_code() -> None:
    for lost in (
        failed("w-0", None, reason="Evicted"),
        failed("w-0", 1, reason="Evicted"),
        failed("w-0", 1, reason="NodeLost"),
    ):
        failures = failed_pods([lost], CONTAINERS)
        assert should_retry(policy(restartPolicy="ExitCode"), failures)
        assert not should_retry(policy(restartPolicy="Never"), failures)


def test_the_earliest_failure_decides() -> None:
    exit_code = policy(restartPolicy="ExitCode")
    bug_first = [failed("w-0", 1, finished=1), failed("w-1", 137, finished=2)]
    assert not should_retry(exit_code, failed_pods(bug_first, CONTAINERS))
    kill_first = [failed("w-0", 1, finished=2), failed("w-1", 137, finished=1)]
    assert should_retry(exit_code, failed_pods(kill_first, CONTAINERS))


def test_a_failure_without_failed_pods_is_retried_only_on_failure() -> None:
    assert should_retry(policy(restartPolicy="OnFailure"), [])
    assert not should_retry(policy(restartPolicy="ExitCode"), [])
    assert not should_retry(policy(restartPolicy="Never"), [])


# Clock -----------------------------------------------------------------------------------


def created(obj: Object, seconds: float) -> Object:
    obj["metadata"]["creationTimestamp"] = at(seconds)
    return obj


def test_pending_too_long_names_the_pod_or_says_when_to_look_again() -> None:
    limit = policy(pendingTimeoutSeconds=120)
    fresh = created(pod("fresh", phase="Pending"), 30)  # 50s left
    unscheduled = created(pod("unscheduled", phase=None), 0)  # no status yet: 20s left
    stale = created(pod("stale", phase="Pending"), -50)
    running = created(pod("running"), -1000)
    deleting = created(pod("deleting", phase="Pending"), -1000)
    deleting["metadata"]["deletionTimestamp"] = at(90)
    assert pending_too_long(limit, [unscheduled, fresh], NOW) == (None, 20)
    assert pending_too_long(limit, [fresh, stale], NOW) == ("stale", None)
    assert pending_too_long(limit, [fresh, running, deleting], NOW) == (None, 50)
    assert pending_too_long(limit, [running], NOW) == (None, None)
    assert pending_too_long(policy(), [stale], NOW) == (None, None)


def test_deadline_left_counts_from_creation() -> None:
    assert deadline_left(policy(), at(0), NOW) is None
    assert deadline_left(policy(activeDeadlineSeconds=300), at(0), NOW) == 200
    assert deadline_left(policy(activeDeadlineSeconds=60), at(0), NOW) == -40


def ended(phase: str, condition: str, when: float) -> JobStatus:
    return JobStatus.model_validate(
        {
            "phase": phase,
            "conditions": [
                {"type": condition, "status": "True", "lastTransitionTime": at(when)},
            ],
        }
    )


def test_ttl_left_counts_from_the_end() -> None:
    ttl = policy(ttlSecondsAfterFinished=60)
    assert ttl_left(ttl, ended("Succeeded", "Completed", 10), NOW) == -30
    assert ttl_left(ttl, ended("Failed", "Failed", 70), NOW) == 30
    assert ttl_left(ttl, JobStatus.model_validate({"phase": "Running"}), NOW) is None
    assert ttl_left(policy(), ended("Succeeded", "Completed", 10), NOW) is None


# Clean-up --------------------------------------------------------------------------------


def test_clean_up_policies_choose_the_pods_to_delete() -> None:
    pods = {
        "l": pod("l", "launcher", phase="Succeeded"),
        "w-0": pod("w-0", phase="Running"),
        "w-1": pod("w-1", phase="Failed"),
        "w-2": pod("w-2", phase="Pending"),
        "w-3": pod("w-3", phase=None),
    }
    workers = {"w-0", "w-1", "w-2", "w-3"}

    def doomed(**fields: Any) -> set[str]:
        return doomed_after_end(policy(**fields), pods, ["launcher"])

    assert doomed() == set()
    assert doomed(cleanUpPolicy="None") == set()
    assert doomed(cleanUpWorkers=True) == workers
    assert doomed(cleanUpPolicy="Unfinished") == {"w-0", "w-2", "w-3"}
    assert doomed(cleanUpPolicy="All") == {"l", *workers}
    running_launcher = {**pods, "l": pod("l", "launcher")}
    assert doomed_after_end(policy(cleanUpWorkers=True), running_launcher, ["launcher"]) == workers
    assert doomed_after_end(
        policy(cleanUpWorkers=True, cleanUpPolicy="Unfinished"), running_launcher, ["launcher"]
    ) == {"l", *workers}


def test_a_failed_sidecar_counts_when_the_main_container_exited_0() -> None:
    sidecar_killed = pod(
        "w-0", phase="Failed", containerStatuses=[exited("worker", 0), exited("sidecar", 137)]
    )
    [found] = failed_pods([sidecar_killed], CONTAINERS)
    assert found.exit_code == 137
    assert should_retry(policy(restartPolicy="ExitCode"), [found])


def test_a_pod_lost_without_a_finish_time_does_not_outrank_a_timed_failure() -> None:
    bug = failed("w-0", 1, finished=1)
    lost = pod("w-1", phase="Failed", reason="UnexpectedAdmissionError")
    failures = failed_pods([bug, lost], CONTAINERS)
    assert not should_retry(policy(restartPolicy="ExitCode"), failures)
    assert should_retry(policy(restartPolicy="ExitCode"), failed_pods([lost], CONTAINERS))
