"""Long waits and free hours passing 80 %: each notifies once, as the user's settings say."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core import mail
from django.utils import timezone

from accounting.services import usage_accrue
from billing.models import FreeGrant
from jobs.models import Job
from notifications.models import Kind, Notification, NotificationSettings
from notifications.services import long_waits_notify
from notifications.tasks import notify_free_hours, send_notification_email
from tests.billing_cast import T0, attempt_of, grant_of, job_on, p4_model, set_price
from tests.factories import JobFactory, UserFactory
from tests.notification_support import queued_grants

pytestmark = pytest.mark.django_db
S = Job.State


@pytest.fixture
def owner(db):
    return UserFactory(username="owner", email="owner@example.com")


def waiting_job(owner, **fields) -> Job:
    return JobFactory(owner=owner, state=S.RESOURCE_WAIT, state_reason="no free V100", **fields)


def minutes_after(job: Job, minutes: int):
    return job.submitted_at + timedelta(minutes=minutes)


def long_waits(user) -> list[Notification]:
    return list(Notification.objects.filter(user=user, kind=Kind.LONG_WAIT))


def test_a_job_waiting_past_the_default_30_minutes_notifies_once(owner):
    job = waiting_job(owner)
    assert long_waits_notify(now=minutes_after(job, 29)) == []
    assert long_waits(owner) == []

    assert long_waits_notify(now=minutes_after(job, 31)) == []  # no email by default
    assert long_waits_notify(now=minutes_after(job, 90)) == []
    (notification,) = long_waits(owner)
    assert notification.in_app and notification.job == job
    assert notification.data["minutes"] == 30
    assert notification.data["reason"] == "no free V100"
    assert notification.email_status == Notification.Email.OFF


def test_the_owners_threshold_counts(owner):
    NotificationSettings.objects.create(user=owner, long_wait_minutes=60)
    other = UserFactory(username="other")
    mine, theirs = waiting_job(owner), waiting_job(other)
    long_waits_notify(now=minutes_after(mine, 45))
    assert long_waits(owner) == [] and len(long_waits(other)) == 1
    long_waits_notify(now=minutes_after(mine, 61))
    assert [n.job for n in long_waits(owner)] == [mine]
    assert [n.job for n in long_waits(other)] == [theirs]


def test_started_and_running_jobs_are_not_long_waits(owner):
    waiting_job(owner, started_at=T0)  # back to wait after a lost node
    running = JobFactory(owner=owner, state=S.RUNNING)
    long_waits_notify(now=minutes_after(running, 600))
    assert long_waits(owner) == []


def test_a_long_wait_email_when_chosen_is_sent_once(owner):
    NotificationSettings.objects.create(user=owner, long_wait_email=True)
    job = waiting_job(owner)
    (notification_id,) = long_waits_notify(now=minutes_after(job, 31))
    assert long_waits_notify(now=minutes_after(job, 32)) == []
    send_notification_email(notification_id)
    send_notification_email(notification_id)
    (email,) = mail.outbox
    title = f"Job #{job.pk} {job.name} has waited over 30 minutes to start"
    assert email.subject == f"[Trainyard] {title}"
    assert "no free V100" in email.body


def test_long_wait_in_app_can_be_turned_off(owner):
    NotificationSettings.objects.create(user=owner, long_wait_in_app=False)
    job = waiting_job(owner)
    long_waits_notify(now=minutes_after(job, 31))
    (notification,) = long_waits(owner)
    assert not notification.in_app


def test_a_pass_with_nothing_due_takes_one_query(owner, django_assert_num_queries):
    waiting_job(owner)
    with django_assert_num_queries(1):
        assert long_waits_notify() == []


@pytest.fixture
def p4():
    model = p4_model()
    set_price(model, "3.00")
    return model


def accrue_minutes(minutes: range) -> None:
    for minute in minutes:
        usage_accrue(now=T0 + timedelta(minutes=minute, seconds=5))


def test_free_hours_past_80_percent_notify_once_with_one_email(
    p4, owner, django_capture_on_commit_callbacks
):
    grant = grant_of(owner, "1")
    attempt_of(job_on(p4, owner=owner), started=T0)
    with django_capture_on_commit_callbacks() as callbacks:
        accrue_minutes(range(1, 60))  # past 80 % and 95 %: billing warns twice
    assert queued_grants(callbacks) == [(grant.pk, 80), (grant.pk, 95)]

    notify_free_hours(grant.pk)
    notify_free_hours(grant.pk)
    (notification,) = Notification.objects.filter(user=owner, kind=Kind.FREE_HOURS)
    assert notification.url == "/billing/"
    assert notification.data["percent"] == 80 and notification.data["model"] == "P4"
    (email,) = mail.outbox
    assert email.subject == "[Trainyard] Free P4 hours 80 % used"
    assert "80 % of your free P4 card-hours are used" in email.body


def test_free_hours_past_95_percent_notify_a_second_time(p4, owner):
    """Issue 18, point 1: the user is warned at 80 % and again at 95 %, before the stop."""
    grant = grant_of(owner, "1")
    FreeGrant.objects.filter(pk=grant.pk).update(used_card_seconds=Decimal(2900))
    notify_free_hours(grant.pk, 80)
    FreeGrant.objects.filter(pk=grant.pk).update(used_card_seconds=Decimal(3500))
    notify_free_hours(grant.pk, 95)
    notify_free_hours(grant.pk, 95)
    notifications = Notification.objects.filter(user=owner, kind=Kind.FREE_HOURS)
    assert sorted(n.data["percent"] for n in notifications) == [80, 95]
    assert [email.subject for email in mail.outbox] == [
        "[Trainyard] Free P4 hours 80 % used",
        "[Trainyard] Free P4 hours 95 % used",
    ]


def test_free_hours_below_80_percent_queue_nothing(p4, owner, django_capture_on_commit_callbacks):
    grant_of(owner, "1")
    attempt_of(job_on(p4, owner=owner), started=T0)
    with django_capture_on_commit_callbacks() as callbacks:
        accrue_minutes(range(1, 40))
    assert queued_grants(callbacks) == []


def test_a_grant_raised_before_the_task_runs_notifies_nothing(p4, owner):
    grant = grant_of(owner, "1")
    FreeGrant.objects.filter(pk=grant.pk).update(used_card_seconds=Decimal(3000))
    FreeGrant.objects.filter(pk=grant.pk).update(card_hours=Decimal(100))
    notify_free_hours(grant.pk)
    assert not Notification.objects.exists()


def test_free_hours_email_in_the_chosen_language(p4, owner):
    NotificationSettings.objects.create(user=owner, language="zh-hans")
    grant = grant_of(owner, "1")
    FreeGrant.objects.filter(pk=grant.pk).update(used_card_seconds=Decimal(2900))
    notify_free_hours(grant.pk)
    (email,) = mail.outbox
    assert "您的免费 P4 卡时已使用 80%" in email.body


def test_free_hours_settings_are_respected(p4, owner):
    NotificationSettings.objects.create(user=owner, free_hours_email=False)
    grant = grant_of(owner, "1")
    FreeGrant.objects.filter(pk=grant.pk).update(used_card_seconds=Decimal(2900))
    notify_free_hours(grant.pk)
    assert Notification.objects.get(kind=Kind.FREE_HOURS).in_app
    assert not mail.outbox


def test_emails_left_pending_are_found_again_for_a_day(owner):
    from notifications.services import emails_pending

    now = timezone.now()
    rows = {}
    for name, age in [("fresh", timedelta(seconds=10)), ("stale", timedelta(minutes=5))]:
        rows[name] = Notification.objects.create(
            user=owner, kind=Kind.FAILED, event_key=name, in_app=True, email_status="pending"
        )
        Notification.objects.filter(pk=rows[name].pk).update(created_at=now - age)
    old = Notification.objects.create(
        user=owner, kind=Kind.FAILED, event_key="old", in_app=True, email_status="pending"
    )
    Notification.objects.filter(pk=old.pk).update(created_at=now - timedelta(days=2))
    assert emails_pending(now=now) == [rows["stale"].pk]
