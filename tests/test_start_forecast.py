"""Expected starts come from a replay of the queue ahead: quota and cards, in queue order."""

from datetime import timedelta

import pytest
from django.db import connection
from django.template.defaultfilters import date as date_filter
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from billing import fair_share
from jobs.estimates.expected import expected_seconds
from jobs.models import Job, JobDataset
from jobs.scheduler import run_pass
from tests.estimates_support import seed_models_and_templates
from tests.factories import (
    DatasetFactory,
    GpuModelFactory,
    JobFactory,
    NodeFactory,
    QuotaFactory,
    UserFactory,
)
from tests.scheduling import end_job, fresh, run_job

pytestmark = pytest.mark.django_db

# Seconds of slack: the holders start a few moments apart while the test sets them up.
SLACK = timedelta(seconds=20)


@pytest.fixture
def p4():
    return GpuModelFactory(name="P4", card_memory_gib=8)


def hold_every_card(owner, model, minutes: list[int]) -> list[Job]:
    """One running one-card job per node, ending at these max run times."""
    NodeFactory.create_batch(len(minutes), gpu_model=model, gpu_count=1)
    holders = []
    for max_runtime in minutes:
        job = JobFactory(owner=owner, gpu_model=model, max_runtime_minutes=max_runtime)
        run_pass()
        holders.append(run_job(job))
    return holders


def test_three_one_card_jobs_get_distinct_ordered_starts_as_cards_free(p4, client):
    # The case: 4 P4 cards freeing at 2:06, 2:09, 2:09, 2:09 and an owner whose
    # quota is those 4 cards; #1, #2 and #3 all said "starts by 2:06".
    alice = UserFactory(username="alice")
    QuotaFactory(user=alice, gpu_model=p4, limit=4)
    holders = hold_every_card(alice, p4, [60, 63, 63, 63])
    waiting = [JobFactory(owner=alice, gpu_model=p4, max_runtime_minutes=30) for _ in range(3)]

    run_pass()

    client.force_login(alice)
    records = [client.get(f"/api/v1/jobs/{job.pk}").json() for job in waiting]
    assert [r["queue_position"] for r in records] == [1, 2, 3]
    starts = [fresh(job).estimated_start for job in waiting]
    first_free = fresh(holders[0]).started_at + timedelta(minutes=60)
    last_free = fresh(holders[-1]).started_at + timedelta(minutes=63)
    assert abs(starts[0] - first_free) < SLACK, starts
    assert abs(starts[1] - last_free) < SLACK, starts
    assert abs(starts[2] - last_free) < SLACK, starts
    assert starts[0] < starts[1] <= starts[2]
    assert [r["estimated_start"][:19] for r in records] == [
        start.isoformat()[:19] for start in starts
    ]


def test_a_job_waiting_for_cards_goes_first_when_it_is_ahead_in_the_queue(p4):
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    QuotaFactory(user=alice, gpu_model=p4, limit=2)
    NodeFactory.create_batch(4, gpu_model=p4, gpu_count=1)
    holders = []
    for owner, minutes in [(alice, 60), (alice, 63), (bob, 63), (bob, 63)]:
        holders.append(JobFactory(owner=owner, gpu_model=p4, max_runtime_minutes=minutes))
        run_pass()
        run_job(holders[-1])
    bobs = JobFactory(owner=bob, gpu_model=p4, max_runtime_minutes=30)
    alices = [JobFactory(owner=alice, gpu_model=p4, max_runtime_minutes=30) for _ in range(2)]

    run_pass()

    assert fresh(bobs).state == Job.State.RESOURCE_WAIT
    assert [fresh(job).state for job in alices] == [Job.State.QUOTA_WAIT] * 2
    first_free = fresh(holders[0]).started_at + timedelta(minutes=60)
    last_free = fresh(holders[-1]).started_at + timedelta(minutes=63)
    # Alice's quota frees at 60 minutes, but Bob's job is ahead and takes that card.
    assert abs(fresh(bobs).estimated_start - first_free) < SLACK
    for job in alices:
        assert abs(fresh(job).estimated_start - last_free) < SLACK


