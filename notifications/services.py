"""Writes: record each event once, send its email once, mark read, save settings.

Every function here is safe to run again: a repeated task finds the event's row
(unique on user + event key) and an email no longer pending.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import (
    DateTimeField,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    IntegerField,
    OuterRef,
    Subquery,
    Value,
)
from django.db.models.functions import Coalesce
from django.urls import reverse
from django.utils import timezone

from billing.formatting import hours_text
from billing.models import FreeGrant
from jobs.models import Job, JobEvent
from jobs.services.stop import stop_requester

from .emails import notification_email
from .models import DEFAULT_WAIT_MINUTES, Kind, Notification, NotificationSettings
from .rules import FREE_HOURS_PERCENTS, JOB_STATE_KINDS, grant_event_key, job_event_key
from .selectors import settings_for_user, settings_for_users

Email = Notification.Email
# Jobs one long-wait pass looks at; the rest wait for the next pass (a minute later).
LONG_WAITS_PER_PASS = 500


def notification_record(
    *,
    user: AbstractBaseUser,
    kind: str,
    event_key: str,
    data: dict,
    url: str = "",
    job: Job | None = None,
    user_settings: NotificationSettings | None = None,
) -> tuple[Notification, bool]:
    """The event's notification, written with the channels the user wants now; (row, created)."""
    user_settings = user_settings or settings_for_user(user=user)
    in_app, by_email = user_settings.wants(kind)
    email_status = Email.NO_ADDRESS if not user.email else Email.PENDING
    return Notification.objects.get_or_create(
        user=user,
        event_key=event_key,
        defaults={
            "kind": kind,
            "job": job,
            "data": data,
            "url": url,
            "in_app": in_app,
            "email_status": email_status if by_email else Email.OFF,
        },
    )


def job_event_notify(*, event_id: int) -> Notification | None:
    """The owner's notification of a job's state change, if that change notifies."""
    event = JobEvent.objects.select_related("job__owner").filter(pk=event_id).first()
    if event is None or event.from_state == event.to_state:
        return None
    kind = JOB_STATE_KINDS.get(event.to_state)
    if kind is None:
        return None
    job = event.job
    data = {
        "job_id": job.pk,
        "job_name": job.name,
        "reason": event.reason,
        "reason_code": event.reason_code,
        "reason_params": event.reason_params,
    }
    if kind == Kind.STOPPED:
        requester = stop_requester(job=job)
        if requester is not None and requester.pk == job.owner_id:
            return None
        if requester is not None:
            data["stopped_by"] = requester.get_username()
    notification, _created = notification_record(
        user=job.owner,
        kind=kind,
        event_key=job_event_key(job_id=job.pk, kind=kind),
        data=data,
        url=reverse("jobs:detail", args=[job.pk]),
        job=job,
    )
    return notification


def idle_cards_notify(*, job_id: int, percent: float, minutes: int) -> Notification | None:
    """The owner's notification that a job's cards sat idle: once per idle spell."""
    job = Job.objects.select_related("owner").filter(pk=job_id).first()
    if job is None or job.idle_since is None:
        return None  # busy again, or gone, before this ran
    notification, _created = notification_record(
        user=job.owner,
        kind=Kind.IDLE_CARDS,
        event_key=f"{job_event_key(job_id=job.pk, kind=Kind.IDLE_CARDS)}:"
        f"{int(job.idle_since.timestamp())}",
        data={"job_id": job.pk, "job_name": job.name, "percent": percent, "minutes": minutes},
        url=reverse("jobs:detail", args=[job.pk]),
        job=job,
    )
    return notification


