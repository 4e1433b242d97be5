"""The queue as the scheduler will take it, per GPU model; a user's reorders; staff's priorities.

One order for everyone: the pass's own (``jobs.scheduler.queue``: preemption's
beneficiaries, priority, fair share, then submit time or the order the owner gave).
A reader sees the waiting jobs they may operate (their own, their projects'; staff
all); positions count every waiting job, so another's job leaves a gap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from billing.fair_share import fair_share_factors
from core.reasons import Reason
from jobs.lifecycle.pass_requests import schedule_soon
from jobs.models import Job, JobEvent
from jobs.scheduler.queue import (
    CPU_QUEUE,
    WaitingJob,
    in_fair_share_order,
    load_waiting,
    waiting_rows,
)
from jobs.selectors import jobs_user_may_operate
from resources.catalog import ModelCatalog

UP, DOWN = "up", "down"


@dataclass(frozen=True)
class QueueEntry:
    job: Job
    position: int  # 1-based, among every waiting job of its model
    fair_share: float
    earlier: int | None  # the owner's job just ahead of it that it may swap with, if any
    later: int | None


@dataclass
class ModelQueue:
    model: str  # "" for CPU jobs
    waiting: int = 0  # every waiting job of the model, seen or not
    entries: list[QueueEntry] = field(default_factory=list)


def queue_order() -> list[WaitingJob]:
    """Every waiting job, in the order the next pass considers them (3 queries)."""
    rows = waiting_rows()
    if not rows:
        return []
    jobs = load_waiting(rows, ModelCatalog.load(), ports=False)
    factors = fair_share_factors(user_ids={job.owner_id for job in jobs}, now=timezone.now())
    return in_fair_share_order(jobs, factors)


def queue_for(*, user: AbstractBaseUser) -> list[ModelQueue]:
    """The queues, per model (CPU last), with the jobs ``user`` may see in them."""
    order = queue_order()
    visible = jobs_user_may_operate(user=user).filter(pk__in=[w.pk for w in order])
    jobs = {job.pk: job for job in visible.select_related("owner", "project", "gpu_model")}
    mine = _neighbours(order, user.pk)
    queues: dict[str, ModelQueue] = {}
    for waiting in order:
        queue = queues.setdefault(waiting.queue, ModelQueue(waiting.queue))
        queue.waiting += 1
        job = jobs.get(waiting.pk)
        if job is not None:
            earlier, later = mine.get(job.pk, (None, None))
            entry = QueueEntry(job, queue.waiting, waiting.fair_share, earlier, later)
            queue.entries.append(entry)
    return sorted(queues.values(), key=lambda q: (q.model == CPU_QUEUE, q.model))


def _neighbours(order: list[WaitingJob], owner_id: int) -> dict[int, tuple[int | None, ...]]:
    """Each of the owner's jobs → their jobs just before and after it among those it may trade
    places with: same model, same priority (so the same fair share), neither taking capacity
    preempted for it."""
    groups: dict[tuple[str, int], list[int]] = {}
    for job in order:
        if job.owner_id == owner_id and not job.reclaiming:
            groups.setdefault((job.queue, job.priority), []).append(job.pk)
    neighbours: dict[int, tuple[int | None, ...]] = {}
    for mates in groups.values():
        for at, pk in enumerate(mates):
            later = mates[at + 1] if at + 1 < len(mates) else None
            neighbours[pk] = (mates[at - 1] if at else None, later)
    return neighbours


def job_move(*, user: AbstractBaseUser, job: Job, direction: str) -> Job:
    """Swap ``job`` with its owner's next job up or down the queue (only the owner may)."""
    if direction not in (UP, DOWN):
        raise ValidationError({"direction": [_("Direction must be up or down.")]})
    if job.owner_id != user.pk:
        raise PermissionDenied(_("Only the job's owner may move it in the queue."))
    if not job.is_waiting:
        raise ValidationError({"job": [_("Only a waiting job has a place in the queue.")]})
    earlier, later = _neighbours(queue_order(), job.owner_id).get(job.pk, (None, None))
    other_pk = earlier if direction == UP else later
    if other_pk is None:
        message = (
            _("It is already first among your jobs it may pass.")
            if direction == UP
            else _("It is already last among your jobs it may pass.")
        )
        raise ValidationError({"direction": [message]})
    with transaction.atomic():
        pair = {j.pk: j for j in Job.objects.select_for_update().filter(pk__in=[job.pk, other_pk])}
        mine, other = pair[job.pk], pair[other_pk]
        mine_at, other_at = _queued(mine), _queued(other)
        if mine_at == other_at:  # same instant: the id decides, so part them by a microsecond
            other_at += timedelta(microseconds=1 if direction == UP else -1)
        Job.objects.filter(pk=mine.pk).update(queue_since=other_at)
        Job.objects.filter(pk=other.pk).update(queue_since=mine_at)
        reason = Reason("queue.moved", {"user": user.get_username(), "job": other.pk})
        JobEvent.build(job=mine, from_state=mine.state, to_state=mine.state, reason=reason).save()
        schedule_soon()
    job.refresh_from_db()
    return job


def job_set_priority(*, user: AbstractBaseUser, job: Job, priority: int) -> Job:
    """Staff set a waiting job's priority (the queue takes higher priorities first)."""
    if not user.is_staff:
        raise PermissionDenied(_("Only staff may change a job's priority."))
    if priority not in Job.Priority.values:
        choices = ", ".join(str(value) for value in Job.Priority.values)
        message = _("Priority must be one of %(choices)s.") % {"choices": choices}
        raise ValidationError({"priority": [message]})
    if not job.is_waiting:
        raise ValidationError({"priority": [_("Only a waiting job's priority may change.")]})
    with transaction.atomic():
        updated = Job.objects.filter(pk=job.pk, state__in=Job.WAITING_STATES).update(
            priority=priority
        )
        if updated:
            level = Reason(f"priority.{Job.Priority(priority).name.lower()}")
            reason = Reason("queue.priority", {"user": user.get_username(), "priority": level})
            JobEvent.build(job=job, from_state=job.state, to_state=job.state, reason=reason).save()
            schedule_soon()
    job.refresh_from_db()
    return job


def _queued(job: Job):
    return job.queue_since or job.submitted_at