def template_job(templates, model, **fields) -> Job:
    """A ResNet50 job on 6,000 samples (the seed measured 400 s on a V100), as submitted."""
    job = JobFactory(template=templates["ResNet50"], gpu_model=model, **fields)
    JobDataset.objects.create(
        job=job, dataset=DatasetFactory(project=job.project, size_samples=6000), position=1
    )
    job.expected_seconds = expected_seconds(job)
    job.save(update_fields=["expected_seconds"])
    return job


def test_running_and_waiting_jobs_hold_cards_for_their_expected_run_time():
    models, templates = seed_models_and_templates()
    NodeFactory(gpu_model=models["V100"], gpu_count=1)
    holder = template_job(templates, models["V100"], max_runtime_minutes=60)
    assert holder.expected_seconds == 400
    run_pass()
    holder = run_job(holder, started_minutes_ago=2)
    first, second = (template_job(templates, models["V100"], max_runtime_minutes=60) for _ in "ab")

    run_pass()

    first_start = holder.started_at + timedelta(seconds=400)
    assert fresh(first).estimated_start == first_start.replace(microsecond=0)
    assert fresh(second).estimated_start == (first_start + timedelta(seconds=400)).replace(
        microsecond=0
    )


def test_a_job_without_an_estimate_holds_its_cards_for_its_max_run_time():
    models, templates = seed_models_and_templates()
    NodeFactory(gpu_model=models["V100"], gpu_count=1)
    holder = JobFactory(gpu_model=models["V100"], max_runtime_minutes=30, command="python x.py")
    assert expected_seconds(holder) is None  # no history anywhere yet
    run_pass()
    holder = run_job(holder, started_minutes_ago=1)
    waiter = template_job(templates, models["V100"], max_runtime_minutes=60)
    run_pass()
    assert fresh(waiter).estimated_start == (holder.started_at + timedelta(minutes=30)).replace(
        microsecond=0
    )


def test_a_job_past_its_expected_run_time_is_expected_halfway_to_its_limit():
    models, templates = seed_models_and_templates()
    NodeFactory(gpu_model=models["V100"], gpu_count=1)
    holder = template_job(templates, models["V100"], max_runtime_minutes=60)
    run_pass()
    holder = run_job(holder, started_minutes_ago=20)  # 400 s expected
    waiter = template_job(templates, models["V100"], max_runtime_minutes=60)
    run_pass()
    start = fresh(waiter).estimated_start
    halfway = timezone.now() + timedelta(minutes=20)
    assert abs(start - halfway) < SLACK


def test_without_an_estimate_a_job_is_expected_to_use_the_share_its_owner_used():
    v100 = GpuModelFactory(name="V100")
    owner = UserFactory()
    now = timezone.now()
    for used in (20, 30, 30, 30, 40):  # minutes of a 60-minute max run time: half on average
        JobFactory(
            owner=owner,
            gpu_model=v100,
            state=Job.State.SUCCEEDED,
            max_runtime_minutes=60,
            started_at=now - timedelta(minutes=used),
            finished_at=now,
        )
    job = JobFactory(owner=owner, gpu_model=v100, max_runtime_minutes=100)
    assert expected_seconds(job) == 50 * 60
    other = JobFactory(gpu_model=v100, max_runtime_minutes=100)
    assert expected_seconds(other) == 50 * 60  # too few of their own: everyone's share


