"""Fair share (billing/fair_share.py) and the queue order it gives (jobs/scheduler/queue.py).

Usage is the ledger's unit-hours, weighted per model (set, else its list price), halved per
half-life of age; the factor is Slurm's 2^(-usage share / entitled share).
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from billing import fair_share
from billing.accounts import account_for_user
from billing.fair_share import decayed_usage, fair_share_factors
from billing.models import UsageRecord
from jobs.models import Job, Replica, ReplicaAttempt
from jobs.scheduler import run_pass
from resources.models import Node, SiteSettings, UsageWeight, UserShare
from tests.billing_cast import set_price
from tests.factories import GpuModelFactory, JobFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db
WEEK = timedelta(days=7)


def used(user, gpu_model, *, hours: float, ago: timedelta) -> None:
    """``hours`` card-hours of ``gpu_model`` that ``user`` used, ending ``ago``."""
    job = JobFactory(owner=user, gpu_model=gpu_model, state=Job.State.SUCCEEDED)
    node = NodeFactory(gpu_model=gpu_model, state=Node.State.DOWN)  # where it ran, gone since
    replica = Replica.objects.create(job=job, index=0, node=node)
    end = timezone.now() - ago
    attempt = ReplicaAttempt.objects.create(
        replica=replica, number=1, node=node, state="succeeded", started_at=end, ended_at=end
    )
    seconds = Decimal(hours * 3600)
    UsageRecord.objects.create(
        account=account_for_user(user=user),
        job=job,
        attempt=attempt,
        gpu_model=gpu_model,
        unit="card_hour",
        period_start=end - timedelta(hours=hours),
        period_end=end,
        quantity=1,
        unit_seconds=seconds,
        billable_unit_seconds=seconds,
        unit_price=Decimal("1"),
        amount=Decimal("1"),
    )


def test_use_counts_half_after_each_half_life():
    p4, user = GpuModelFactory(name="P4"), UserFactory()
    used(user, p4, hours=8, ago=timedelta(days=14))
    usage = decayed_usage(now=timezone.now(), half_life=WEEK)
    # A day's rows decay from the day's middle: within half a day of two half-lives.
    assert 8 * 0.25 * 0.95 < usage[user.pk] < 8 * 0.25 * 1.05


def test_a_v100_hour_weighs_its_list_price_or_the_admins_weight():
    p4, v100 = GpuModelFactory(name="P4"), GpuModelFactory(name="V100")
    set_price(p4, "1.5")
    set_price(v100, "12")
    light, heavy = UserFactory(), UserFactory()
    used(light, p4, hours=4, ago=timedelta(0))
    used(heavy, v100, hours=4, ago=timedelta(0))
    usage = decayed_usage(now=timezone.now(), half_life=WEEK)
    assert usage[heavy.pk] / usage[light.pk] == pytest.approx(12 / 1.5)
    UsageWeight.objects.create(gpu_model=v100, weight=Decimal("3"))
    usage = decayed_usage(now=timezone.now(), half_life=WEEK)
    assert usage[heavy.pk] / usage[light.pk] == pytest.approx(3 / 1.5)


def test_the_factor_is_one_without_use_and_halves_at_the_users_share():
    p4 = GpuModelFactory(name="P4")
    a, b, idle = UserFactory(), UserFactory(), UserFactory()
    used(a, p4, hours=3, ago=timedelta(0))
    used(b, p4, hours=1, ago=timedelta(0))
    factors = fair_share_factors(user_ids={a.pk, b.pk, idle.pk}, now=timezone.now())
    assert factors[idle.pk] == 1.0
    # Three users of one share each: a used 3/4 of everything against 1/3 entitled.
    assert factors[a.pk] == pytest.approx(2 ** -((3 / 4) / (1 / 3)))
    assert factors[b.pk] == pytest.approx(2 ** -((1 / 4) / (1 / 3)))
    UserShare.objects.create(user=a, shares=7)  # a's share: 7 of 9
    factors = fair_share_factors(user_ids={a.pk, b.pk, idle.pk}, now=timezone.now())
    assert factors[a.pk] == pytest.approx(2 ** -((3 / 4) / (7 / 9)))
    assert factors[a.pk] > factors[b.pk]


def test_the_decayed_usage_is_read_from_the_ledger_once_per_refresh(
    django_assert_num_queries,
):
    """Passes, Slurm submissions and API records all ask for factors: the ledger's sum is
    kept for ``USAGE_REFRESH_SECONDS`` (as Slurm's ``PriorityCalcPeriod``), the shares not."""
    p4, heavy, light = GpuModelFactory(name="P4"), UserFactory(), UserFactory()
    used(heavy, p4, hours=3, ago=timedelta(0))
    now = timezone.now()
    first = fair_share_factors(user_ids={heavy.pk, light.pk}, now=now)
    used(light, p4, hours=3, ago=timedelta(0))  # within the refresh: not counted yet
    with django_assert_num_queries(2):  # the site's settings and the shares
        again = fair_share_factors(user_ids={heavy.pk, light.pk}, now=now + timedelta(seconds=5))
    assert again == first and again[light.pk] == 1.0
    UserShare.objects.create(user=light, shares=3)  # an admin's change counts at once
    shared = fair_share_factors(user_ids={heavy.pk, light.pk}, now=now + timedelta(seconds=5))
    assert shared[heavy.pk] < first[heavy.pk]  # light's 3 shares of 4 shrink heavy's
    later = now + timedelta(seconds=fair_share.USAGE_REFRESH_SECONDS)
    refreshed = fair_share_factors(user_ids={heavy.pk, light.pk}, now=later)
    assert refreshed[light.pk] < 1.0  # the refresh reads the ledger again


def test_the_half_life_is_the_sites_setting():
    p4, user, other = GpuModelFactory(name="P4"), UserFactory(), UserFactory()
    used(user, p4, hours=8, ago=timedelta(days=3))
    used(other, p4, hours=8, ago=timedelta(0))
    week = fair_share_factors(user_ids={user.pk, other.pk}, now=timezone.now())
    SiteSettings.objects.update_or_create(pk=1, defaults={"fair_share_half_life_days": 1})
    day = fair_share_factors(user_ids={user.pk, other.pk}, now=timezone.now())
    assert day[user.pk] > week[user.pk]  # three days old counts less with a shorter half-life


def test_within_a_priority_a_light_users_job_goes_before_a_heavy_users_earlier_ones():
    p4 = GpuModelFactory(name="P4")
    NodeFactory(gpu_model=p4, gpu_count=1)  # one card: one job runs, the rest queue
    heavy, light = UserFactory(username="heavy"), UserFactory(username="light")
    used(heavy, p4, hours=50, ago=timedelta(hours=1))
    running = JobFactory(owner=heavy, gpu_model=p4, cpu_milli=1000, memory_mib=1024)
    run_pass()
    assert Job.objects.get(pk=running.pk).state == Job.State.STARTING
    queued = [
        JobFactory(owner=heavy, gpu_model=p4, cpu_milli=1000, memory_mib=1024) for _ in range(3)
    ]
    later = JobFactory(owner=light, gpu_model=p4, cpu_milli=1000, memory_mib=1024)
    urgent = JobFactory(
        owner=heavy, gpu_model=p4, cpu_milli=1000, memory_mib=1024, priority=Job.Priority.HIGH
    )
    run_pass()
    position = dict(
        Job.objects.filter(state=Job.State.RESOURCE_WAIT).values_list("pk", "queue_position")
    )
    assert position[urgent.pk] == 1  # priority first, whatever the factor
    assert position[later.pk] == 2  # then the light user, submitted last
    assert [position[job.pk] for job in queued] == [3, 4, 5]  # then in submission order


def test_the_job_page_the_list_and_the_api_say_the_waiting_jobs_factor(client):
    p4 = GpuModelFactory(name="P4")
    owner, other = UserFactory(), UserFactory()
    used(owner, p4, hours=3, ago=timedelta(0))
    used(other, p4, hours=1, ago=timedelta(0))
    job = JobFactory(
        owner=owner,
        gpu_model=p4,
        state=Job.State.RESOURCE_WAIT,
        state_reason="Waiting for resources",
        queue_position=3,
    )
    expected = fair_share_factors(user_ids={owner.pk}, now=timezone.now())[owner.pk]
    client.force_login(owner)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f"Your factor is {expected:.2f}: within a priority, users with less recent use" in page
    # The page's live part, polled while the job waits, re-renders the same card.
    panel = client.get(f"/jobs/{job.pk}/runtime/").content.decode()
    assert f"Your factor is {expected:.2f}" in panel
    listing = client.get("/jobs/").content.decode()
    assert f"fair share {expected:.2f}" in listing
    detail = client.get(f"/api/v1/jobs/{job.pk}").json()
    assert detail["fair_share_factor"] == round(expected, 3)
    Job.objects.filter(pk=job.pk).update(state=Job.State.SUCCEEDED)
    assert client.get(f"/api/v1/jobs/{job.pk}").json()["fair_share_factor"] is None
    assert "Your factor is" not in client.get(f"/jobs/{job.pk}/").content.decode()


def test_the_list_api_gives_each_waiting_jobs_factor_in_queries_that_do_not_grow(client):
    """``GET /api/v1/jobs`` says the factor as the job's own record does, at any page size."""
    p4 = GpuModelFactory(name="P4")
    owner, other = UserFactory(), UserFactory()
    used(owner, p4, hours=3, ago=timedelta(0))
    used(other, p4, hours=1, ago=timedelta(0))
    expected = round(fair_share_factors(user_ids={owner.pk}, now=timezone.now())[owner.pk], 3)
    client.force_login(owner)

    def listed(count: int) -> tuple[list[dict], int]:
        for _ in range(count):
            JobFactory(owner=owner, gpu_model=p4, state=Job.State.QUOTA_WAIT)
        with CaptureQueriesContext(connection) as queries:
            items = client.get("/api/v1/jobs?state=quota_wait").json()["items"]
        return items, len(queries)

    few, few_queries = listed(2)
    many, many_queries = listed(20)
    assert {item["fair_share_factor"] for item in many} == {expected}
    assert len(many) == 22 and few_queries == many_queries
    finished = client.get("/api/v1/jobs?state=succeeded").json()["items"]
    assert finished and all(item["fair_share_factor"] is None for item in finished)
