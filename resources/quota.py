"""Quota limits, and how a request is charged against them (``resources.vector``).

What a replica holds is charged to the physical GPU model it runs on and to
every aggregated model containing it (see ``resources.catalog``). The
scheduler asks for many users at once (``quota_limits_for``, a fixed number
of queries); the per-user function is the same code for one user. What users'
jobs hold against these limits is read by ``jobs.quota_usage``, with
``request_from_values`` and ``charged_vector`` from here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

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


def quota_limits_for(*, user_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """``quota_limits`` of several users in one query."""
    return _per_key(user_ids, "limit")


def borrow_limits_for(*, user_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """How much beyond their limits each user's preemptible jobs may borrow, per key (one
    query); a key without a borrow limit is not capped."""
    return _per_key(user_ids, "borrow_limit")


def _per_key(user_ids: Iterable[int], column: str) -> dict[int, dict[str, int]]:
    """A quota column per user and key, the site's defaults under each user's own rows."""
    user_ids = set(user_ids)
    rows = Quota.objects.filter(Q(user_id__in=user_ids) | Q(user__isnull=True)).values_list(
        "user_id", "resource", "gpu_model__name", column
    )
    defaults: dict[str, int] = {}
    own: dict[int, dict[str, int]] = {user_id: {} for user_id in user_ids}
    for user_id, resource, model_name, value in rows:
        key = f"{resource}:{model_name}" if model_name else resource
        if value is not None:
            (defaults if user_id is None else own[user_id])[key] = value
    return {user_id: {**defaults, **values} for user_id, values in own.items()}


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
