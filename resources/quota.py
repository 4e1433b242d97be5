"""Quota limits and usage as resource vectors (see ``resources.vector``).

What a replica holds is charged to the physical GPU model it runs on and to
every aggregated model containing it (see ``resources.catalog``). The
scheduler asks for many users at once (``quota_limits_for`` /
``quota_usage_for``, a fixed number of queries); the per-user functions are
the same code for one user.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q

from .catalog import ModelCatalog
from .models import Quota
from .request import ResourceRequest
from .vector import ResourceVector


def quota_limits(*, user: AbstractBaseUser) -> dict[str, int]:
    """The user's limit per resource key: their own row, else the site default.

    A key with neither is absent, which means unlimited.
    """
    return quota_limits_for(user_ids=[user.pk])[user.pk]


def quota_usage(*, user: AbstractBaseUser) -> ResourceVector:
    """What the user's starting and running jobs hold against quota."""
    return quota_usage_for(user_ids=[user.pk])[user.pk]


def quota_limits_for(*, user_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """``quota_limits`` of several users in one query."""
    user_ids = set(user_ids)
    rows = Quota.objects.filter(Q(user_id__in=user_ids) | Q(user__isnull=True)).values_list(
        "user_id", "resource", "gpu_model__name", "limit"
    )
    defaults: dict[str, int] = {}
    own: dict[int, dict[str, int]] = {user_id: {} for user_id in user_ids}
    for user_id, resource, model_name, limit in rows:
        key = f"{resource}:{model_name}" if model_name else resource
        (defaults if user_id is None else own[user_id])[key] = limit
    return {user_id: {**defaults, **limits} for user_id, limits in own.items()}


def quota_usage_for(
    *, user_ids: Iterable[int] | None = None, catalog: ModelCatalog | None = None
) -> dict[int, ResourceVector]:
    """``quota_usage`` per user (every user with an active job when ``user_ids`` is None)."""
    usage: dict[int, ResourceVector] = {user_id: ResourceVector() for user_id in user_ids or ()}
    for user_id, holdings in quota_holdings_for(user_ids=user_ids, catalog=catalog).items():
        totals: dict[str, int] = {}
        for holding in holdings:
            for key, amount in holding.vector.items():
                totals[key] = totals.get(key, 0) + amount
        usage[user_id] = ResourceVector(totals)
    return usage


@dataclass(frozen=True)
class Holding:
    """What one active job holds against its owner's quota, and since when."""

    job_id: int
    vector: ResourceVector
    started_at: datetime | None
    max_runtime_minutes: int | None


def quota_holdings_for(
    *, user_ids: Iterable[int] | None = None, catalog: ModelCatalog | None = None
) -> dict[int, list[Holding]]:
    """The starting and running jobs of these users (all users if None), charged (3 queries)."""
    from jobs.models import Job, Replica

    catalog = catalog or ModelCatalog.load()
    active = Job.objects.filter(state__in=Job.ACTIVE_STATES)
    if user_ids is not None:
        active = active.filter(owner_id__in=set(user_ids))
    rows = list(
        active.order_by("pk").values_list(
            "pk", "owner_id", "started_at", "max_runtime_minutes", *REQUEST_FIELDS
        )
    )
    model_at = 4 + REQUEST_FIELDS.index("gpu_model__name")
    aggregated = [row[0] for row in rows if (row[model_at] or "").startswith("*")]
    placed_on: dict[int, list[str | None]] = {}
    for job_id, model_id in (
        Replica.objects.filter(job_id__in=aggregated)
        .order_by("job_id", "index")
        .values_list("job_id", "node__gpu_model_id")
    ):
        placed_on.setdefault(job_id, []).append(catalog.name_of(model_id))
    holdings: dict[int, list[Holding]] = {}
    for job_id, owner_id, started_at, max_runtime, *request_values in rows:
        request = request_from_values(request_values, catalog)
        requested = request.gpu_model.name if request.gpu_model else None
        physical = placed_on.get(job_id) or [requested] * request.replicas
        vector = charged_vector(request, physical=physical, catalog=catalog)
        holdings.setdefault(owner_id, []).append(Holding(job_id, vector, started_at, max_runtime))
    return holdings


# The job columns ``request_from_values`` needs, for ``values_list`` queries.
REQUEST_FIELDS = (
    "resource_kind",
    "gpu_model__name",
    "gpu_count",
    "vgpu_compute_percent",
    "vgpu_memory_mib",
    "cpu_milli",
    "memory_mib",
    "storage_gib",
    "replicas",
)


def request_from_values(values, catalog: ModelCatalog) -> ResourceRequest:
    """A ``ResourceRequest`` from the ``REQUEST_FIELDS`` columns, without a query."""
    values = tuple(values)
    cached = catalog.requests.get(values)
    if cached is not None:
        return cached
    kind, model_name, count, percent, vgpu_memory, cpu, memory, storage, replicas = values
    request = catalog.requests[values] = ResourceRequest(
        kind=kind,
        cpu_milli=cpu,
        memory_mib=memory,
        storage_gib=storage,
        gpu_model=catalog.models.get(model_name) if model_name else None,
        gpu_count=count,
        vgpu_compute_percent=percent,
        vgpu_memory_mib=vgpu_memory,
        replicas=replicas,
    )
    return request


def charged_vector(
    request: ResourceRequest, *, physical: Iterable[str | None], catalog: ModelCatalog
) -> ResourceVector:
    """What a job holds against quota with its replicas on these physical models."""
    key = (request, tuple(physical))
    total = catalog.charges.get(key)
    if total is None:
        requested = request.gpu_model.name if request.gpu_model else None
        one = replace(request, replicas=1).quota_vector()
        total = ResourceVector()
        for model_name in key[1]:
            charge = catalog.charge(one, requested=requested, physical=model_name or requested)
            total = total + charge
        catalog.charges[key] = total
    return total
