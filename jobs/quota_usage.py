"""What users' starting and running jobs hold against quota (the limits: ``resources.quota``).

What a replica holds is charged to the physical GPU model it runs on and to
every aggregated model containing it (``resources.quota.charged_vector``). The
scheduler asks for many users at once (``quota_holdings_for``, 3 queries);
``quota_usage`` is the same code for one user.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import NamedTuple

from django.contrib.auth.models import AbstractBaseUser

from core.timestamps import EpochMicros, from_micros
from jobs.models import Job, Replica
from resources.catalog import ModelCatalog
from resources.quota import REQUEST_FIELDS, charged_vector, request_from_values
from resources.vector import ResourceVector


def quota_usage(*, user: AbstractBaseUser) -> ResourceVector:
    """What the user's starting and running jobs hold against quota."""
    return quota_usage_for(user_ids=[user.pk])[user.pk]


def quota_usage_for(
    *, user_ids: Iterable[int] | None = None, catalog: ModelCatalog | None = None
) -> dict[int, ResourceVector]:
    """``quota_usage`` per user (every user with an active job when ``user_ids`` is None)."""
    usage: dict[int, ResourceVector] = {user_id: ResourceVector() for user_id in user_ids or ()}
    for user_id, holdings in quota_holdings_for(user_ids=user_ids, catalog=catalog).items():
        totals: dict[str, int] = {}
        for holding in holdings:
            if holding.borrowed:
                continue  # beyond the quota: borrowed while idle, and preemptible
            for key, amount in holding.vector.items():
                totals[key] = totals.get(key, 0) + amount
        usage[user_id] = ResourceVector(totals)
    return usage


class Holding(NamedTuple):
    """What one active job holds against its owner's quota, and since when (a named
    tuple: a pass reads one for every running job)."""

    job_id: int
    vector: ResourceVector
    started_at: datetime | None
    max_runtime_minutes: int | None
    borrowed: bool = False  # a preemptible job beyond its owner's quota: not counted in it


def quota_holdings_for(
    *, user_ids: Iterable[int] | None = None, catalog: ModelCatalog | None = None
) -> dict[int, list[Holding]]:
    """The starting and running jobs of these users (all users if None), charged (3 queries)."""
    catalog = catalog or ModelCatalog.load()
    active = Job.objects.filter(state__in=Job.ACTIVE_STATES)
    if user_ids is not None:
        active = active.filter(owner_id__in=set(user_ids))
    rows = list(
        active.annotate(started=EpochMicros("started_at"))
        .order_by("pk")
        .values_list(
            "pk", "owner_id", "started", "max_runtime_minutes", "borrowed", *REQUEST_FIELDS
        )
    )
    model_at = 5 + REQUEST_FIELDS.index("gpu_model__name")
    placed_on: dict[int, list[str | None]] = {}
    if any((row[model_at] or "").startswith("*") for row in rows):
        # The same jobs, chosen again inside the query: thousands of ids as parameters
        # cost more to send than the rows do.
        aggregated = active.filter(gpu_model__name__startswith="*")
        for job_id, model_id, submitted_for in (
            Replica.objects.filter(job__in=aggregated)
            .order_by("job_id", "index")
            .values_list("job_id", "node__gpu_model_id", "slurm_model_id")
        ):
            # Not started yet inside Slurm: the member it was submitted for.
            placed_on.setdefault(job_id, []).append(catalog.name_of(model_id or submitted_for))
    holdings: dict[int, list[Holding]] = {}
    # Running jobs are mostly alike: each (request, models) is charged once.
    charged: dict[tuple, ResourceVector] = {}
    for job_id, owner_id, started_at, max_runtime, borrowed, *request_values in rows:
        key = (*request_values, *placed_on.get(job_id, ()))
        vector = charged.get(key)
        if vector is None:
            request = request_from_values(request_values, catalog)
            requested = request.gpu_model.name if request.gpu_model else None
            physical = placed_on.get(job_id) or [requested] * request.replicas
            vector = charged[key] = charged_vector(request, physical=physical, catalog=catalog)
        holdings.setdefault(owner_id, []).append(
            Holding(job_id, vector, from_micros(started_at), max_runtime, borrowed)
        )
    return holdings
