"""The unread count in the main navigation: one bounded query, only when a page shows it."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from .selectors import UNREAD_SHOWN_MAX, unread_count


def unread_notifications(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}

    def label() -> str:
        count = unread_count(user=user)
        if not count:
            return ""
        return f"{UNREAD_SHOWN_MAX}+" if count > UNREAD_SHOWN_MAX else str(count)

    return {"unread_notifications": SimpleLazyObject(label)}
