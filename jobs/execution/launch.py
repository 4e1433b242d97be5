"""From a placed job to running attempts, and back: launch and stop."""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from jobs.models import Job, JobEvent, Replica, ReplicaAttempt

from .executors import executor_for

logger = logging.getLogger(__name__)

# A job still without the attempts of its try this long after it last changed lost its
# launch; a launch runs right after the commit, so a slow one is done well within this.
LAUNCH_LOST_AFTER = timedelta(seconds=10)
# Relaunched per call at most; the next call (beat, every few seconds) takes the rest.
RELAUNCH_BATCH = 100


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


def lost_launches_retry(*, now: datetime | None = None) -> list[int]:
    """Launch the starting jobs whose launch never created their attempts; return their ids.

    A job is launched after the transaction that moved it to ``starting``
    commits, in the same process (the scheduling pass, a retry in place). A
    process killed in between leaves the job starting with no attempt, holding
    its nodes, and no executor knows of it: nothing else would ever start or
    free it. ``job_launch`` is idempotent, so relaunching a launch that was
    only slow does no harm.
    """
    cutoff = (now or timezone.now()) - LAUNCH_LOST_AFTER
    current_attempts = ReplicaAttempt.objects.filter(
        replica__job=OuterRef("pk"), number=OuterRef("attempt")
    )
    recent_events = JobEvent.objects.filter(job=OuterRef("pk"), created_at__gte=cutoff)
    lost = (
        Job.objects.filter(state=Job.State.STARTING)
        .exclude(Exists(current_attempts))
        .exclude(Exists(recent_events))
        .order_by("pk")
        .values_list("pk", flat=True)[:RELAUNCH_BATCH]
    )
    relaunched = []
    for job_id in lost:
        logger.warning("job %s was left starting without its attempts; launching it again", job_id)
        try:
            job_launch(job_id)
        except Exception:
            logger.exception("launching job %s again failed", job_id)
            continue
        relaunched.append(job_id)
    return relaunched


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
