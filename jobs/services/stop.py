"""Stopping a job: waiting jobs leave their queue at once, active ones are signalled."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from core.reasons import Reason
from jobs.execution.launch import job_stop_attempts
from jobs.lifecycle.pass_requests import schedule_soon
from jobs.lifecycle.transitions import job_transition
from jobs.models import Job, JobEvent

# Key of a stop event's data naming the user who asked for the stop.
STOP_REQUESTED_BY = "stop_requested_by"


def job_stop(
    *, job: Job, reason: Reason | str | None = None, actor: AbstractBaseUser | None = None
) -> Job:
    """Stop ``job``; a finished job is left as it is."""
    if reason:
        reason = Reason.of(reason)
    elif actor:
        reason = Reason("stopped.by", {"user": actor.get_username()})
    else:
        reason = Reason("stopped")
    requested_by = {STOP_REQUESTED_BY: actor.pk} if actor else {}
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job.pk)
        if job.is_waiting:
            job_transition(job=job, to_state=Job.State.STOPPED, reason=reason, data=requested_by)
            schedule_soon()
        elif job.is_active and job.stop_requested_at is None:
            Job.objects.filter(pk=job.pk).update(stop_requested_at=timezone.now())
            job.stop_requested_at = timezone.now()
            if actor:
                JobEvent.build(
                    job=job,
                    from_state=job.state,
                    to_state=job.state,
                    reason=Reason("stop.requested", {"user": actor.get_username()}),
                    data=requested_by,
                ).save()
            job_id = job.pk
            transaction.on_commit(lambda: _stop_active(job_id, reason))
    return job


def stop_requester(*, job: Job) -> AbstractBaseUser | None:
    """Who asked for the job's stop; None when nobody did: billing, a lost node, Slurm.

    The first request is the one that counts: ``job_stop`` ignores later ones.
    """
    event = job.events.filter(data__has_key=STOP_REQUESTED_BY).order_by("pk").first()
    if event is None:
        return None
    return get_user_model().objects.filter(pk=event.data[STOP_REQUESTED_BY]).first()


def _stop_active(job_id: int, reason: Reason) -> None:
    job_stop_attempts(job_id=job_id, reason=reason)
