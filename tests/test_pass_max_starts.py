"""A pass starts at most ``TRAINYARD_PASS_MAX_STARTS`` jobs (Slurm's sched_max_job_start):
the jobs after them are left as they were for the next pass, which the task queues at
once, so that no pass holds its lock for long (jobs/scheduler/run.py)."""

import pytest
from django.core.cache import cache

from jobs.lifecycle.pass_requests import PASS_QUEUED_KEY
from jobs.models import Job
from jobs.scheduler import run_pass
from jobs.tasks import schedule_pass
from tests.factories import GpuModelFactory, JobFactory, NodeFactory, UserFactory
from tests.scheduling import assert_invariants, fresh

pytestmark = pytest.mark.django_db


@pytest.fixture
def five_waiting(settings):
    settings.TRAINYARD_PASS_MAX_STARTS = 2
    p4 = GpuModelFactory(name="P4")
    NodeFactory(gpu_model=p4, gpu_count=8)
    owner = UserFactory(username="alice")
    return [JobFactory(owner=owner, gpu_model=p4) for _ in range(5)]


def test_each_pass_starts_the_next_two_in_queue_order_and_leaves_the_rest_as_they_were(
    five_waiting,
):
    jobs = five_waiting
    before = [(fresh(job).state, fresh(job).state_reason) for job in jobs]

    first = run_pass()

    assert first.truncated and first.started == [jobs[0].pk, jobs[1].pk]
    assert [(fresh(job).state, fresh(job).state_reason) for job in jobs[2:]] == before[2:]
    assert [fresh(job).estimated_start for job in jobs[2:]] == [None] * 3
    second, third = run_pass(), run_pass()
    assert second.truncated and second.started == [jobs[2].pk, jobs[3].pk]
    assert not third.truncated and third.started == [jobs[4].pk]
    assert Job.objects.filter(state=Job.State.STARTING).count() == 5
    assert_invariants()


def test_the_task_queues_the_next_pass_when_its_pass_stopped_at_the_most(five_waiting):
    cache.delete(PASS_QUEUED_KEY)

    schedule_pass()

    assert cache.get(PASS_QUEUED_KEY)  # the rest of the burst, at once
    cache.delete(PASS_QUEUED_KEY)
    assert Job.objects.filter(state=Job.State.STARTING).count() == 2
