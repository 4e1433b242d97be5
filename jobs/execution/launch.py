"""From a placed job to running attempts, and back: launch and stop."""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from core.reasons import Reason
from jobs.models import Job, JobEvent, Replica, ReplicaAttempt

from .executors import executor_for
from .files import executor_of

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
    return jobs_launch([job_id])


def jobs_launch(job_ids: list[int]) -> list[int]:
    """``job_launch`` for every job a pass started, in a fixed number of queries.

    The jobs' rows are locked in id order (as every path locks a job before its
    attempts), so a stop or an exit report of one of them waits for this. Each
    executor then gets all of its attempts at once, in the order of ``job_ids`` (the
    Slurm executor submits each job attempt as one Slurm job, in that order).
    """
    with transaction.atomic():
        jobs = {
            job.pk: job
            for job in Job.objects.select_for_update()
            .filter(pk__in=job_ids, state=Job.State.STARTING)
            .order_by("pk")
        }
        replicas = list(
            Replica.objects.filter(job__in=list(jobs))
            .select_related("node")
            .order_by("job", "index")
        )
        existing = {
            (attempt.replica_id, attempt.number): attempt
            for attempt in ReplicaAttempt.objects.filter(replica__in=replicas)
        }
        attempts = []
        for replica in replicas:
            key = (replica.pk, jobs[replica.job_id].attempt)
            attempt = existing.get(key) or ReplicaAttempt(
                replica=replica, number=key[1], node=replica.node
            )
            attempts.append((replica, attempt))
        ReplicaAttempt.objects.bulk_create([a for _r, a in attempts if a.pk is None])
    by_job: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for replica, attempt in attempts:
        by_job[replica.job_id][executor_of(replica.node)].append(attempt.pk)
    # In the order given (the pass's queue order): Slurm queues what it is handed first first.
    by_executor: dict[str, list[int]] = defaultdict(list)
    for job_id in dict.fromkeys(job_ids):
        for executor_name, attempt_ids in by_job.get(job_id, {}).items():
            by_executor[executor_name] += attempt_ids
    for executor_name, attempt_ids in by_executor.items():
        executor_for(executor_name).start_attempts(attempt_ids)
    return [attempt.pk for _replica, attempt in attempts]


def launch_each(job_ids: list[int]) -> list[int]:
    """Launch the jobs together; if that fails, each on its own, so that one failing
    launch does not stop the others. Returns the ids whose launch did not fail."""
    if not job_ids:
        return []
    try:
        jobs_launch(job_ids)
        return list(job_ids)
    except Exception:
        logger.exception("launching jobs %s together failed; launching each alone", job_ids)
    launched = []
    for job_id in job_ids:
        try:
            job_launch(job_id)
        except Exception:
            logger.exception("launching job %s failed", job_id)
            continue
        launched.append(job_id)
    return launched


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
    lost = list(
        Job.objects.filter(state=Job.State.STARTING)
        .exclude(Exists(current_attempts))
        .exclude(Exists(recent_events))
        .order_by("pk")
        .values_list("pk", flat=True)[:RELAUNCH_BATCH]
    )
    if lost:
        logger.warning("jobs %s were left starting without their attempts; launching again", lost)
    return launch_each(lost)


def job_stop_attempts(*, job_id: int, reason: Reason) -> None:
    """Ask the executors to stop every unfinished attempt of the job."""
    attempts = ReplicaAttempt.objects.filter(replica__job_id=job_id).exclude(
        state__in=ReplicaAttempt.FINAL_STATES
    )
    by_executor: dict[str, list[int]] = defaultdict(list)
    for attempt in attempts.select_related("node"):
        by_executor[executor_of(attempt.node)].append(attempt.pk)
    for executor_name, attempt_ids in by_executor.items():
        executor_for(executor_name).stop_attempts(attempt_ids, reason=reason)


def preempt_each(preempted: dict[int, int]) -> None:
    """Stop each preempted job (victim → the job it makes room for): TERM, the site's
    preemption grace, then KILL (the agent reads the grace from the job's mark)."""
    for victim, beneficiary in preempted.items():
        job_stop_attempts(job_id=victim, reason=Reason("preempted", {"job": beneficiary}))


def launch_retried(sender, *, job_id: int, **_kwargs) -> None:
    """Receiver of ``settle.job_retried``: launch the job's next try in place."""
    job_launch(job_id)


def stop_peers(sender, *, attempt_ids_by_executor: dict[str, list[int]], reason: Reason, **_kwargs):
    """Receiver of ``settle.peers_to_stop``: each executor stops its attempts."""
    for executor_name, attempt_ids in attempt_ids_by_executor.items():
        executor_for(executor_name).stop_attempts(attempt_ids, reason=reason)
