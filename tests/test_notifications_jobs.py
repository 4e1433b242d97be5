"""A job's owner hears of its start and its end once per event, as their settings say."""

import pytest
from django.core import mail
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs.execution.report import attempt_ended, attempt_running
from jobs.models import Job, Replica, ReplicaAttempt
from jobs.services.stop import job_stop
from notifications.models import Kind, Notification, NotificationSettings
from notifications.tasks import notify_job_event
from tests.agent_support import cpu_job, make_node
from tests.factories import UserFactory
from tests.notification_support import PATHS, last_event, move, queued_job_events

pytestmark = pytest.mark.django_db
S = Job.State
Attempt = ReplicaAttempt.State


@pytest.fixture
def owner(db):
    return UserFactory(username="owner", email="owner@example.com")


def job_of(owner, **fields) -> Job:
    return cpu_job("true", owner=owner, **fields)


def deliver(callbacks, times: int = 2) -> None:
    """Run each queued notification task, ``times`` over (as a redelivered task would)."""
    for event_id in queued_job_events(callbacks):
        for _ in range(times):
            notify_job_event(event_id)


def running_with_attempt(owner) -> tuple[Job, ReplicaAttempt]:
    job = job_of(owner, state=S.STARTING, attempt=1)
    node = make_node()
    replica = Replica.objects.create(job=job, index=0, node=node)
    attempt = ReplicaAttempt.objects.create(replica=replica, number=1, node=node)
    attempt_running(attempt_id=attempt.pk, started_at=timezone.now(), pid=1)
    return Job.objects.get(pk=job.pk), attempt


def end(attempt: ReplicaAttempt, state: str, reason: str = "") -> None:
    attempt_ended(
        attempt_id=attempt.pk,
        state=state,
        ended_at=timezone.now(),
        exit_code=0 if state == Attempt.SUCCEEDED else 1,
        reason=reason,
    )


