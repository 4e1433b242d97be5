"""A notification's title and body, in the active language; the page and the email share them."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext as _

from core.reasons import reason_text

from .models import Kind, Notification


@dataclass(frozen=True)
class Text:
    title: str
    body: str


def notification_text(notification: Notification) -> Text:
    data = notification.data
    if notification.kind == Kind.FREE_HOURS:
        return _free_hours_text(data)
    if notification.kind == Kind.IDLE_CARDS:
        return _idle_cards_text(data)
    job = {"id": data.get("job_id", ""), "name": data.get("job_name", "")}
    # Rendered now, in the reader's language; the English text for a notification without a code.
    reason = reason_text(
        data.get("reason_code", ""), data.get("reason_params"), data.get("reason", "")
    )
    if notification.kind == Kind.STARTED:
        title = _("Job #%(id)s %(name)s is running") % job
    elif notification.kind == Kind.SUCCEEDED:
        title = _("Job #%(id)s %(name)s succeeded") % job
    elif notification.kind == Kind.FAILED:
        title = _("Job #%(id)s %(name)s failed") % job
    elif notification.kind == Kind.TIMED_OUT:
        title = _("Job #%(id)s %(name)s timed out") % job
    elif notification.kind == Kind.STOPPED and data.get("stopped_by"):
        title = _("Job #%(id)s %(name)s was stopped by %(user)s") % {
            **job,
            "user": data["stopped_by"],
        }
    elif notification.kind == Kind.STOPPED:
        title = _("Job #%(id)s %(name)s was stopped by the platform") % job
    else:
        title = _("Job #%(id)s %(name)s has waited over %(minutes)s minutes to start") % {
            **job,
            "minutes": data.get("minutes", ""),
        }
    return Text(title=title, body=reason)


def _free_hours_text(data: dict) -> Text:
    values = {
        "percent": data.get("percent", ""),
        "model": data.get("model", ""),
        "used": data.get("used_hours", ""),
        "grant": data.get("grant_hours", ""),
    }
    title = _("Free %(model)s hours %(percent)s %% used") % values
    # The billing warning's own words (the same message as its account event and banner).
    body = (
        _(
            "%(percent)s %% of your free %(model)s card-hours are used "
            "(%(used)s of %(grant)s card-hours)."
        )
        % values
    )
    return Text(title=title, body=body)


def _idle_cards_text(data: dict) -> Text:
    values = {
        "id": data.get("job_id", ""),
        "name": data.get("job_name", ""),
        "percent": data.get("percent", ""),
        "minutes": data.get("minutes", ""),
    }
    title = _("Job #%(id)s %(name)s is not using its cards") % values
    body = (
        _(
            "Its cards averaged %(percent)s %% GPU use over the last %(minutes)s minutes. "
            "Stop it if it is stuck, so that others can use them."
        )
        % values
    )
    return Text(title=title, body=body)
