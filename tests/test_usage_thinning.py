"""Usage samples stay compact: full detail for an hour, then one a minute, then none after
the retention (jobs/usage_thinning.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import AttemptSample
from jobs.usage_metrics import job_usage
from jobs.usage_thinning import usage_thin
from tests.running_job import running_job

pytestmark = pytest.mark.django_db


def test_an_hour_in_full_then_a_sample_a_minute_then_none(owner, project, settings):
    settings.TRAINYARD_USAGE_RETENTION_DAYS = 1
    attempt = running_job(owner=owner, project=project).attempt
    now = timezone.now().replace(second=0, microsecond=0)
    # A core flat out, sampled every 10 s for the last 100 minutes; and one 2 days old.
    start = now - timedelta(minutes=100)
    AttemptSample.objects.bulk_create(
        AttemptSample(attempt=attempt, at=start + timedelta(seconds=s), cpu_seconds=s, memory_mib=9)
        for s in range(0, 100 * 60, 10)
    )
    AttemptSample.objects.create(
        attempt=attempt, at=now - timedelta(days=2), cpu_seconds=0, memory_mib=9
    )

    thinned, expired = usage_thin(now, band=timedelta(hours=2))

    assert expired == 1
    rows = list(AttemptSample.objects.order_by("at").values_list("at", flat=True))
    old = [at for at in rows if at < now - timedelta(hours=1)]
    recent = [at for at in rows if at >= now - timedelta(hours=1)]
    assert len(old) == 40 and thinned == 40 * 5  # minutes 100…61 ago: the last of each
    assert all(at.second == 50 for at in old)
    assert len(recent) == 60 * 6  # the last hour untouched
    # The minute-apart rows still give the rate exactly: their totals are the real ones.
    [series] = job_usage(attempt.replica.job, minutes=24 * 60)
    assert {p["cpu_percent"] for p in series["points"][1:]} == {100.0}
    assert usage_thin(now, band=timedelta(hours=2)) == (0, 0)  # nothing left to do
