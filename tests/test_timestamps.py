"""Timestamps read as integers (core/timestamps.py) come back as the same instant, to the
microsecond, and a NULL as None."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from core.timestamps import EpochMicros, from_micros
from jobs.models import Job
from tests.factories import JobFactory

pytestmark = pytest.mark.django_db

INSTANTS = [
    datetime(2026, 12, 6, 4, 16, 0, 123456, tzinfo=UTC),
    datetime(2026, 12, 6, 4, 16, 0, tzinfo=UTC),  # no fraction
    datetime(2026, 12, 6, 4, 16, 0, 7, tzinfo=UTC),  # the fraction's leading zeros
    datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
]


def test_every_instant_comes_back_to_the_microsecond():
    jobs = [JobFactory(started_at=instant) for instant in INSTANTS]
    read = dict(Job.objects.annotate(micros=EpochMicros("started_at")).values_list("pk", "micros"))
    assert [from_micros(read[job.pk]) for job in jobs] == INSTANTS


def test_an_instant_written_in_another_zone_is_the_same_instant():
    instant = datetime(2026, 12, 6, 13, 16, 0, 5, tzinfo=UTC)
    job = JobFactory(started_at=instant.astimezone(ZoneInfo("Asia/Shanghai")))
    [micros] = (
        Job.objects.filter(pk=job.pk)
        .annotate(m=EpochMicros("started_at"))
        .values_list("m", flat=True)
    )
    assert from_micros(micros) == instant


def test_a_null_is_none():
    job = JobFactory(started_at=None)
    [micros] = (
        Job.objects.filter(pk=job.pk)
        .annotate(m=EpochMicros("started_at"))
        .values_list("m", flat=True)
    )
    assert micros is None and from_micros(micros) is None
