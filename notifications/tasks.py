"""Celery tasks of notifications: each takes ids, re-reads rows and is safe to run again."""

import logging
from smtplib import SMTPException

from celery import shared_task

from .models import Notification
from .services import (
    emails_pending,
    free_hours_notify,
    idle_cards_notify,
    job_event_notify,
    long_waits_notify,
    notification_email_send,
)

logger = logging.getLogger(__name__)
# A mail server that is down or refuses for a while: retry, backing off.
RETRY = {"autoretry_for": (SMTPException, OSError), "retry_backoff": True, "max_retries": 8}


@shared_task(name="notifications.tasks.notify_job_event", ignore_result=True, **RETRY)
def notify_job_event(event_id: int) -> None:
    """Tell a job's owner of the state change recorded as ``JobEvent`` ``event_id``."""

    notification = job_event_notify(event_id=event_id)
    email_if_pending(notification)


@shared_task(name="notifications.tasks.notify_job_events", ignore_result=True, **RETRY)
def notify_job_events(event_ids: list[int]) -> None:
    """``notify_job_event`` for each of these events, committed by one batch of reports.

    One that fails holds back none of the others: it is logged, and the task then fails
    (retried where the mail server was the cause; the events done are found done)."""
    failed: Exception | None = None
    for event_id in event_ids:
        try:
            notify_job_event(event_id)
        except Exception as error:
            logger.exception("notifying event %s failed", event_id)
            failed = failed or error
    if failed is not None:
        raise failed


@shared_task(name="notifications.tasks.notify_free_hours", ignore_result=True, **RETRY)
def notify_free_hours(grant_id: int, percent: int = 80) -> None:
    """Tell an account's user that a free grant passed ``percent`` used (80 or 95)."""

    notification = free_hours_notify(grant_id=grant_id, percent=percent)
    email_if_pending(notification)


@shared_task(name="notifications.tasks.notify_idle_cards", ignore_result=True, **RETRY)
def notify_idle_cards(job_id: int, percent: float, minutes: int) -> None:
    """Tell a job's owner that its cards averaged ``percent`` GPU use over ``minutes``."""

    notification = idle_cards_notify(job_id=job_id, percent=percent, minutes=minutes)
    email_if_pending(notification)


@shared_task(name="notifications.tasks.notify_long_waits", ignore_result=True)
def notify_long_waits() -> int:
    """Every minute: jobs waiting past their owner's threshold; and emails left pending."""

    to_send = set(long_waits_notify()) | set(emails_pending())
    for notification_id in sorted(to_send):
        send_notification_email.delay(notification_id)
    return len(to_send)


@shared_task(name="notifications.tasks.send_notification_email", ignore_result=True, **RETRY)
def send_notification_email(notification_id: int) -> None:

    notification_email_send(notification_id=notification_id)


def email_if_pending(notification: Notification | None) -> None:
    """Send the notification's email if it waits for one; one it does not want (a start, by
    default) or cannot have (no address) costs no transaction to find that out."""
    if notification is not None and notification.email_status == Notification.Email.PENDING:
        notification_email_send(notification_id=notification.pk)
