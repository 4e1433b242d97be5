"""The free-hours banner shown on every page once a grant is 80 % used."""

from __future__ import annotations

from django.db.models import F
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from billing.models import SECONDS_PER_HOUR, FreeGrant

WARN_FROM_PERCENT = 80


def free_hours_banner(request: HttpRequest) -> dict:
    """Grants at or past the first warning; one query, only when a page shows it."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}

    def grants() -> list[FreeGrant]:
        return list(
            FreeGrant.objects.filter(
                account__user=user,
                card_hours__gt=0,
                used_card_seconds__gte=F("card_hours") * SECONDS_PER_HOUR * WARN_FROM_PERCENT / 100,
            ).select_related("gpu_model", "account")
        )

    return {"free_hours_banner": SimpleLazyObject(grants)}
