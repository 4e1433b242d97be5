"""The free-resource panel for one user: resources' snapshot with what the user's
jobs hold and which models billing lets them use (``resources.free`` draws it)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from billing.rules import gpu_model_refusals
from resources.free import free_panel as draw_panel
from resources.free import free_resources_latest, panel_for_page
from resources.models import FreeResourceSnapshot, GpuModel

from .quota_usage import quota_usage


def free_panel(*, user: AbstractBaseUser, snapshot: FreeResourceSnapshot | None = None) -> dict:
    """What the panel and ``GET /api/v1/resources/free`` show to ``user``."""
    return _panel(user, snapshot, _refusals(user))


def free_panel_for_page(
    *, user: AbstractBaseUser, snapshot: FreeResourceSnapshot | None = None
) -> dict:
    """``free_panel`` plus its GPU rows with the user's own free quota of each model."""
    refusals = _refusals(user)
    return panel_for_page(_panel(user, snapshot, refusals), refusals)


def _panel(user: AbstractBaseUser, snapshot: FreeResourceSnapshot | None, refusals: dict) -> dict:
    return draw_panel(
        user=user,
        used=quota_usage(user=user),
        refusals=refusals,
        snapshot=snapshot or free_resources_latest(),
    )


def _refusals(user: AbstractBaseUser) -> dict:
    models = GpuModel.objects.prefetch_related("members")
    return gpu_model_refusals(user=user, gpu_models=models)
