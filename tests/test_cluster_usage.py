"""The staff's utilisation page (jobs/cluster_usage.py): cards held against in use, now and
hour by hour over a day, from the samples the agent writes (an NVML-shaped fake's figures:
tests/test_usage_metrics.py exercises that path), and a job's average GPU use."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from accounting.services import usage_accrue
from jobs.cluster_usage import average_card_use, cluster_day, cluster_now
from jobs.idle_cards import idle_cards_check
from jobs.models import Job, ReplicaAttempt
from tests.agent_support import make_node
from tests.billing_cast import T0, set_price, v100_model
from tests.factories import JobFactory
from tests.usage_cast import held, sampled

pytestmark = pytest.mark.django_db
# Half past an hour: the current hour is half gone.
NOW = datetime(2026, 12, 5, 10, 30, tzinfo=UTC)


@pytest.fixture
def v100():
    return v100_model()


def gpu_job(owner, model, name: str, cards: int = 1, **fields) -> Job:
    return JobFactory(
        owner=owner, name=name, state=Job.State.RUNNING, gpu_model=model, gpu_count=cards, **fields
    )


def test_now_counts_held_in_use_idle_unsampled_and_outside_cards_per_node_and_model(owner, v100):
    a = make_node(name="gpu-a", gpu_model=v100, gpu_count=4)
    b = make_node(name="gpu-b", gpu_model=v100, gpu_count=4, gpu_held_outside=1)
    two = held(gpu_job(owner, v100, "two", 2), a, [0, 1], since=NOW - timedelta(hours=1))
    sampled(two, {0: 90, 1: 0}, since=NOW - timedelta(seconds=25), until=NOW)
    held(gpu_job(owner, v100, "unseen"), b, [3], since=NOW - timedelta(minutes=5))
    stale = held(gpu_job(owner, v100, "stale"), b, [2], since=NOW - timedelta(hours=1))
    sampled(stale, {2: 99}, since=NOW - timedelta(minutes=5), until=NOW - timedelta(minutes=2))

    cards = cluster_now(NOW)

    nodes = {row["node"].name: row["cards"] for row in cards["nodes"]}
    assert (nodes["gpu-a"].total, nodes["gpu-a"].held, nodes["gpu-a"].in_use) == (4, 2, 0.9)
    assert (nodes["gpu-a"].idle, nodes["gpu-a"].free, nodes["gpu-a"].average_util) == (1, 2, 45.0)
    # A card last seen minutes ago is not seen now; nor one no agent looks at.
    assert (nodes["gpu-b"].held, nodes["gpu-b"].unsampled, nodes["gpu-b"].in_use) == (2, 2, 0)
    assert (nodes["gpu-b"].idle, nodes["gpu-b"].held_outside, nodes["gpu-b"].free) == (0, 1, 1)
    [model] = cards["models"]
    assert model["name"] == "V100"
    assert (model["cards"].total, model["cards"].held, model["cards"].in_use) == (8, 4, 0.9)
    assert cards["cluster"].average_util == 45.0


def test_the_day_averages_cards_held_and_in_use_per_hour_and_counts_a_shared_card_once(owner, v100):
    v100.supports_vgpu = True
    v100.save()
    node = make_node(name="gpu-a", gpu_model=v100, gpu_count=4)
    start = NOW - timedelta(hours=2, minutes=30)  # 08:00
    whole = held(gpu_job(owner, v100, "whole", 2), node, [0, 1], since=start)
    sampled(whole, {0: 80, 1: 0}, since=start, until=NOW, every=60)
    # Two vGPU halves of card 3 for 09:00–09:30: one card held for half an hour.
    for name in ("half-1", "half-2"):
        job = gpu_job(
            owner, v100, name, resource_kind="vgpu", vgpu_compute_percent=50, vgpu_memory_mib=1024
        )
        held(job, node, [3], since=start + timedelta(hours=1), until=start + timedelta(hours=1.5))
    # A Slurm placement (no card indices, no samples): 1 card from 10:00.
    slurm = gpu_job(owner, v100, "slurm")
    held(slurm, node, [], since=NOW - timedelta(minutes=30))

    hours = cluster_day(NOW)

    assert len(hours) == 24 and hours[-1].start == datetime(2026, 12, 5, 10, tzinfo=UTC)
    by_hour = {hour.start.astimezone(UTC).hour: hour for hour in hours}
    assert (by_hour[7].held, by_hour[7].in_use, by_hour[7].average_util) == (0, 0, None)
    # Cards at 80 % and 0 %: 2 held, 0.8 in use.
    assert (by_hour[8].held, by_hour[8].in_use, by_hour[8].average_util) == (2, 0.8, 40.0)
    assert (by_hour[9].held, by_hour[9].in_use, by_hour[9].unsampled) == (2.5, 0.8, 0.5)
    # The current hour is half gone: its averages are over the half.
    assert (by_hour[10].held, by_hour[10].in_use, by_hour[10].unsampled) == (3, 0.8, 1)
    assert by_hour[10].average_util == 40.0


def test_a_jobs_average_use_weighs_each_hour_by_the_card_time_it_held(owner, v100):
    node = make_node(name="gpu-a", gpu_model=v100, gpu_count=4)
    now = datetime(2026, 12, 5, 10, tzinfo=UTC)
    attempt = held(gpu_job(owner, v100, "thinned"), node, [0], since=now - timedelta(hours=2))
    # An hour thinned to a look a minute at 0 %, then an hour of full detail at 90 %.
    hour = timedelta(hours=1)
    sampled(
        attempt, {0: 0}, since=now - 2 * hour, until=now - hour - timedelta(minutes=1), every=60
    )
    sampled(attempt, {0: 90}, since=now - hour + timedelta(seconds=10), until=now)
    other = gpu_job(owner, v100, "unsampled")

    use = average_card_use([attempt.replica.job_id, other.pk], now)

    assert use == {attempt.replica.job_id: 45.0}  # not 77: the count of looks would say so


@pytest.fixture
def staff(admin_user):
    client = Client()
    client.force_login(admin_user)
    return client


def test_the_staff_page_shows_the_cards_the_day_and_the_idle_jobs_in_english_and_chinese(
    owner, v100, staff, django_assert_max_num_queries
):
    node = make_node(name="gpu-a", gpu_model=v100, gpu_count=4)
    make_node(name="gpu-b", gpu_model=v100, gpu_count=4)
    now = datetime.now(UTC).replace(microsecond=0)
    attempt = held(gpu_job(owner, v100, "sleepy"), node, [0], since=now - timedelta(hours=2))
    sampled(attempt, {0: 0}, since=now - timedelta(minutes=45), until=now)
    idle_cards_check(now)

    with django_assert_max_num_queries(10):  # 6, and the navigation's 4: none a node or job
        page = staff.get("/resources/utilisation/").content.decode()

    assert '<dd data-testid="cluster-cards">0 / 1 / 8</dd>' in page
    assert "cards held, 0 in use" in page and 'class="bar-in-use"' in page
    assert f'href="/jobs/{attempt.replica.job_id}/">#{attempt.replica.job_id} sleepy</a>' in page
    assert "<td>0.0 %</td>" in page
    staff.cookies["__Host-trainyard-language"] = "zh-hans"
    page = staff.get("/resources/utilisation/").content.decode()
    assert "利用率" in page and "空闲" in page and "过去 24 小时" in page and "可用" in page


def test_a_statement_shows_each_card_lines_average_gpu_use(owner_client, owner, v100):
    node = make_node(name="gpu-a", gpu_model=v100, gpu_count=4)
    now = T0 + timedelta(hours=1)  # a finished job, in March
    attempt = held(gpu_job(owner, v100, "busy"), node, [0], since=now - timedelta(hours=1))
    sampled(attempt, {0: 70}, since=now - timedelta(minutes=10), until=now)
    set_price(v100, "10.00")
    attempt.state, attempt.ended_at = ReplicaAttempt.State.SUCCEEDED, now
    attempt.save()
    usage_accrue(now=now + timedelta(minutes=5))

    page = owner_client.get("/billing/", {"month": "2026-03"}).content.decode()

    assert '<td class="gpu-use">70.0 %</td>' in page


def test_a_gpu_jobs_usage_card_says_when_its_node_reports_no_card_use(owner_client, owner, v100):
    """What a person sees on a node without NVIDIA's driver (make run's demo nodes)."""
    node = make_node(name="gpu-a", gpu_model=v100, gpu_count=4)
    now = datetime.now(UTC).replace(microsecond=0)
    attempt = held(gpu_job(owner, v100, "no-nvml"), node, [0], since=now - timedelta(minutes=5))
    sampled(attempt, {}, since=now - timedelta(seconds=30), until=now)

    page = owner_client.get(f"/jobs/{attempt.replica.job_id}/usage/").content.decode()

    assert "Its node reports no card use: no NVIDIA driver answered there" in page
