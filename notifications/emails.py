"""A notification as an email, in the language the user chose for email."""

from __future__ import annotations

from django.conf import settings
from django.core.mail import EmailMessage
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation

from .models import Notification
from .texts import notification_text


def absolute_url(path: str) -> str:
    """``TRAINYARD_BASE_URL`` + path; the path alone when no base URL is set."""
    return f"{settings.TRAINYARD_BASE_URL}{path}" if path else ""


def notification_email(notification: Notification, *, language: str) -> EmailMessage:
    with translation.override(language):
        text = notification_text(notification)
        body = render_to_string(
            "notifications/email.txt",
            {
                "text": text,
                "link": absolute_url(notification.url),
                "settings_link": absolute_url(reverse("notifications:settings")),
            },
        )
    # A header holds one line, whatever a job's name contains.
    subject = " ".join(f"[Trainyard] {text.title}".split())
    return EmailMessage(subject=subject, body=body, to=[notification.user.email])
