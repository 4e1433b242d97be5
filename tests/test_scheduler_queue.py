"""Queue order, per-model queues, EASY backfill, positions, estimates and reasons."""

from datetime import timedelta

import pytest

from jobs.models import Job
from jobs.scheduler import run_pass
from jobs.services.stop import job_stop
from tests.factories import GpuModelFactory, JobFactory, NodeFactory
from tests.scheduling import assert_invariants, end_job, fresh, run_job, states

pytestmark = pytest.mark.django_db


@pytest.fixture
def v100():
    return GpuModelFactory(name="V100")


def running(model, cards: int, *, max_runtime_minutes: int | None, minutes_ago: int = 0) -> Job:
    """A job that is running now, holding ``cards`` cards."""
    job = JobFactory(gpu_model=model, gpu_count=cards, max_runtime_minutes=max_runtime_minutes)
    run_pass()
    assert fresh(job).state == Job.State.STARTING
    return run_job(job, started_minutes_ago=minutes_ago)


def test_priority_goes_first_then_submission_time(v100):
    NodeFactory(gpu_model=v100)
    early = JobFactory(gpu_model=v100, gpu_count=8)
    late = JobFactory(gpu_model=v100, gpu_count=8)
    urgent = JobFactory(gpu_model=v100, gpu_count=8, priority=Job.Priority.HIGH)

    run_pass()

    assert states([urgent, early, late]) == [
        Job.State.STARTING,
        Job.State.RESOURCE_WAIT,
        Job.State.RESOURCE_WAIT,
    ]
    assert [fresh(early).queue_position, fresh(late).queue_position] == [1, 2]


def test_a_blocked_v100_job_never_blocks_a_p4_job(v100):
    p4 = GpuModelFactory(name="P4", card_memory_gib=8)
    NodeFactory(gpu_model=v100)
    NodeFactory(gpu_model=p4, gpu_count=2)
    blocked = JobFactory(gpu_model=v100, gpu_count=16)
    small = JobFactory(gpu_model=p4, gpu_count=1)

    run_pass()

    assert states([blocked, small]) == [Job.State.RESOURCE_WAIT, Job.State.STARTING]
    assert fresh(blocked).queue_position == 1


def test_a_short_job_backfills_but_a_long_one_waits_for_the_head(v100):
    NodeFactory(name="gpu01", gpu_model=v100)
    holder = running(v100, 6, max_runtime_minutes=60)
    head = JobFactory(gpu_model=v100, gpu_count=8, max_runtime_minutes=60)
    short = JobFactory(gpu_model=v100, gpu_count=1, max_runtime_minutes=30)
    long = JobFactory(gpu_model=v100, gpu_count=1, max_runtime_minutes=120)
    unknown = JobFactory(gpu_model=v100, gpu_count=1)

    run_pass()

    assert states([head, short, long, unknown]) == [
        Job.State.RESOURCE_WAIT,
        Job.State.STARTING,
        Job.State.RESOURCE_WAIT,
        Job.State.RESOURCE_WAIT,
    ]
    held = (
        f"Waiting for resources: what it needs is held for job #{head.pk}, "
        "which is ahead in the queue"
    )
    assert fresh(long).state_reason == held
    assert fresh(unknown).state_reason == held
    assert fresh(head).estimated_start == (
        fresh(holder).started_at + timedelta(minutes=60)
    ).replace(microsecond=0)
    assert_invariants()


def test_a_long_job_may_take_what_the_head_will_not_need(v100):
    NodeFactory(gpu_model=v100)
    running(v100, 4, max_runtime_minutes=60)
    head = JobFactory(gpu_model=v100, gpu_count=6)
    longs = [JobFactory(gpu_model=v100, gpu_count=1) for _ in range(3)]

    run_pass()

    # At the head's start 8 cards are free and it needs 6: two may run on past it.
    assert states([head, *longs]) == [
        Job.State.RESOURCE_WAIT,
        Job.State.STARTING,
        Job.State.STARTING,
        Job.State.RESOURCE_WAIT,
    ]


