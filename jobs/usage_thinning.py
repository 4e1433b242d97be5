"""Keeping usage samples compact (docs/usage-metrics.md): after an hour an attempt keeps
one sample a minute, the last of each (its running totals keep the minute's CPU and I/O
rates exact; memory and cards become the minute's last look); after
``TRAINYARD_USAGE_RETENTION_DAYS`` none. Beat runs it every 10 minutes
(``jobs.tasks.usage_thin``) over the samples that aged past the hour since."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.db.models.functions import TruncMinute
from django.utils import timezone

from .models import AttemptSample

FULL_DETAIL = timedelta(hours=1)
THINNED_INTERVAL = timedelta(minutes=1)  # what TruncMinute below keeps
# How far back past the hour each run looks: twice beat's interval, so a late run misses none.
BAND = timedelta(minutes=20)


def usage_thin(now: datetime | None = None, *, band: timedelta = BAND) -> tuple[int, int]:
    """(samples thinned, samples expired)."""
    now = now or timezone.now()
    cutoff = now - FULL_DETAIL
    aged = AttemptSample.objects.filter(at__lt=cutoff, at__gte=cutoff - band).annotate(
        minute=TruncMinute("at")
    )
    later_in_its_minute = AttemptSample.objects.annotate(minute=TruncMinute("at")).filter(
        attempt_id=OuterRef("attempt_id"), minute=OuterRef("minute"), at__gt=OuterRef("at")
    )
    thinned = AttemptSample.objects.filter(
        pk__in=aged.filter(Exists(later_in_its_minute)).values("pk")
    ).delete()[0]
    retention = timedelta(days=settings.TRAINYARD_USAGE_RETENTION_DAYS)
    expired = AttemptSample.objects.filter(at__lt=now - retention).delete()[0]
    return thinned, expired
