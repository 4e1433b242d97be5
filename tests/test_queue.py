"""The queue as the scheduler takes it (jobs/services/queue.py): the page, GET /api/v1/queue,
a user's reorders of their own jobs, staff's priorities; the pass follows the same order."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import translation

from jobs.models import Job
from jobs.scheduler import run_pass
from tests.factories import GpuModelFactory, JobFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def v100():
    return GpuModelFactory(name="V100")


@pytest.fixture
def full(v100, project):
    """A node whose one card runs a job: everything else waits."""
    NodeFactory(gpu_model=v100, gpu_count=1)
    JobFactory(owner=UserFactory(), gpu_model=v100)
    run_pass()


def queued(client) -> list[tuple[str | None, list[int]]]:
    answer = client.get("/api/v1/queue").json()
    return [(q["model"], [job["id"] for job in q["jobs"]]) for q in answer["queues"]]


def test_the_queue_lists_what_the_reader_may_see_in_the_schedulers_order(
    full, v100, owner, project, owner_client
):
    mine = [JobFactory(owner=owner, project=project, gpu_model=v100) for _ in range(2)]
    theirs = JobFactory(owner=UserFactory(), gpu_model=v100)  # not the owner's to see
    urgent = JobFactory(owner=owner, project=project, gpu_model=v100, priority=Job.Priority.HIGH)
    cpu = JobFactory(  # larger than the node's free cores: it waits too
        owner=owner,
        project=project,
        resource_kind="cpu",
        gpu_model=None,
        gpu_count=0,
        cpu_milli=90_000,
    )
    run_pass()

    answer = owner_client.get("/api/v1/queue").json()

    v100_queue, cpu_queue = answer["queues"]
    assert (v100_queue["model"], v100_queue["waiting"]) == ("V100", 4)
    assert [job["id"] for job in v100_queue["jobs"]] == [urgent.pk, mine[0].pk, mine[1].pk]
    assert [job["position"] for job in v100_queue["jobs"]] == [1, 2, 3]  # theirs is 4th
    assert theirs.pk not in [job["id"] for job in v100_queue["jobs"]]
    first = v100_queue["jobs"][1]
    assert first["state_reason"] == Job.objects.get(pk=mine[0].pk).state_reason
    assert first["fair_share_factor"] == 1.0
    assert (first["can_move_up"], first["can_move_down"]) == (False, True)
    assert (cpu_queue["model"], [job["id"] for job in cpu_queue["jobs"]]) == (None, [cpu.pk])


def test_the_owner_moves_a_job_among_their_own_and_the_pass_takes_that_order(
    full, v100, owner, project, owner_client
):
    first, second, third = (
        JobFactory(owner=owner, project=project, gpu_model=v100) for _ in range(3)
    )
    other = JobFactory(owner=UserFactory(), gpu_model=v100)

    response = owner_client.post(
        f"/api/v1/jobs/{third.pk}/move", {"direction": "up"}, content_type="application/json"
    )

    assert response.status_code == 200, response.content
    assert queued(owner_client) == [("V100", [first.pk, third.pk, second.pk])]
    refused = owner_client.post(
        f"/api/v1/jobs/{first.pk}/move", {"direction": "up"}, content_type="application/json"
    )
    assert refused.status_code == 422
    assert "already first" in refused.json()["errors"]["direction"][0]
    bad = owner_client.post(
        f"/api/v1/jobs/{first.pk}/move", {"direction": "left"}, content_type="application/json"
    )
    assert bad.status_code == 422 and "direction" in bad.json()["errors"]
    run_pass()
    positions = dict(
        Job.objects.filter(pk__in=[first.pk, second.pk, third.pk]).values_list(
            "pk", "queue_position"
        )
    )
    assert positions == {first.pk: 1, third.pk: 2, second.pk: 3}
    assert Job.objects.get(pk=other.pk).queue_position == 4
    event = Job.objects.get(pk=third.pk).events.get(reason_code="queue.moved")
    assert event.reason == f"Moved by owner past job #{second.pk} in the queue"


def test_only_the_owner_moves_and_only_staff_set_priority(
    full, v100, owner, member, project, client, admin_user
):
    job = JobFactory(owner=owner, project=project, gpu_model=v100)
    JobFactory(owner=owner, project=project, gpu_model=v100)
    client.force_login(member)  # a project member may see it, not move it
    body = {"direction": "down"}
    moved = client.post(f"/api/v1/jobs/{job.pk}/move", body, content_type="application/json")
    assert moved.status_code == 403
    high = {"priority": "high"}
    set_high = f"/api/v1/jobs/{job.pk}/priority"
    assert client.post(set_high, high, content_type="application/json").status_code == 403

    client.force_login(admin_user)
    response = client.post(set_high, high, content_type="application/json")

    assert response.status_code == 200, response.content
    assert Job.objects.get(pk=job.pk).priority == Job.Priority.HIGH
    bad = client.post(set_high, {"priority": "urgent"}, content_type="application/json")
    assert bad.status_code == 422 and "priority" in bad.json()["errors"]
    event = Job.objects.get(pk=job.pk).events.get(reason_code="queue.priority")
    assert event.reason == "Priority set to High by boss"
    with translation.override("zh-hans"):
        assert event.text == "优先级由 boss 设为 高"


def test_the_queue_page_in_english_and_chinese_with_its_forms(
    full, v100, owner, project, owner_client
):
    first = JobFactory(owner=owner, project=project, gpu_model=v100, name="first-run")
    JobFactory(owner=owner, project=project, gpu_model=v100, name="second-run")
    run_pass()

    page = owner_client.get("/jobs/queue/")

    html = page.content.decode()
    assert page.status_code == 200
    assert "first-run" in html and f'id="queued-{first.pk}"' in html
    assert f'action="/jobs/{first.pk}/move/"' in html
    moved = owner_client.post(f"/jobs/{first.pk}/move/", {"direction": "down"})
    assert moved.status_code == 302 and moved["Location"].endswith(f"#queued-{first.pk}")
    refused = owner_client.post(f"/jobs/{first.pk}/move/", {"direction": "down"}, follow=True)
    assert "already last among your jobs" in refused.content.decode()
    chinese = owner_client.get("/jobs/queue/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "队列" in chinese


def test_the_queue_reads_a_fixed_number_of_queries(full, v100, owner, project, owner_client):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert owner_client.get("/api/v1/queue").status_code == 200
        return len(queries)

    JobFactory(owner=owner, project=project, gpu_model=v100)
    few = count()
    for _ in range(20):
        JobFactory(owner=owner, project=project, gpu_model=v100)
        JobFactory(owner=UserFactory(), gpu_model=v100)
    assert count() == few