def test_the_pass_costs_the_same_queries_however_many_wait(p4, monkeypatch):
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    QuotaFactory(user=alice, gpu_model=p4, limit=2)
    hold_every_card(bob, p4, [60, 63, 63, 63])
    # The decayed usage the first pass keeps does not expire before the counted one: under
    # load, 10 s could pass between the two, and the counted pass then read the ledger.
    monkeypatch.setattr(fair_share, "USAGE_REFRESH_SECONDS", 3600)

    def queries_with(count: int) -> int:
        for number in range(count):
            owner = alice if number % 2 else bob
            JobFactory(owner=owner, gpu_model=p4, max_runtime_minutes=10 + number)
        fair_share.forget_recent_usage()
        run_pass()
        with CaptureQueriesContext(connection) as queries:
            run_pass()
        return len(queries)

    few, many = queries_with(3), queries_with(30)
    # 2 of them the fair share's (billing/fair_share.py: the site's settings and the
    # shares; the ledger's decayed usage, summed by the first pass, is kept for a refresh);
    # 1 the borrowing jobs a job within its quota that waits for cards may preempt
    # (jobs/scheduler/preemption.py); 1 the GPU models only Slurm nodes serve
    # (jobs/scheduler/lookahead.py); 1 the recent jobs' requests, placement's workload
    # (jobs/scheduler/workload.py); 1 the waiting jobs that borrowing jobs were preempted
    # for (jobs/scheduler/queue.py: waiting_rows)
    assert (few, many) == (19, 19)
    assert all(job.estimated_start for job in Job.objects.filter(state__in=Job.WAITING_STATES))


def test_the_job_page_and_the_list_show_one_expected_start(p4, client):
    alice = UserFactory(username="alice")
    hold_every_card(alice, p4, [60])
    waiter = JobFactory(owner=alice, gpu_model=p4, max_runtime_minutes=30)
    run_pass()
    when = fresh(waiter).estimated_start
    client.force_login(alice)
    shown = date_filter(timezone.localtime(when), "SHORT_DATETIME_FORMAT")

    page = client.get(reverse("jobs:detail", args=[waiter.pk])).content.decode()
    listing = client.get(reverse("jobs:list")).content.decode()

    assert "Expected start" in page and shown in page
    assert "Likely start" not in page and "at the latest" not in page
    assert "expected start" in listing and shown in listing
    assert "starts by" not in listing


def test_a_started_job_leaves_the_forecast(p4):
    alice = UserFactory(username="alice")
    (holder,) = hold_every_card(alice, p4, [60])
    waiter = JobFactory(owner=alice, gpu_model=p4, max_runtime_minutes=30)
    run_pass()
    end_job(holder)
    run_pass()
    assert fresh(waiter).state == Job.State.STARTING
    assert fresh(waiter).estimated_start is None


def test_a_queue_longer_than_a_replay_step_gets_ordered_starts_to_its_end(p4):
    alice = UserFactory(username="alice")
    (holder,) = hold_every_card(alice, p4, [60])
    waiting = [JobFactory(owner=alice, gpu_model=p4, max_runtime_minutes=10) for _ in range(70)]

    run_pass()

    starts = [fresh(job).estimated_start for job in waiting]
    assert None not in starts
    assert starts == sorted(starts)
    first_free = fresh(holder).started_at + timedelta(minutes=60)
    assert abs(starts[0] - first_free) < SLACK
    # Each holds the card its 10 minutes; far ahead a replay step spans more than that.
    assert abs(starts[-1] - (first_free + timedelta(minutes=690))) < timedelta(minutes=60)


def test_a_job_started_by_the_pass_is_given_back_once_in_the_replay(p4):
    # The pass reads what is held once it needs it; read after it wrote its own starts,
    # a job it started counted twice in the replay (a card 200 % free, or none).
    alice = UserFactory(username="alice")
    QuotaFactory(user=alice, gpu_model=p4, limit=1)
    NodeFactory(gpu_model=p4, gpu_count=1)
    first = JobFactory(owner=alice, gpu_model=p4, max_runtime_minutes=60)
    second = JobFactory(owner=alice, gpu_model=p4, max_runtime_minutes=30)

    run_pass()  # the first starts; the second waits on the quota it holds

    first, second = fresh(first), fresh(second)
    assert first.state == Job.State.STARTING
    assert second.state == Job.State.QUOTA_WAIT
    assert second.estimated_start is not None
    assert abs(second.estimated_start - (timezone.now() + timedelta(minutes=60))) < SLACK
