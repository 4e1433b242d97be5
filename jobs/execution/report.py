"""What executors report about attempts; the only writer of attempt states.

Executor-neutral: the local agent and the Slurm backend call the same functions
with what they observed, and the job follows from here (running
when every replica runs; succeeded, failed, retried, timed out, stopped or
re-placed when the attempts end; see ``settle.py``). Every call is idempotent:
reporting an attempt that is already in that state, or already ended, does
nothing, so an agent that reports twice after a restart is harmless.

Lock order: the job row first, then its attempts, in every path.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count

from core.reasons import Reason
from jobs.lifecycle.transitions import job_transition
from jobs.models import Job, ReplicaAttempt

from .settle import job_settle

Attempt = ReplicaAttempt
Phase = ReplicaAttempt.Phase


def attempt_running(
    *,
    attempt_id: int,
    started_at: datetime,
    pid: int | None = None,
    external_id: str = "",
    deadline: datetime | None = None,
    phase: str = Phase.TRAINING,
) -> bool:
    """The attempt's process started at ``started_at``; False if it was already reported."""
    with transaction.atomic(savepoint=False):  # no savepoint: see lifecycle/transitions.py
        job, attempt = _lock(attempt_id)
        if attempt is None or attempt.state != Attempt.State.PENDING:
            return False
        fields = {
            "state": Attempt.State.RUNNING,
            "started_at": started_at,
            "pid": pid,
            "external_id": external_id,
            "deadline": deadline,
            "phase": phase,
            "training_started_at": started_at if phase == Phase.TRAINING else None,
        }
        Attempt.objects.filter(pk=attempt.pk).update(**fields)
        if job.state == Job.State.STARTING and attempt.number == job.attempt:
            _running_when_all_started(job)
    return True


def _running_when_all_started(job: Job) -> None:
    """The job runs once every replica of its current try has started: at once for one
    replica (its try has one attempt, the one just started), else when the database
    counts them all started."""
    if job.replicas > 1:
        current = Attempt.objects.filter(replica__job=job, number=job.attempt)
        counted = current.aggregate(attempts=Count("pk"), started=Count("started_at"))
        if not counted["attempts"] == counted["started"] == job.replicas:
            return
    job_transition(
        job=job,
        to_state=Job.State.RUNNING,
        reason=Reason("running", {"count": job.replicas, "attempt": job.attempt}),
    )


def attempt_phase_started(*, attempt_id: int, phase: str, at: datetime) -> bool:
    """A later phase began (training after the augmentation search).

    The max run time limits training alone (seed 000), so the deadline of an
    attempt that searched augmentations first starts here.
    """
    fields: dict = {"phase": phase}
    if phase == Phase.TRAINING:
        fields["training_started_at"] = at
        max_runtime = (
            Job.objects.filter(replica_set__attempts=attempt_id)
            .values_list("max_runtime_minutes", flat=True)
            .first()
        )
        if max_runtime:
            fields["deadline"] = at + timedelta(minutes=max_runtime)
    changed = (
        Attempt.objects.filter(pk=attempt_id, state=Attempt.State.RUNNING)
        .exclude(phase=phase)
        .update(**fields)
    )
    return bool(changed)


def attempt_ended(
    *,
    attempt_id: int,
    state: str,
    ended_at: datetime,
    exit_code: int | None = None,
    reason: Reason | str = "",
    platform_fault: bool = False,
) -> bool:
    """The attempt ended in ``state`` (a final one); the job settles when its attempts have."""
    if state not in Attempt.FINAL_STATES:
        raise ValueError(f"{state} is not a final attempt state")
    with transaction.atomic(savepoint=False):  # no savepoint: see lifecycle/transitions.py
        job, attempt = _lock(attempt_id)
        if attempt is None or attempt.state in Attempt.FINAL_STATES:
            return False
        if attempt.started_at and ended_at < attempt.started_at:
            ended_at = attempt.started_at
        Attempt.objects.filter(pk=attempt.pk).update(
            state=state,
            ended_at=ended_at,
            exit_code=exit_code,
            platform_fault=platform_fault,
            **ReplicaAttempt.reason_fields(Reason.of(reason)),
        )
        if attempt.number == job.attempt and job.is_active:
            job_settle(job=job)
    return True


def job_start_waits(*, job: Job, reason: Reason, data: dict | None = None) -> bool:
    """The executor has not started the job's attempts yet, and says why (waiting in
    Slurm's queue, or for its controller): the job stays starting with that reason.

    False if the job is no longer starting (it moved on, or ``job`` is stale).
    """
    if job.state != Job.State.STARTING:
        return False
    return job_transition(job=job, to_state=Job.State.STARTING, reason=reason, data=data)


def _lock(attempt_id: int) -> tuple[Job, ReplicaAttempt | None]:
    """The attempt's job, then the attempt, each locked (the job's row alone, not the
    rows its query joins)."""
    job = (
        Job.objects.select_for_update(of=("self",)).filter(replica_set__attempts=attempt_id).first()
    )
    if job is None:
        return None, None  # type: ignore[return-value]
    attempt = Attempt.objects.select_for_update().filter(pk=attempt_id).first()
    return job, attempt
