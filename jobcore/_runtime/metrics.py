"""Prometheus metrics, named and labelled as controller-runtime names them for dashboards."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from prometheus_client import Counter
from prometheus_client import Gauge
from prometheus_client import Histogram

REGISTRY = CollectorRegistry(auto_describe=True)
"""The registry `/metrics` serves; job kinds register their own metrics here too."""

_LATENCY_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.35,
    0.4,
    0.45,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
    1.0,
    1.25,
    1.5,
    1.75,
    2.0,
    2.5,
    3.0,
    3.5,
    4.0,
    4.5,
    5,
    6,
    7,
    8,
    9,
    10,
    15,
    20,
    25,
    30,
    40,
    50,
    60,
)
_QUEUE_BUCKETS = tuple(10.0**exponent for exponent in range(-8, 2))


def _counter(name: str, documentation: str, *labels: str) -> Counter:
    return Counter(name, documentation, labels, registry=REGISTRY)


def _gauge(name: str, documentation: str, *labels: str) -> Gauge:
    return Gauge(name, documentation, labels, registry=REGISTRY)


def _histogram(
    name: str, documentation: str, *labels: str, buckets: tuple[float, ...]
) -> Histogram:
    return Histogram(name, documentation, labels, buckets=buckets, registry=REGISTRY)


reconcile_total = _counter(
    "controller_runtime_reconcile_total",
    "Total number of reconciliations per controller.",
    "controller",
    "result",
)
reconcile_errors_total = _counter(
    "controller_runtime_reconcile_errors_total",
    "Total number of reconciliation errors per controller.",
    "controller",
)
terminal_reconcile_errors_total = _counter(
    "controller_runtime_terminal_reconcile_errors_total",
    "Total number of terminal reconciliation errors per controller.",
    "controller",
)
reconcile_time_seconds = _histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller.",
    "controller",
    buckets=_LATENCY_BUCKETS,
)
max_concurrent_reconciles = _gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller.",
    "controller",
)
active_workers = _gauge(
    "controller_runtime_active_workers",
    "Number of currently used workers per controller.",
    "controller",
)

workqueue_depth = _gauge("workqueue_depth", "Current depth of workqueue.", "name")
workqueue_adds_total = _counter(
    "workqueue_adds_total", "Total number of adds handled by workqueue.", "name"
)
workqueue_queue_duration_seconds = _histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested.",
    "name",
    buckets=_QUEUE_BUCKETS,
)
workqueue_work_duration_seconds = _histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
    "name",
    buckets=_QUEUE_BUCKETS,
)
workqueue_retries_total = _counter(
    "workqueue_retries_total", "Total number of retries handled by workqueue.", "name"
)
workqueue_unfinished_work_seconds = _gauge(
    "workqueue_unfinished_work_seconds",
    "How many seconds of work has been done that is in progress and hasn't been observed by "
    "work_duration.",
    "name",
)
workqueue_longest_running_processor_seconds = _gauge(
    "workqueue_longest_running_processor_seconds",
    "How many seconds has the longest running processor for workqueue been running.",
    "name",
)

leader_election_master_status = _gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
    "1 indicates master. 'name' is the string used to identify the lease.",
    "name",
)

event_loop_lag_seconds = _histogram(
    "jobcore_event_loop_lag_seconds",
    "How late the event loop woke a sleeping timer: how long some step held the loop.",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)

rest_client_requests_total = _counter(
    "rest_client_requests_total",
    "Number of HTTP requests, partitioned by status code, method, and host.",
    "code",
    "method",
    "host",
)
rest_client_rate_limiter_duration_seconds = _histogram(
    "rest_client_rate_limiter_duration_seconds",
    "Client side rate limiter latency in seconds, by method and host (only with a rate limit).",
    "method",
    "host",
    buckets=_LATENCY_BUCKETS,
)
