"""Billing rules that decide whether a job may be submitted at all.

The job form, the API and the CLI all reach these through the job submit
service; each returns errors keyed by the request field they concern.

Free accounts are admitted "safely", as Slurm's ``AccountingStorageEnforce=safe``
does: a job must fit, at its max run time, in the free hours that remain
after what the account's other unfinished jobs may still use; a job without a
max run time gets one that fits (``free_runtime_cap_minutes``). Retries are
not reserved; if the grant runs out anyway, the accrual stops the jobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, Sum
from django.utils.translation import gettext as _

from jobs.models import Job
from resources.models import GpuModel, ResourceKind

from .formatting import hours_text
from .models import SECONDS_PER_HOUR, Account, FreeGrant
from .services import account_for_user


def model_is_free_tier(gpu_model: GpuModel) -> bool:
    """An aggregated model is free-tier only when every member is."""
    if gpu_model.is_aggregated:
        members = list(gpu_model.members.all())
        return bool(members) and all(m.free_tier for m in members)
    return gpu_model.free_tier


def cards_per_replica(
    *, resource_kind: str | None, gpu_count: int, vgpu_compute_percent: int | None
) -> Decimal:
    """Card-hours a replica uses per hour: a virtual GPU counts its compute share."""
    if resource_kind == ResourceKind.VGPU and vgpu_compute_percent:
        return Decimal(gpu_count) * vgpu_compute_percent / 100
    return Decimal(gpu_count)


@dataclass(frozen=True)
class FreeRoom:
    """What is left of a free grant for a new job, in card-hours."""

    model_name: str
    grant: Decimal
    used: Decimal
    reserved: Decimal

    @property
    def remaining(self) -> Decimal:
        return max(self.grant - self.used - self.reserved, Decimal(0))

    def max_minutes(self, card_hours_per_hour: Decimal) -> int:
        if card_hours_per_hour <= 0:
            return 0
        return int(self.remaining * 60 / card_hours_per_hour)


def free_room(*, account: Account, gpu_model: GpuModel) -> FreeRoom | None:
    """The account's free hours for ``gpu_model`` (or its members); None when it has no grant."""
    models = [gpu_model, *gpu_model.members.all()] if gpu_model.is_aggregated else [gpu_model]
    grants = list(FreeGrant.objects.filter(account=account, gpu_model__in=models))
    if not grants:
        return None
    return FreeRoom(
        model_name=", ".join(sorted(g.gpu_model.name for g in grants)),
        grant=sum((g.card_hours for g in grants), Decimal(0)),
        used=sum((g.used_card_hours for g in grants), Decimal(0)),
        reserved=_reserved_card_hours(account, [g.gpu_model_id for g in grants]),
    )


def _reserved_card_hours(account: Account, model_ids: list[int]) -> Decimal:
    """What the account's unfinished jobs on these models may still use at their max run time."""
    jobs = (
        Job.objects.filter(
            owner_id=account.user_id,
            state__in=[*Job.WAITING_STATES, *Job.ACTIVE_STATES],
            max_runtime_minutes__isnull=False,
        )
        .filter(Q(gpu_model_id__in=model_ids) | Q(gpu_model__members__in=model_ids))
        .distinct()
        .annotate(used_unit_seconds=Sum("usage__unit_seconds"))
    )
    reserved = Decimal(0)
    for job in jobs:
        per_hour = job.replicas * cards_per_replica(
            resource_kind=job.resource_kind,
            gpu_count=job.gpu_count,
            vgpu_compute_percent=job.vgpu_compute_percent,
        )
        may_use = per_hour * job.max_runtime_minutes / 60
        used = (job.used_unit_seconds or Decimal(0)) / SECONDS_PER_HOUR
        reserved += max(may_use - used, Decimal(0))
    return reserved


