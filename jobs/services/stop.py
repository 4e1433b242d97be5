"""Stopping a job: waiting jobs leave their queue at once, active ones are signalled."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from jobs.models import Job

from .hooks import schedule_soon
from .transitions import job_transition


def job_stop(*, job: Job, reason: str = "", actor: AbstractBaseUser | None = None) -> Job:
    """Stop ``job``; a finished job is left as it is."""
    reason = reason or (
        _("Stopped by %(user)s") % {"user": actor.get_username()} if actor else _("Stopped")
    )
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job.pk)
        if job.is_waiting:
            job_transition(job=job, to_state=Job.State.STOPPED, reason=reason)
            schedule_soon()
        elif job.is_active and job.stop_requested_at is None:
            Job.objects.filter(pk=job.pk).update(stop_requested_at=timezone.now())
            job.stop_requested_at = timezone.now()
            job_id = job.pk
            transaction.on_commit(lambda: _stop_active(job_id, reason))
    return job


def _stop_active(job_id: int, reason: str) -> None:
    from jobs.execution.launch import job_stop_attempts

    job_stop_attempts(job_id=job_id, reason=reason)
