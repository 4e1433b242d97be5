"""Jobs that hold cards they do not use (jobs/idle_cards.py): told once a spell, in their
owner's language, shown on their pages and the admin's, and stopped where the site says so.
The samples are what the agent writes with an NVML-shaped fake (tests/test_usage_metrics.py
exercises that path): card utilisation 0 % for a sleeping job, 90 % for a busy one."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from jobs.idle_cards import idle_cards_check
from jobs.models import AttemptSample, Job, Replica, ReplicaAttempt
from notifications.models import Kind, Notification, NotificationSettings
from notifications.receivers import enqueue_idle_cards
from notifications.tasks import notify_idle_cards
from resources.models import SiteSettings
from tests.agent_support import make_node
from tests.factories import JobFactory, UserFactory

pytestmark = pytest.mark.django_db
NOW = timezone.now().replace(microsecond=0)


def gpu_job(owner, name: str, util: int, *, minutes: int = 35, trained: int = 60) -> Job:
    """A running 1-card job, training for ``trained`` minutes, sampled every 10 s for the
    last ``minutes`` at ``util`` % on its card."""
    job = JobFactory(owner=owner, name=name, state=Job.State.RUNNING, gpu_count=1)
    node = make_node(name=f"gpu-{name}", gpu_model=job.gpu_model, gpu_count=4)
    replica = Replica.objects.create(job=job, index=0, node=node, card_indices=[2])
    attempt = ReplicaAttempt.objects.create(
        replica=replica,
        number=1,
        node=node,
        state=ReplicaAttempt.State.RUNNING,
        started_at=NOW - timedelta(minutes=trained + 5),
        training_started_at=NOW - timedelta(minutes=trained),
    )
    card = {"index": 2, "memory_mib": 100, "power_w": 30.0, "temp_c": 35}
    AttemptSample.objects.bulk_create(
        AttemptSample(
            attempt=attempt,
            at=NOW - timedelta(seconds=s),
            cpu_seconds=0,
            memory_mib=100,
            gpus=[{**card, "util": util}],
        )
        for s in range(0, minutes * 60, 10)
    )
    return job


def deliver(callbacks) -> None:
    """Run each queued idle-cards notification task here (as the worker would)."""
    for callback in callbacks:
        if isinstance(callback, partial) and callback.func is enqueue_idle_cards:
            notify_idle_cards(*callback.args)


@pytest.fixture
def owner_zh():
    owner = UserFactory(username="li", email="li@example.com")
    NotificationSettings.objects.create(user=owner, language="zh-hans")
    return owner


def test_a_sleeping_jobs_owner_is_told_once_in_their_language_and_a_busy_one_is_not(
    owner_zh, django_capture_on_commit_callbacks
):
    sleeping = gpu_job(owner_zh, "sleeping", util=0)
    busy = gpu_job(owner_zh, "busy", util=90)
    with django_capture_on_commit_callbacks() as callbacks:
        assert idle_cards_check(NOW) == {sleeping.pk: 0.0}
        assert idle_cards_check(NOW + timedelta(minutes=1)) == {sleeping.pk: 0.0}
    deliver(callbacks)

    [told] = Notification.objects.filter(kind=Kind.IDLE_CARDS)
    assert told.job_id == sleeping.pk and told.user == owner_zh and told.in_app
    [email] = mail.outbox
    assert f"任务 #{sleeping.pk} sleeping 没有使用它的卡" in email.subject
    sleeping.refresh_from_db()
    busy.refresh_from_db()
    assert sleeping.idle_since == NOW and sleeping.idle_gpu_percent == 0.0
    assert busy.idle_since is None


def test_augmentation_and_the_first_minutes_of_training_do_not_count(owner):
    assert idle_cards_check(NOW) == {}
    gpu_job(owner, "just-started", util=0, trained=35)  # 30 min window + 10 min grace > 35
    gpu_job(owner, "short-record", util=0, minutes=10)  # samples do not span the window
    assert idle_cards_check(NOW) == {}


def test_a_job_busy_again_loses_the_mark_and_is_told_again_next_time(owner):
    job = gpu_job(owner, "on-off", util=0)
    idle_cards_check(NOW)
    AttemptSample.objects.filter(attempt__replica__job=job).update(
        gpus=[{"index": 2, "util": 80, "memory_mib": 1, "power_w": 1.0, "temp_c": 1}]
    )
    assert idle_cards_check(NOW) == {}
    job.refresh_from_db()
    assert job.idle_since is None


def test_the_site_policy_stops_a_job_still_idle_and_says_why(
    owner, monkeypatch, django_capture_on_commit_callbacks
):
    stopped = []
    monkeypatch.setattr(
        "jobs.services.stop.job_stop_attempts",
        lambda *, job_id, reason: stopped.append((job_id, reason)),
    )
    SiteSettings.objects.update_or_create(pk=1, defaults={"idle_stop_minutes": 60})
    job = gpu_job(owner, "forgotten", util=1)
    idle_cards_check(NOW)
    Job.objects.filter(pk=job.pk).update(idle_since=NOW - timedelta(minutes=59))
    idle_cards_check(NOW)
    assert Job.objects.get(pk=job.pk).stop_requested_at is None
    Job.objects.filter(pk=job.pk).update(idle_since=NOW - timedelta(minutes=61))
    with django_capture_on_commit_callbacks(execute=True):
        idle_cards_check(NOW)
    assert Job.objects.get(pk=job.pk).stop_requested_at is not None
    [(job_id, reason)] = stopped
    assert job_id == job.pk and reason.code == "stopped.idle_cards"
    assert "1.0 % GPU use" in reason.text() and "60 minutes" in reason.text()


def test_the_job_pages_and_the_admin_show_an_idle_job(owner, client, admin_user):
    job = gpu_job(owner, "idle", util=2)
    idle_cards_check(NOW)
    client.force_login(owner)
    assert 'id="idle-note"' in client.get(f"/jobs/{job.pk}/").content.decode()
    assert "badge idle-cards" in client.get("/jobs/").content.decode()
    staff = Client()
    staff.force_login(admin_user)
    admin = staff.get("/admin/jobs/job/", {"idle_since__isempty": "0"}).content.decode()
    assert f"/admin/jobs/job/{job.pk}/change/" in admin


def test_a_window_longer_than_the_full_detail_hour_counts_its_thinned_samples(owner):
    """Past an hour the samples keep one a minute (jobs/usage_thinning.py): a 90-minute
    window's first sample may come up to a minute after it opens, and still covers it."""
    SiteSettings.objects.update_or_create(pk=1, defaults={"idle_window_minutes": 90})
    job = gpu_job(owner, "long-idle", util=0, minutes=60, trained=180)
    attempt = ReplicaAttempt.objects.get(replica__job=job)
    card = {"index": 2, "util": 0, "memory_mib": 100, "power_w": 30.0, "temp_c": 35}
    AttemptSample.objects.bulk_create(
        AttemptSample(
            attempt=attempt,
            at=NOW - timedelta(minutes=m, seconds=15),  # the last look of each minute
            cpu_seconds=0,
            memory_mib=100,
            gpus=[card],
        )
        for m in range(60, 120)
    )
    assert idle_cards_check(NOW) == {job.pk: 0.0}
