"""Expected starts come from a replay of the queue ahead: quota and cards, in queue order."""

from datetime import timedelta

import pytest

from jobs.models import Job
from jobs.scheduler import run_pass
from tests.factories import GpuModelFactory, JobFactory, NodeFactory, QuotaFactory, UserFactory
from tests.scheduling import fresh, run_job

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
