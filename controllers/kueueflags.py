"""`jobcore run`'s Kueue flags: whether the integration runs, and which unlabelled jobs it
queues (`KueueScope`), each named after the Kueue setting it stands for."""

from __future__ import annotations

import argparse

from jobcore.jobs import KueueScope


def add_kueue_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--kueue",
        choices=["auto", "on", "off"],
        default="auto",
        help="queue the jobs that carry Kueue's queue-name label through Kueue's Workloads "
        "(auto: when the API server serves them)",
    )
    run.add_argument(
        "--kueue-manage-jobs-without-queue-name",
        action="store_true",
        help="queue the jobs without Kueue's label too, in the namespaces "
        "--kueue-managed-jobs-namespace-selector selects (Kueue's setting of that name)",
    )
    run.add_argument(
        "--kueue-managed-jobs-namespace-selector",
        metavar="SELECTOR",
        help="a label selector on the namespaces whose unlabelled jobs are queued "
        "(default: every namespace)",
    )
    run.add_argument(
        "--kueue-default-local-queue",
        action="store_true",
        help="queue a job without Kueue's label in its namespace's LocalQueue 'default', "
        "if the namespace is selected and has one (Kueue's LocalQueue defaulting)",
    )


def kueue_scope(args: argparse.Namespace) -> KueueScope:
    """The unlabelled jobs `add_kueue_arguments`' flags queue; ValueError for a selector that
    cannot be kept (malformed, or under --namespace, whose Role cannot read Namespaces)."""
    scope = KueueScope(
        manage_jobs_without_queue_name=args.kueue_manage_jobs_without_queue_name,
        namespace_selector=args.kueue_managed_jobs_namespace_selector,
        default_local_queue=args.kueue_default_local_queue,
    )
    scope.check()
    if args.namespace and args.kueue_managed_jobs_namespace_selector is not None:
        raise ValueError(
            "--kueue-managed-jobs-namespace-selector: a namespaced install cannot read "
            "Namespaces (it watches --namespace only)"
        )
    return scope
