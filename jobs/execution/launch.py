"""From a placed job to running attempts, and back: launch and stop."""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction

from jobs.models import Job, Replica, ReplicaAttempt

from .executors import executor_for


def job_launch(job_id: int) -> list[int]:
    """Create this job attempt's ReplicaAttempt rows and hand them to the executors.

    Idempotent: attempts already created for ``job.attempt`` are reused, and
    executors ignore a start for an attempt they already run.
    """
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        if job.state != Job.State.STARTING:
            return []
        replicas = list(Replica.objects.filter(job=job).select_related("node"))
        attempt_ids_by_executor: dict[str, list[int]] = defaultdict(list)
        for replica in replicas:
            attempt, _created = ReplicaAttempt.objects.get_or_create(
                replica=replica, number=job.attempt, defaults={"node": replica.node}
            )
            attempt_ids_by_executor[replica.node.executor].append(attempt.pk)
    for executor_name, attempt_ids in attempt_ids_by_executor.items():
        executor_for(executor_name).start_attempts(attempt_ids)
    return [pk for ids in attempt_ids_by_executor.values() for pk in ids]


def job_stop_attempts(*, job_id: int, reason: str) -> None:
    """Ask the executors to stop every unfinished attempt of the job."""
    attempts = ReplicaAttempt.objects.filter(replica__job_id=job_id).exclude(
        state__in=ReplicaAttempt.FINAL_STATES
    )
    by_executor: dict[str, list[int]] = defaultdict(list)
    for attempt_id, executor_name in attempts.values_list("pk", "node__executor"):
        by_executor[executor_name].append(attempt_id)
    for executor_name, attempt_ids in by_executor.items():
        executor_for(executor_name).stop_attempts(attempt_ids, reason=reason)
