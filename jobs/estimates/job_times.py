"""What the job page shows about time: each attempt's two phases, the estimate, likely finish."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from jobs.models import Job, ReplicaAttempt

from .estimate import Estimate, Estimator


@dataclass(frozen=True)
class AttemptPhases:
    attempt: ReplicaAttempt
    augmentation_seconds: float | None
    training_seconds: float | None

    @property
    def searching(self) -> bool:
        return self.attempt.state == ReplicaAttempt.State.RUNNING and (
            self.attempt.phase == ReplicaAttempt.Phase.AUGMENTATION
        )


@dataclass(frozen=True)
class JobTimes:
    estimate: Estimate | None
    likely_finish: datetime | None
    attempts: list[AttemptPhases]

    @property
    def has_augmentation(self) -> bool:
        return any(a.augmentation_seconds is not None for a in self.attempts)


def attempt_phases(attempt: ReplicaAttempt, *, now: datetime) -> AttemptPhases:
    """How long each phase took (so far, for a running attempt); None when it did not run."""
    if attempt.started_at is None:
        return AttemptPhases(attempt, None, None)
    end = attempt.ended_at or now
    training_from = attempt.training_started_at
    searched = attempt.replica.job.augmentation_command.strip() != ""
    if training_from is None:
        # Still searching, or it ended before training began.
        return AttemptPhases(attempt, (end - attempt.started_at).total_seconds(), None)
    augmentation = (training_from - attempt.started_at).total_seconds() if searched else None
    return AttemptPhases(attempt, augmentation, (end - training_from).total_seconds())


def job_times(*, job: Job, now: datetime | None = None) -> JobTimes:
    """The job's phases and estimate. The likely finish is the start (the scheduler's
    expected start while the job waits, then the actual one) plus the estimate."""
    now = now or timezone.now()
    attempts = list(
        ReplicaAttempt.objects.filter(replica__job=job)
        .select_related("replica__job", "node")
        .order_by("number", "replica__index")
    )
    phases = [attempt_phases(a, now=now) for a in attempts]
    estimate = None if job.is_finished else Estimator().job(job=job)
    current = [a.started_at for a in attempts if a.number == job.attempt and a.started_at]
    start = job.estimated_start if job.is_waiting else max(current, default=None)
    finish = None
    if estimate is not None and start is not None and not job.is_finished:
        finish = start + timedelta(seconds=estimate.seconds)
    return JobTimes(estimate, finish, phases)
