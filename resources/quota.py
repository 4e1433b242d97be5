"""Quota limits and usage as resource vectors (see ``resources.vector``)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q

from .models import Quota
from .request import ResourceRequest
from .vector import ResourceVector


def quota_limits(*, user: AbstractBaseUser) -> dict[str, int]:
    """The user's limit per resource key: their own row, else the site default.

    A key with neither is absent, which means unlimited.
    """
    rows = Quota.objects.filter(Q(user=user) | Q(user__isnull=True)).select_related("gpu_model")
    limits: dict[str, int] = {}
    for row in sorted(rows, key=lambda r: r.user_id is not None):  # defaults first, own rows win
        limits[row.key] = row.limit
    return limits


def quota_usage(*, user: AbstractBaseUser) -> ResourceVector:
    """What the user's starting and running jobs hold against quota."""
    from jobs.models import Job

    usage = ResourceVector()
    active = Job.objects.filter(owner=user, state__in=Job.ACTIVE_STATES).select_related("gpu_model")
    for job in active:
        usage = usage + ResourceRequest.from_job(job).quota_vector()
    return usage
