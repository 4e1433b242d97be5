"""Billing rules that decide whether a job may be submitted at all.

The job form, the API and the CLI all reach these through the job submit
service; each returns errors keyed by the request field they concern.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.utils.translation import gettext as _

from resources.models import GpuModel

from .services import account_for_user


def model_is_free_tier(gpu_model: GpuModel) -> bool:
    """An aggregated model is free-tier only when every member is."""
    if gpu_model.is_aggregated:
        members = list(gpu_model.members.all())
        return bool(members) and all(m.free_tier for m in members)
    return gpu_model.free_tier


def job_billing_errors(
    *,
    user: AbstractBaseUser,
    gpu_model: GpuModel | None,
    gpu_count: int,
    replicas: int,
    max_runtime_minutes: int | None,
) -> dict[str, list[str]]:
    """Why this account may not submit this request; empty when it may."""
    account = account_for_user(user=user)
    errors: dict[str, list[str]] = {}
    if gpu_model is not None and not account.billing_enabled and not model_is_free_tier(gpu_model):
        free = ", ".join(GpuModel.objects.filter(free_tier=True).values_list("name", flat=True))
        errors["gpu_model"] = [
            _(
                "Your account has no billing enabled, so it may use only the free-tier GPU "
                "models (%(free)s), not %(model)s. Ask an admin to enable billing."
            )
            % {"free": free or "—", "model": gpu_model.name}
        ]
    return errors