def test_backfill_never_delays_the_head(v100):
    NodeFactory(name="gpu01", gpu_model=v100)
    NodeFactory(name="gpu02", gpu_model=v100)
    holders = [
        running(v100, 5, max_runtime_minutes=90),
        running(v100, 6, max_runtime_minutes=45),
    ]
    head = JobFactory(gpu_model=v100, gpu_count=8, max_runtime_minutes=30)
    run_pass()
    alone = fresh(head).estimated_start
    assert alone == (fresh(holders[1]).started_at + timedelta(minutes=45)).replace(microsecond=0)

    later = [
        JobFactory(gpu_model=v100, gpu_count=count, max_runtime_minutes=minutes)
        for count, minutes in [(1, 20), (2, 44), (1, 46), (3, None), (1, 200), (2, 10), (1, 1)]
    ]
    run_pass()

    assert fresh(head).state == Job.State.RESOURCE_WAIT
    assert fresh(head).estimated_start == alone
    started = [job for job in later if fresh(job).state == Job.State.STARTING]
    assert started, "something should backfill"
    # Everything that started ends by the head's start at the latest, or is not in its way:
    # end the first holder and all backfilled jobs that end in time; the head starts.
    for job in started:
        if job.max_runtime_minutes is not None and job.max_runtime_minutes <= 45:
            run_job(job)
            end_job(job)
    end_job(holders[1])
    run_pass()
    assert fresh(head).state == Job.State.STARTING
    assert_invariants()


def test_the_head_has_no_estimate_when_what_it_waits_for_has_no_max_run_time(v100):
    NodeFactory(gpu_model=v100)
    running(v100, 4, max_runtime_minutes=None)
    head = JobFactory(gpu_model=v100, gpu_count=8)
    long = JobFactory(gpu_model=v100, gpu_count=1, max_runtime_minutes=5)

    run_pass()

    assert fresh(head).state == Job.State.RESOURCE_WAIT
    assert fresh(head).estimated_start is None
    # Its start is unknown, so no end is early enough: the free cards stay reserved.
    assert fresh(long).state == Job.State.RESOURCE_WAIT


def test_queue_positions_and_estimates_follow_the_queue(v100):
    NodeFactory(gpu_model=v100)
    holder = running(v100, 8, max_runtime_minutes=60)
    first, second, third = (
        JobFactory(gpu_model=v100, gpu_count=8, max_runtime_minutes=m) for m in (30, None, 10)
    )

    run_pass()

    ends = fresh(holder).started_at + timedelta(minutes=60)
    assert [fresh(j).queue_position for j in (first, second, third)] == [1, 2, 3]
    assert fresh(first).estimated_start == ends.replace(microsecond=0)
    assert fresh(second).estimated_start == (ends + timedelta(minutes=30)).replace(microsecond=0)
    assert fresh(third).estimated_start is None  # behind a job without a max run time


def test_a_stopped_waiting_job_leaves_its_queue_and_the_next_moves_up(v100):
    NodeFactory(gpu_model=v100)
    running(v100, 8, max_runtime_minutes=None)
    first, second = (JobFactory(gpu_model=v100, gpu_count=8) for _ in range(2))
    run_pass()
    assert [fresh(first).queue_position, fresh(second).queue_position] == [1, 2]

    job_stop(job=fresh(first))
    run_pass()

    assert fresh(first).state == Job.State.STOPPED
    assert fresh(first).queue_position is None
    assert fresh(second).queue_position == 1


def test_a_reason_whose_numbers_change_updates_without_a_new_event(v100):
    NodeFactory(gpu_model=v100)
    blocker = running(v100, 8, max_runtime_minutes=None)
    gang = JobFactory(gpu_model=v100, gpu_count=8, task_mode="distributed", replicas=3)
    run_pass()
    assert fresh(gang).state_reason == (
        "Waiting for resources: needs 3 nodes with 8 free V100 cards; none has them"
    )
    end_job(blocker)

    run_pass()

    assert fresh(gang).state_reason == (
        "Waiting for resources: needs 3 nodes with 8 free V100 cards; 1 has them"
    )
    assert list(fresh(gang).events.values_list("to_state", flat=True)) == ["resource_wait"]


def test_waiting_again_for_the_same_reason_writes_nothing(v100):
    NodeFactory(gpu_model=v100)
    running(v100, 8, max_runtime_minutes=None)
    JobFactory(gpu_model=v100, gpu_count=8)
    run_pass()
    events = list(Job.objects.values_list("events__pk", flat=True))

    run_pass()

    assert list(Job.objects.values_list("events__pk", flat=True)) == events