def long_waits_notify(*, now: datetime | None = None) -> list[int]:
    """Notify owners of jobs waiting past their threshold; return the ids with an email to send.

    "Waiting" counts from submission, for a job that never started: a job sent
    back to wait after a lost node has started and says so on its own page.
    """
    now = now or timezone.now()
    threshold = Coalesce(
        Subquery(
            NotificationSettings.objects.filter(user=OuterRef("owner")).values("long_wait_minutes")[
                :1
            ]
        ),
        Value(DEFAULT_WAIT_MINUTES),
        # Plain integer: SQLite multiplies a duration only by an IntegerField.
        output_field=IntegerField(),
    )
    notified = Notification.objects.filter(job=OuterRef("pk"), kind=Kind.LONG_WAIT)
    due = (
        Job.objects.filter(state__in=Job.WAITING_STATES, started_at__isnull=True)
        .alias(
            due_at=ExpressionWrapper(
                F("submitted_at")
                + ExpressionWrapper(threshold * timedelta(minutes=1), output_field=DurationField()),
                output_field=DateTimeField(),
            )
        )
        .filter(due_at__lte=now)
        .filter(~Exists(notified))
        .select_related("owner")
        .order_by("pk")[:LONG_WAITS_PER_PASS]
    )
    jobs = list(due)
    user_settings = settings_for_users(user_ids={job.owner_id for job in jobs})
    to_email = []
    for job in jobs:
        owner_settings = user_settings[job.owner_id]
        notification, created = notification_record(
            user=job.owner,
            kind=Kind.LONG_WAIT,
            event_key=job_event_key(job_id=job.pk, kind=Kind.LONG_WAIT),
            data={
                "job_id": job.pk,
                "job_name": job.name,
                "reason": job.state_reason,
                "reason_code": job.state_reason_code,
                "reason_params": job.state_reason_params,
                "minutes": owner_settings.long_wait_minutes,
            },
            url=reverse("jobs:detail", args=[job.pk]),
            job=job,
            user_settings=owner_settings,
        )
        if created and notification.email_status == Email.PENDING:
            to_email.append(notification.pk)
    return to_email


def free_hours_notify(*, grant_id: int, percent: int) -> Notification | None:
    """The grant owner's notification once the grant is ``percent`` used (one per line)."""
    grant = (
        FreeGrant.objects.select_related("account__user", "gpu_model").filter(pk=grant_id).first()
    )
    if grant is None or not grant.card_hours:
        return None
    if percent not in FREE_HOURS_PERCENTS:
        return None
    if grant.used_card_seconds < grant.card_seconds * percent / 100:
        return None  # the grant was raised since the accrual crossed the line
    notification, _created = notification_record(
        user=grant.account.user,
        kind=Kind.FREE_HOURS,
        event_key=grant_event_key(grant_id=grant.pk, percent=percent),
        data={
            "percent": percent,
            "model": grant.gpu_model.name,
            "used_hours": hours_text(grant.used_card_hours),
            "grant_hours": hours_text(grant.card_hours),
        },
        url=reverse("billing:mine"),
    )
    return notification


def notification_email_send(*, notification_id: int) -> bool:
    """Send the notification's email if it is still pending; True if this call sent it.

    The row stays locked while the mail server answers: a second task skips it,
    and a send that fails rolls back to pending for the task's retry.
    """
    with transaction.atomic():
        notification = (
            Notification.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("user")
            .filter(pk=notification_id, email_status=Email.PENDING)
            .first()
        )
        if notification is None:
            return False
        user = notification.user
        if not user.email:
            Notification.objects.filter(pk=notification.pk).update(email_status=Email.NO_ADDRESS)
            return False
        language = settings_for_user(user=user).language
        notification_email(notification, language=language).send()
        Notification.objects.filter(pk=notification.pk).update(
            email_status=Email.SENT, emailed_at=timezone.now()
        )
    return True


def emails_pending(*, now: datetime | None = None, limit: int = 500) -> list[int]:
    """Emails left pending a while (a lost task, a mail server that was down), a day at most."""
    now = now or timezone.now()
    pending = Notification.objects.filter(
        email_status=Email.PENDING,
        created_at__lte=now - timedelta(minutes=1),
        created_at__gte=now - timedelta(days=1),
    )
    return list(pending.order_by("pk").values_list("pk", flat=True)[:limit])


def notifications_mark_read(
    *, user: AbstractBaseUser, notification_ids: list[int] | None = None
) -> int:
    """Mark the user's unread notifications read (all, or those given); return how many."""
    unread = Notification.objects.filter(user=user, read_at__isnull=True)
    if notification_ids is not None:
        unread = unread.filter(pk__in=notification_ids)
    return unread.update(read_at=timezone.now())


def notification_settings_save(*, user: AbstractBaseUser, values: dict) -> NotificationSettings:
    """Save the user's choices; a ``ValidationError`` names the field and its limit."""
    with transaction.atomic():
        row, _created = NotificationSettings.objects.select_for_update().get_or_create(user=user)
        for name, value in values.items():
            setattr(row, name, value)
        row.full_clean()
        row.save()
    return row
