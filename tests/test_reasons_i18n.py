"""Reasons are stored as a code and its parameters and read in the reader's language.

A waiting job's reason, its start, a failure, the events and the notification
email: written by a worker that speaks English, read on the pages, the API
(``Accept-Language``) and in email in Simplified Chinese.
"""

import re

import pytest
from django.conf import settings
from django.core import mail
from django.urls import reverse
from django.utils import timezone, translation

from jobs.execution.replica.failure import exited_reason
from jobs.execution.report import attempt_ended, attempt_running
from jobs.models import Job, Replica, ReplicaAttempt
from jobs.scheduler import run_pass
from notifications.models import NotificationSettings
from tests.agent_support import cpu_job, make_node
from tests.factories import GpuModelFactory, JobFactory, NodeFactory, QuotaFactory
from tests.notification_support import queued_job_events

pytestmark = pytest.mark.django_db
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
WORDS = re.compile(r"[A-Za-z]{3,}")
NAMES = {"Slurm", "Trainyard", "GiB", "MiB", "bubblewrap", "nftables", "root"}


def english(text: str) -> list[str]:
    """English words left in ``text``; acronyms (GPU), units, names, paths and commands
    (`make run`) are not words to translate."""
    text = re.sub(r"`[^`]*`|/\S+", "", text)
    return [w for w in WORDS.findall(text) if not w.isupper() and w not in NAMES]


@pytest.fixture(autouse=True)
def back_to_english():
    """The test client leaves the last request's language active; later tests expect English."""
    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture
def waiting(owner):
    """Owner's job waiting for quota: 4 V100 cards wanted, 6 of a quota of 8 in use."""
    v100 = GpuModelFactory(name="V100")
    NodeFactory.create_batch(2, gpu_model=v100)
    QuotaFactory(user=owner, gpu_model=v100, limit=8)
    JobFactory(owner=owner, gpu_model=v100, gpu_count=6, name="big")
    job = JobFactory(owner=owner, gpu_model=v100, gpu_count=4, name="small")
    run_pass()
    job.refresh_from_db()
    assert job.state == Job.State.QUOTA_WAIT
    return job


def test_a_waiting_jobs_reason_is_chinese_on_its_page_and_in_the_jobs_list(owner_client, waiting):
    for url in (reverse("jobs:detail", args=[waiting.pk]), reverse("jobs:list")):
        page = owner_client.get(url, **ZH).content.decode()
        assert "等待配额：需要 4 张 V100 卡" in page, url
        assert "Waiting for quota" not in page, url


def test_the_start_reason_is_chinese_on_the_job_page(owner_client, owner):
    started = Job.objects.filter(owner=owner)
    v100 = GpuModelFactory(name="V100")
    NodeFactory(gpu_model=v100, name="p4-03")
    job = JobFactory(owner=owner, gpu_model=v100, gpu_count=1)
    run_pass()
    assert started.get(pk=job.pk).state == Job.State.STARTING
    page = owner_client.get(reverse("jobs:detail", args=[job.pk]), **ZH).content.decode()
    assert "正在启动：p4-03（卡 0）" in page
    assert "Starting on" not in page


def test_the_api_renders_reasons_in_accept_language_with_their_code(owner_client, waiting):
    english = owner_client.get(f"/api/v1/jobs/{waiting.pk}").json()
    assert english["state_reason"].startswith("Waiting for quota: needs 4 V100 cards")
    chinese = owner_client.get(f"/api/v1/jobs/{waiting.pk}", **ZH).json()
    assert chinese["state_reason"].startswith("等待配额：需要 4 张 V100 卡")
    assert chinese["state_reason_code"] == "wait.quota"
    assert chinese["state_reason_params"]["limit"] == "8"
    event = chinese["events"][-1]
    assert event["reason_code"] == "wait.quota" and event["reason"].startswith("等待配额")
    listed = owner_client.get("/api/v1/jobs", **ZH).json()["items"]
    small = next(item for item in listed if item["id"] == waiting.pk)
    assert small["state_reason"].startswith("等待配额") and small["state_reason_code"]