@pytest.mark.parametrize(
    ("state", "kind", "emails"),
    [
        (S.RUNNING, Kind.STARTED, 0),  # in the app only by default
        (S.SUCCEEDED, Kind.SUCCEEDED, 1),
        (S.FAILED, Kind.FAILED, 1),
        (S.TIMED_OUT, Kind.TIMED_OUT, 1),
    ],
)
def test_each_state_notifies_once_even_when_the_task_runs_twice(
    owner, django_capture_on_commit_callbacks, state, kind, emails
):
    job = job_of(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        move(job, *PATHS[state])
    deliver(callbacks, times=2)

    notification = Notification.objects.get(user=owner, kind=kind)
    assert notification.in_app and notification.job == job
    assert notification.url == f"/jobs/{job.pk}/"
    assert len(mail.outbox) == emails
    if emails:
        assert mail.outbox[0].to == ["owner@example.com"]
        assert f"Job #{job.pk} {job.name}" in mail.outbox[0].subject
        assert notification.email_status == Notification.Email.SENT
        assert notification.emailed_at is not None


def test_a_notification_no_email_is_wanted_for_locks_nothing_for_one(
    owner, django_capture_on_commit_callbacks
):
    # A start is told in the app only (by default): no transaction that locks the row to
    # find it wants no email, on every job's start (and every event of a user without one).
    job = job_of(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        move(job, *PATHS[S.RUNNING])
    (event_id,) = queued_job_events(callbacks)
    with CaptureQueriesContext(connection) as queries:
        notify_job_event(event_id)
    assert Notification.objects.get(user=owner, kind=Kind.STARTED).in_app
    # The email's read: its row, if it still waits for its email (locked on PostgreSQL).
    assert not [q["sql"] for q in queries if '."email_status" = ' in q["sql"]]
    assert mail.outbox == []


def test_a_finished_job_tells_of_its_start_and_its_end(owner, django_capture_on_commit_callbacks):
    job = job_of(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        move(job, *PATHS[S.SUCCEEDED])
    deliver(callbacks)
    kinds = set(Notification.objects.filter(user=owner).values_list("kind", flat=True))
    assert kinds == {Kind.STARTED, Kind.SUCCEEDED}


def test_waiting_and_placement_moves_queue_nothing(owner, django_capture_on_commit_callbacks):
    job = job_of(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        move(job, S.RESOURCE_WAIT, S.QUOTA_WAIT, S.STARTING)
        move(job, S.STARTING, reason="a new reason, same state")
    assert queued_job_events(callbacks) == []


def test_a_transition_rolled_back_queues_nothing(owner, django_capture_on_commit_callbacks):
    job = job_of(owner, state=S.STARTING)
    with (
        django_capture_on_commit_callbacks() as callbacks,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        move(job, S.RUNNING)
        raise RuntimeError("the caller's transaction fails after the move")
    assert queued_job_events(callbacks) == []


def test_a_job_restarted_in_place_says_running_once(owner, django_capture_on_commit_callbacks):
    job = job_of(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        move(job, S.STARTING, S.RUNNING, S.STARTING, S.RUNNING)
    assert len(queued_job_events(callbacks)) == 2
    deliver(callbacks)
    assert Notification.objects.filter(user=owner, kind=Kind.STARTED).count() == 1


def test_the_failure_reason_is_the_body(owner, django_capture_on_commit_callbacks):
    job = job_of(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        move(job, S.STARTING, S.RUNNING)
        move(job, S.FAILED, reason="Replica 0 failed on attempt 1 (no retries left): exit code 7")
    deliver(callbacks)
    assert "exit code 7" in mail.outbox[0].body
    assert f"/jobs/{job.pk}/" in mail.outbox[0].body


def test_owner_stopping_a_waiting_job_is_not_told(owner, django_capture_on_commit_callbacks):
    job = job_of(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        job_stop(job=job, actor=owner)
    assert Job.objects.get(pk=job.pk).state == S.STOPPED
    assert len(queued_job_events(callbacks)) == 1
    deliver(callbacks)
    assert not Notification.objects.exists() and not mail.outbox


def test_owner_stopping_a_running_job_is_not_told(owner, django_capture_on_commit_callbacks):
    job, attempt = running_with_attempt(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        job_stop(job=job, actor=owner)
        end(attempt, Attempt.STOPPED, reason="Stopped by owner")
    assert Job.objects.get(pk=job.pk).state == S.STOPPED
    assert last_event(job).to_state == S.STOPPED
    deliver(callbacks)
    assert not Notification.objects.filter(kind=Kind.STOPPED).exists()
    assert not mail.outbox


def test_an_admin_stopping_a_running_job_is_a_stop_by_someone_else(
    owner, admin_user, django_capture_on_commit_callbacks
):
    job, attempt = running_with_attempt(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        job_stop(job=job, actor=admin_user)
        job_stop(job=job, actor=owner)  # too late: the admin's request is the one that counts
        end(attempt, Attempt.STOPPED, reason="Stopped by boss")
    deliver(callbacks)
    notification = Notification.objects.get(user=owner, kind=Kind.STOPPED)
    assert notification.data["stopped_by"] == "boss"
    (email,) = mail.outbox
    assert email.subject == f"[Trainyard] Job #{job.pk} {job.name} was stopped by boss"
    assert "Stopped by boss" in email.body


def test_a_project_member_stopping_a_waiting_job_tells_the_owner(
    owner, django_capture_on_commit_callbacks
):
    member = UserFactory(username="member")
    job = job_of(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        job_stop(job=job, actor=member)
    deliver(callbacks)
    assert Notification.objects.get(user=owner, kind=Kind.STOPPED).data["stopped_by"] == "member"
    assert Notification.objects.filter(user=member).count() == 0


def test_a_stop_without_a_person_is_a_stop_by_the_platform(
    owner, django_capture_on_commit_callbacks
):
    waiting = job_of(owner)
    running, attempt = running_with_attempt(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        job_stop(job=waiting, reason="free P4 hours used up (100 card-hours)")
        end(attempt, Attempt.STOPPED, reason="Cancelled in Slurm.")  # nobody asked here
    deliver(callbacks)
    assert {m.subject for m in mail.outbox} == {
        f"[Trainyard] Job #{job.pk} {job.name} was stopped by the platform"
        for job in (waiting, running)
    }
    assert {n.data.get("stopped_by") for n in Notification.objects.all()} == {None}


def test_timed_out_through_the_reporting_path(owner, django_capture_on_commit_callbacks):
    job, attempt = running_with_attempt(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        end(attempt, Attempt.TIMED_OUT, reason="Max run time of 1 minute exceeded.")
    deliver(callbacks)
    notification = Notification.objects.get(user=owner, kind=Kind.TIMED_OUT)
    assert notification.data["reason"] == "Max run time of 1 minute exceeded."
    assert len(mail.outbox) == 1


@pytest.mark.parametrize(
    ("settings_values", "in_app", "emails"),
    [
        ({}, True, 1),
        ({"failed_email": False}, True, 0),
        ({"failed_in_app": False}, False, 1),
        ({"failed_in_app": False, "failed_email": False}, False, 0),
    ],
)
def test_the_owners_settings_choose_the_channels(
    owner, django_capture_on_commit_callbacks, settings_values, in_app, emails
):
    NotificationSettings.objects.create(user=owner, **settings_values)
    job = job_of(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        move(job, *PATHS[S.FAILED])
    deliver(callbacks)
    notification = Notification.objects.get(kind=Kind.FAILED)
    assert notification.in_app is in_app
    assert len(mail.outbox) == emails


def test_email_for_starts_when_chosen(owner, django_capture_on_commit_callbacks):
    NotificationSettings.objects.create(user=owner, started_email=True)
    job = job_of(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        move(job, *PATHS[S.RUNNING])
    deliver(callbacks)
    assert [m.subject for m in mail.outbox] == [f"[Trainyard] Job #{job.pk} {job.name} is running"]


def test_no_email_without_an_address(django_capture_on_commit_callbacks):
    nobody = UserFactory(username="nomail", email="")
    job = job_of(nobody)
    with django_capture_on_commit_callbacks() as callbacks:
        move(job, *PATHS[S.SUCCEEDED])
    deliver(callbacks)
    notification = Notification.objects.get(kind=Kind.SUCCEEDED)
    assert notification.in_app and notification.email_status == Notification.Email.NO_ADDRESS
    assert not mail.outbox


def test_the_database_refuses_a_second_row_for_one_event(owner):
    job = job_of(owner)
    fields = {"user": owner, "kind": Kind.FAILED, "job": job, "in_app": True}
    Notification.objects.create(event_key=f"job:{job.pk}:failed", email_status="off", **fields)
    with pytest.raises(IntegrityError), transaction.atomic():
        Notification.objects.create(event_key=f"job:{job.pk}:failed", email_status="off", **fields)


def failed_event_id(owner, django_capture_on_commit_callbacks) -> int:
    job = job_of(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        move(job, *PATHS[S.FAILED])
    (_started, failed_event) = queued_job_events(callbacks)
    return failed_event


def test_a_send_the_mail_server_refuses_stays_pending_for_the_retry(
    owner, settings, django_capture_on_commit_callbacks
):
    event_id = failed_event_id(owner, django_capture_on_commit_callbacks)
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 1, 2
    settings.EMAIL_USE_TLS = False
    with pytest.raises(OSError):  # nothing listens on port 1: the task retries on this
        notify_job_event(event_id)
    notification = Notification.objects.get(kind=Kind.FAILED)
    assert notification.email_status == Notification.Email.PENDING

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    notify_job_event(event_id)
    notify_job_event(event_id)
    assert len(mail.outbox) == 1
    assert Notification.objects.get(pk=notification.pk).email_status == Notification.Email.SENT


def test_email_links_start_with_the_base_url(owner, settings, django_capture_on_commit_callbacks):
    settings.TRAINYARD_BASE_URL = "https://trainyard.example"
    event_id = failed_event_id(owner, django_capture_on_commit_callbacks)
    notify_job_event(event_id)
    job_id = Notification.objects.get(kind=Kind.FAILED).job_id
    body = mail.outbox[0].body
    assert f"https://trainyard.example/jobs/{job_id}/" in body
    assert "https://trainyard.example/notifications/settings/" in body


def test_one_events_failing_notification_in_a_batch_loses_none_of_the_others(
    owner, monkeypatch, caplog
):
    """A batch of reports sends its events as one task (``notify_job_events``): one that
    fails is logged, the others are still notified, and the task fails for a retry."""
    from notifications import services
    from notifications.tasks import notify_job_events

    first, second = job_of(owner), job_of(owner)
    move(first, *PATHS[S.SUCCEEDED])
    move(second, *PATHS[S.SUCCEEDED])
    broken, fine = last_event(first).pk, last_event(second).pk
    notify = services.job_event_notify

    def notify_or_fail(*, event_id):
        if event_id == broken:
            raise ValueError("a bad row")
        return notify(event_id=event_id)

    monkeypatch.setattr("notifications.tasks.job_event_notify", notify_or_fail)
    with pytest.raises(ValueError):
        notify_job_events([broken, fine])
    assert Notification.objects.filter(job=second, kind="succeeded").exists()
    assert f"notifying event {broken} failed" in caplog.text
