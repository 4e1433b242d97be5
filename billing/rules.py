"""Billing rules that decide whether a job may be submitted at all.

The job form, the API and the CLI all reach these through the job submit
service; each returns errors keyed by the request field they concern.

Free hours are consumed as they are used, never held: a free account may
run as many free-tier jobs as its quota allows, with or without a max run
time, while any of its free hours remain. When they run out, the accrual stops
every free job of the account (``accounting/services/grants.py``), and the
minutes a job needs to stop are recorded, not charged. (The first version
admitted "safely", as Slurm's ``AccountingStorageEnforce=safe``: a job had to
fit at its max run time after what the account's other unfinished jobs might
still use, and a job without one got all the hours left, which locked the
account out of its free hours after its first job.)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import prefetch_related_objects
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from resources.models import GpuModel, ResourceKind
from resources.ratios import card_share

from .accounts import account_for_user
from .formatting import grant_figures, hours_text
from .models import Account, FreeGrant, model_is_free_tier


def cards_per_replica(
    *, resource_kind: str | None, gpu_count: int, vgpu_compute_percent: int | None
) -> Decimal:
    """Card-hours a replica uses per hour: a virtual GPU counts its compute share."""
    is_share = resource_kind == ResourceKind.VGPU and vgpu_compute_percent
    return card_share(
        gpu_count=gpu_count, vgpu_compute_percent=vgpu_compute_percent if is_share else None
    )


@dataclass(frozen=True)
class FreeRoom:
    """What is left of a free grant, in card-hours."""

    model_name: str
    grant: Decimal
    used: Decimal

    @property
    def remaining(self) -> Decimal:
        return max(self.grant - self.used, Decimal(0))

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
    )


NEEDS_BILLING, FREE_HOURS_USED_UP = "needs_billing", "free_hours_used_up"
# What a list of models says next to one the account may not use.
REFUSAL_LABELS = {
    NEEDS_BILLING: gettext_lazy("Needs billing"),
    FREE_HOURS_USED_UP: gettext_lazy("Free hours used up"),
}


@dataclass(frozen=True)
class ModelRefusal:
    """Why an account may not use a GPU model: a code, its short label and the full reason."""

    code: str
    message: str
    # The reason without the model, for a list of several (the free panel's note).
    note: str

    @property
    def label(self) -> str:
        return str(REFUSAL_LABELS[self.code])


def gpu_model_refusal(
    *,
    account: Account,
    gpu_model: GpuModel,
    card_hours_per_hour: Decimal = Decimal(1),
    free_names: str | None = None,
) -> ModelRefusal | None:
    """Why ``account`` may not use ``gpu_model`` at that rate; None when it may.

    The one rule behind submit, the feasibility check, the form's lists, the
    free panel and the API. ``free_names``: the free-tier models, when the
    caller asks about several models.
    """
    if account.billing_enabled:
        return None
    if not model_is_free_tier(gpu_model):
        if free_names is None:
            free_names = free_tier_names()
        message = _(
            "Your account has no billing enabled, so it may use only the free-tier GPU "
            "models (%(free)s), not %(model)s. Ask an admin to enable billing."
        ) % {"free": free_names or "—", "model": gpu_model.name}
        note = _(
            "Your account has no billing enabled, so it may use only the free-tier GPU "
            "models (%(free)s). Ask an admin to enable billing."
        ) % {"free": free_names or "—"}
        return ModelRefusal(NEEDS_BILLING, message, note)
    room = free_room(account=account, gpu_model=gpu_model)
    if room is None or room.max_minutes(card_hours_per_hour) >= 1:
        return None
    shown = grant_figures(grant_hours=room.grant, used_hours=room.used)
    message = _(
        "Your free %(model)s card-hours are used up: %(remaining)s of %(grant)s remain "
        "(%(used)s used). Ask an admin to enable billing."
    ) % {
        "model": room.model_name,
        "grant": hours_text(shown.grant),
        "used": hours_text(shown.used),
        "remaining": hours_text(shown.remaining),
    }
    return ModelRefusal(FREE_HOURS_USED_UP, message, message)


def free_tier_models() -> list[GpuModel]:
    """The GPU models an account without billing may use (``model_is_free_tier``), by name.

    An aggregated model counts when every member is free tier, whatever its own flag.
    """
    models = list(GpuModel.objects.all())
    # Members matter for aggregated models only: no second query when there are none.
    prefetch_related_objects([m for m in models if m.is_aggregated], "members")
    return [m for m in models if model_is_free_tier(m)]


def free_tier_names(models: Iterable[GpuModel] | None = None) -> str:
    """The free-tier models' names, for a message ('' when there are none)."""
    return ", ".join(m.name for m in (free_tier_models() if models is None else models))


def gpu_model_refusals(
    *, user: AbstractBaseUser, gpu_models: Iterable[GpuModel]
) -> dict[str, ModelRefusal]:
    """By model name, why ``user`` may not use each of ``gpu_models`` (one card); absent: may."""
    account = account_for_user(user=user)
    if account.billing_enabled:
        return {}
    free_names = free_tier_names()
    refusals = {
        model.name: gpu_model_refusal(account=account, gpu_model=model, free_names=free_names)
        for model in gpu_models
    }
    return {name: refusal for name, refusal in refusals.items() if refusal is not None}


def job_billing_errors(
    *,
    user: AbstractBaseUser,
    gpu_model: GpuModel | None,
    gpu_count: int,
    replicas: int,
    resource_kind: str | None = None,
    vgpu_compute_percent: int | None = None,
) -> dict[str, list[str]]:
    """Why this account may not submit this request; empty when it may.

    The max run time plays no part: free hours are used, not held.
    """
    if gpu_model is None:
        return {}
    per_hour = replicas * cards_per_replica(
        resource_kind=resource_kind, gpu_count=gpu_count, vgpu_compute_percent=vgpu_compute_percent
    )
    refusal = gpu_model_refusal(
        account=account_for_user(user=user), gpu_model=gpu_model, card_hours_per_hour=per_hour
    )
    return {"gpu_model": [refusal.message]} if refusal else {}
