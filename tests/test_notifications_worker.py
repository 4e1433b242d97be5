"""A real Celery worker sends the notifications after the changes commit, once each."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import Job
from notifications.models import Kind, Notification, NotificationSettings
from notifications.tasks import notify_job_event, notify_long_waits
from tests.factories import JobFactory, UserFactory
from tests.notification_support import PATHS, last_event, move
from tests.support.processes import celery_idle
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration
Email = Notification.Email


def sent(user, kind: str) -> bool:
    return Notification.objects.filter(user=user, kind=kind, email_status=Email.SENT).exists()


def test_a_committed_job_end_is_mailed_once_by_the_worker(start_celery_worker, tmp_path):
    owner = UserFactory(username="owner", email="owner@example.com")
    job = JobFactory(owner=owner)
    start_celery_worker(queues="notifications", env={"EMAIL_HOST": ""})  # console mail

    move(job, *PATHS[Job.State.SUCCEEDED])  # each move commits: autocommit
    wait_until(lambda: sent(owner, Kind.SUCCEEDED), what="the end mailed", timeout=30)
    notify_job_event.delay(last_event(job).pk)  # a redelivered task
    wait_until(
        lambda: Notification.objects.filter(user=owner, kind=Kind.STARTED).exists(),
        what="the start notified",
        timeout=30,
    )
    worker_log = tmp_path / "worker-0.log"
    wait_until(lambda: celery_idle(worker_log, ["notifications"]), what="every task run")

    log = worker_log.read_text()
    subject = f"Subject: [Trainyard] Job #{job.pk} {job.name} succeeded"
    assert log.count(subject) == 1, log
    assert Notification.objects.filter(user=owner).count() == 2


def test_the_beat_task_finds_a_long_wait_and_the_worker_mails_it(start_celery_worker, tmp_path):
    owner = UserFactory(username="owner", email="owner@example.com")
    NotificationSettings.objects.create(user=owner, long_wait_email=True)
    job = JobFactory(owner=owner, state=Job.State.QUOTA_WAIT)
    Job.objects.filter(pk=job.pk).update(submitted_at=timezone.now() - timedelta(minutes=31))
    start_celery_worker(queues="notifications", env={"EMAIL_HOST": ""})

    notify_long_waits.delay()
    notify_long_waits.delay()
    wait_until(lambda: sent(owner, Kind.LONG_WAIT), what="the long wait mailed", timeout=30)
    worker_log = tmp_path / "worker-0.log"
    wait_until(lambda: celery_idle(worker_log, ["notifications"]), what="both tasks run")

    log = worker_log.read_text()
    assert log.count(f"Subject: [Trainyard] Job #{job.pk} {job.name} has waited over 30") == 1


def test_notification_tasks_go_to_their_own_queue_and_scheduling_stays_apart():
    from trainyard.celery import app

    for name in (
        "notifications.tasks.notify_job_event",
        "notifications.tasks.notify_free_hours",
        "notifications.tasks.notify_long_waits",
        "notifications.tasks.send_notification_email",
    ):
        assert app.amqp.router.route({}, name)["queue"].name == "notifications"
    for name in ("jobs.tasks.schedule_pass", "jobs.slurm.reports", "jobs.slurm.submit"):
        assert app.amqp.router.route({}, name)["queue"].name == "celery"
