"""Reads: a user's settings (the defaults without a row) and their in-app notifications."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from .models import Notification, NotificationSettings

# The navigation shows "99+" beyond this; counting stops there so the query stays cheap.
UNREAD_SHOWN_MAX = 99


def settings_for_user(*, user: AbstractBaseUser) -> NotificationSettings:
    """The user's settings, or unsaved defaults (nothing is written on a read)."""
    found = NotificationSettings.objects.filter(user=user).first()
    return found or NotificationSettings(user=user)


def settings_for_users(*, user_ids: Iterable[int]) -> dict[int, NotificationSettings]:
    """Settings of many users in one query; users without a row get unsaved defaults."""
    ids = set(user_ids)
    found = {s.user_id: s for s in NotificationSettings.objects.filter(user_id__in=ids)}
    return {pk: found.get(pk) or NotificationSettings(user_id=pk) for pk in ids}


def notifications_for_user(*, user: AbstractBaseUser) -> QuerySet[Notification]:
    """What the user's notification page lists, newest first."""
    return Notification.objects.filter(user=user, in_app=True).order_by("-created_at", "-pk")


def unread_count(*, user: AbstractBaseUser) -> int:
    """Unread in-app notifications, counted up to ``UNREAD_SHOWN_MAX + 1`` (one query)."""
    unread = notifications_for_user(user=user).filter(read_at__isnull=True)
    return unread.values("pk")[: UNREAD_SHOWN_MAX + 1].count()
