"""Jobs that hold cards they do not use (docs/usage-metrics.md): a running GPU job whose
allocated cards average below ``SiteSettings.idle_gpu_percent`` over the last
``idle_window_minutes`` of samples, counted from ``idle_grace_minutes`` into its training
(never its augmentation phase), is marked ``Job.idle_since`` and its owner is told
(``jobs.signals.job_cards_idle`` → notifications). A job busy again loses the mark; with
``idle_stop_minutes`` set, one still idle that long after the telling is stopped, with the
reason recorded. Beat runs it every minute (the task below; ``JobsConfig.ready`` registers
it: it stops jobs, which the tasks module, below the services, may not)."""

from __future__ import annotations

from datetime import datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.reasons import Reason
from resources.models import ResourceKind, SiteSettings

from .models import AttemptSample, Job, ReplicaAttempt
from .services.stop import job_stop
from .signals import job_cards_idle
from .usage_thinning import FULL_DETAIL, THINNED_INTERVAL


@shared_task(name="jobs.tasks.idle_cards_check", ignore_result=True)
def idle_cards_task() -> None:
    idle_cards_check()


def idle_cards_check(now: datetime | None = None) -> dict[int, float]:
    """Mark, tell and (by policy) stop; the jobs found idle now, with their average use."""
    now = now or timezone.now()
    site = SiteSettings.load()
    window = timedelta(minutes=site.idle_window_minutes)
    averages = _window_averages(now, window, timedelta(minutes=site.idle_grace_minutes))
    idle = {job: use for job, use in averages.items() if use < site.idle_gpu_percent}
    busy = set(averages) - set(idle)
    Job.objects.filter(pk__in=busy, idle_since__isnull=False).update(
        idle_since=None, idle_gpu_percent=None
    )
    for job_id, percent in idle.items():
        with transaction.atomic():
            marked = Job.objects.filter(pk=job_id, idle_since__isnull=True).update(
                idle_since=now, idle_gpu_percent=percent
            )
            if marked:
                job_cards_idle.send(
                    sender=Job, job_id=job_id, percent=percent, minutes=site.idle_window_minutes
                )
    if site.idle_stop_minutes is not None:
        _stop_still_idle(now, site, set(idle))
    return idle


def _window_averages(now: datetime, window: timedelta, grace: timedelta) -> dict[int, float]:
    """Each running GPU job's average card use over the window, where its samples cover the
    whole window of training past the grace. One query."""
    rows = AttemptSample.objects.filter(
        at__gt=now - window,
        attempt__state=ReplicaAttempt.State.RUNNING,
        attempt__training_started_at__lte=now - window - grace,
        attempt__replica__job__state=Job.State.RUNNING,
        attempt__replica__job__resource_kind__in=[ResourceKind.GPU, ResourceKind.VGPU],
    ).values_list("attempt__replica__job_id", "at", "gpus")
    # The samples must reach back to the window's start, two intervals' slack: past the
    # hour of full detail an interval is a minute (one sample a minute is kept).
    interval = timedelta(seconds=settings.TRAINYARD_USAGE_SAMPLE_SECONDS)
    slack = 2 * (max(interval, THINNED_INTERVAL) if window > FULL_DETAIL else interval)
    earliest: dict[int, datetime] = {}
    uses: dict[int, list[int]] = {}
    for job_id, at, cards in rows:
        earliest[job_id] = min(at, earliest.get(job_id, at))
        uses.setdefault(job_id, []).extend(card["util"] for card in cards)
    return {
        job_id: round(sum(values) / len(values), 1)
        for job_id, values in uses.items()
        if values and earliest[job_id] <= now - window + slack
    }


def _stop_still_idle(now: datetime, site: SiteSettings, idle: set[int]) -> None:
    due = Job.objects.filter(
        pk__in=idle,
        state=Job.State.RUNNING,
        stop_requested_at__isnull=True,
        idle_since__lte=now - timedelta(minutes=site.idle_stop_minutes),
    )
    for job in due:
        reason = Reason(
            "stopped.idle_cards",
            {"percent": job.idle_gpu_percent, "minutes": site.idle_stop_minutes},
        )
        job_stop(job=job, reason=reason)