def job_billing_errors(
    *,
    user: AbstractBaseUser,
    gpu_model: GpuModel | None,
    gpu_count: int,
    replicas: int,
    max_runtime_minutes: int | None,
    resource_kind: str | None = None,
    vgpu_compute_percent: int | None = None,
) -> dict[str, list[str]]:
    """Why this account may not submit this request; empty when it may."""
    account = account_for_user(user=user)
    if gpu_model is None or account.billing_enabled:
        return {}
    if not model_is_free_tier(gpu_model):
        free = ", ".join(GpuModel.objects.filter(free_tier=True).values_list("name", flat=True))
        return {
            "gpu_model": [
                _(
                    "Your account has no billing enabled, so it may use only the free-tier GPU "
                    "models (%(free)s), not %(model)s. Ask an admin to enable billing."
                )
                % {"free": free or "—", "model": gpu_model.name}
            ]
        }
    free = _free_request(
        account, gpu_model, gpu_count, replicas, resource_kind, vgpu_compute_percent
    )
    if free is None:
        return {}
    room, per_hour = free
    return _safe_admission_errors(room, per_hour, replicas, max_runtime_minutes)


def _free_request(
    account: Account,
    gpu_model: GpuModel,
    gpu_count: int,
    replicas: int,
    resource_kind: str | None,
    vgpu_compute_percent: int | None,
) -> tuple[FreeRoom, Decimal] | None:
    """The grant's room and the request's card-hours per hour; None without a grant."""
    room = free_room(account=account, gpu_model=gpu_model)
    if room is None:
        return None
    per_hour = replicas * cards_per_replica(
        resource_kind=resource_kind, gpu_count=gpu_count, vgpu_compute_percent=vgpu_compute_percent
    )
    return room, per_hour


def _safe_admission_errors(
    room: FreeRoom, per_hour: Decimal, replicas: int, max_runtime_minutes: int | None
) -> dict[str, list[str]]:
    numbers = {
        "model": room.model_name,
        "grant": hours_text(room.grant),
        "used": hours_text(room.used),
        "reserved": hours_text(room.reserved),
        "remaining": hours_text(room.remaining),
    }
    max_minutes = room.max_minutes(per_hour)
    if max_minutes < 1:
        message = _(
            "Your free %(model)s card-hours are used up: %(remaining)s of %(grant)s remain "
            "(%(used)s used, %(reserved)s held by your other unfinished jobs). "
            "Ask an admin to enable billing."
        )
        return {"gpu_model": [message % numbers]}
    if max_runtime_minutes is None or max_runtime_minutes <= max_minutes:
        return {}
    message = _(
        "This job may use %(need)s free %(model)s card-hours (%(cards)s cards × %(replicas)s "
        "replicas × %(hours)s h), but only %(remaining)s of your %(grant)s remain "
        "(%(used)s used, %(reserved)s held by your other unfinished jobs). Set a max run time "
        "of at most %(max_minutes)s minutes, or ask an admin to enable billing."
    )
    numbers |= {
        "need": hours_text(per_hour * max_runtime_minutes / 60),
        "cards": hours_text(per_hour / replicas),
        "replicas": replicas,
        "hours": hours_text(Decimal(max_runtime_minutes) / 60),
        "max_minutes": max_minutes,
    }
    return {"max_runtime_minutes": [message % numbers]}


def free_runtime_cap_minutes(
    *,
    user: AbstractBaseUser,
    gpu_model: GpuModel | None,
    gpu_count: int,
    replicas: int,
    resource_kind: str | None = None,
    vgpu_compute_percent: int | None = None,
) -> int | None:
    """The max run time a free account's job without one gets: what its free hours allow.

    None when no cap applies (a paid account, a model without a free grant), or when
    not even a minute is left, which ``job_billing_errors`` refuses.
    """
    account = account_for_user(user=user)
    if gpu_model is None or account.billing_enabled:
        return None
    free = _free_request(
        account, gpu_model, gpu_count, replicas, resource_kind, vgpu_compute_percent
    )
    if free is None:
        return None
    room, per_hour = free
    return room.max_minutes(per_hour) or None