def failed_job(owner, tmp_path) -> Job:
    """A one-replica job whose only try exited 1 with a log the platform also wrote in."""
    job = cpu_job("python train.py", owner=owner, state=Job.State.STARTING, attempt=1)
    node = make_node()
    replica = Replica.objects.create(job=job, index=0, node=node)
    attempt = ReplicaAttempt.objects.create(replica=replica, number=1, node=node)
    attempt_running(attempt_id=attempt.pk, started_at=timezone.now(), pid=1)
    log = tmp_path / "replica-0.log"
    log.write_text(
        f"[trainyard] job {job.pk} replica 0 attempt 1 on node {node.name}\n"
        "[trainyard] bubblewrap sandbox, own network 10.88.0.2, uid 61000, memory limit 4096 MiB\n"
        "epoch 1 loss 0.3\n"
        "ValueError: the learning rate must be positive\n"
        "[trainyard] replica finished: exit code 1\n"
    )
    attempt_ended(
        attempt_id=attempt.pk,
        state=ReplicaAttempt.State.FAILED,
        ended_at=timezone.now(),
        exit_code=1,
        reason=exited_reason("exit code 1", log),
    )
    job.refresh_from_db()
    assert job.state == Job.State.FAILED
    return job


def test_a_failure_says_the_users_error_first_without_the_sandbox_banner(owner, tmp_path):
    job = failed_job(owner, tmp_path)
    reason = job.state_reason
    assert reason.startswith("Exited with exit code 1")
    assert reason.index("exit code 1") < reason.lower().index("replica 0")
    assert "ValueError: the learning rate must be positive" in reason
    assert "bubblewrap" not in reason and "[trainyard] job" not in reason
    assert "replica finished" not in reason


def test_a_failed_jobs_reason_is_chinese_on_its_page(owner_client, owner, tmp_path):
    job = failed_job(owner, tmp_path)
    page = owner_client.get(reverse("jobs:detail", args=[job.pk]), **ZH).content.decode()
    assert "退出码 1" in page
    assert "ValueError: the learning rate must be positive" in page
    for english in ("Replica 0 failed", "Exited with", "Last lines of the log", "exit code 1"):
        assert english not in page


def test_the_failure_email_is_in_the_language_chosen_for_email(
    owner, tmp_path, django_capture_on_commit_callbacks
):
    owner.email = "owner@example.com"
    owner.save(update_fields=["email"])
    NotificationSettings.objects.update_or_create(user=owner, defaults={"language": "zh-hans"})
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = failed_job(owner, tmp_path)
    from notifications.tasks import notify_job_event

    for event_id in queued_job_events(callbacks):
        notify_job_event(event_id)
    (email,) = [m for m in mail.outbox if f"#{job.pk}" in m.subject]
    assert "失败" in email.subject
    assert "退出码 1" in email.body
    assert "Replica 0 failed" not in email.body and "Exited with" not in email.body


def test_every_reason_code_renders_in_chinese_without_english_left():
    from core.reason_examples import EXAMPLES
    from core.reasons import MESSAGES, Reason

    assert set(EXAMPLES) == set(MESSAGES)
    with translation.override("zh-hans"):
        for code, params in EXAMPLES.items():
            text = Reason(code, params).text()
            assert english(text) == [], (code, text)


def test_a_row_written_before_codes_reads_as_it_was_stored(owner):
    from core.reasons import reason_text

    job = JobFactory(owner=owner, state_reason="Queued long ago")
    with translation.override("zh-hans"):
        assert job.reason_text == "Queued long ago"
        # A code whose parameters are missing or unknown shows the stored text, never a 500.
        assert reason_text("wait.quota", {}, "stored") == "stored"
        assert reason_text("no.such.code", {"x": 1}, "stored") == "stored"


def test_the_django_admin_shows_a_jobs_reason_and_events_in_the_readers_language(
    admin_client_, waiting
):
    page = admin_client_.get(f"/admin/jobs/job/{waiting.pk}/change/", **ZH)
    assert page.status_code == 200
    text = page.content.decode()
    assert text.count("等待配额：需要 4 张 V100 卡") >= 2  # the reason and its event
    assert "Waiting for quota" not in text


def test_parameters_are_stored_as_json_keeps_them():
    from decimal import Decimal

    from core.reasons import Reason

    oom = Reason("oom", {"limit": Decimal("0.25")})
    assert oom.json_params == {"limit": "0.25"}
    assert oom.english == "Out of memory: the replica went over its memory limit of 0.25 GiB."
