"""Expected starts behind the look-ahead (jobs/scheduler/lookahead_forecast.py): the jobs
inside Slurm start at Slurm's estimates, those in Trainyard's queue after them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jobs.models import Job
from jobs.scheduler import run_pass
from jobs.scheduler.backfill import Release
from jobs.scheduler.cluster import Cluster, NodeState, ReplicaUse
from jobs.scheduler.lookahead_forecast import Queued, in_slurm_order, lookahead_starts
from resources.catalog import ModelCatalog
from resources.models import Node
from tests.factories import GpuModelFactory, JobFactory, NodeFactory
from tests.scheduling import fresh

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
HOUR = 3600


def one_node(
    free: int, *, held_until: list[datetime] = (), outside: int = 0
) -> tuple[Cluster, list[Release]]:
    """A V100 node with ``free`` cards free, one held card per end in ``held_until``, and
    ``outside`` cards that jobs outside Trainyard hold (their end unknown here)."""
    node = NodeState(
        pk=1, name="gpu01", model="V100", cpu_free=64_000, memory_free=1 << 20, storage_free=1000
    )
    cluster = Cluster([node], ModelCatalog())
    node.whole_free = free
    cluster.held_outside = {1: outside} if outside else {}
    releases = [
        Release(end, order, ReplicaUse(1, 0, 0, 0, whole_cards=1), job_id=order, likely_end=end)
        for order, end in enumerate(held_until)
    ]
    return cluster, releases


def starts(cluster, releases, *jobs: Queued) -> list[datetime | None]:
    found = lookahead_starts(now=NOW, cluster=cluster, releases=releases, queues={"V100": jobs})
    return [found[job.pk] for job in jobs]


def test_a_job_behind_the_lookahead_starts_after_those_inside_at_slurms_estimates():
    # One card, held for 10 more minutes; Slurm plans the job inside for minute 10.
    cluster, releases = one_node(0, held_until=[NOW + 10 * MINUTE])
    inside = Queued(1, 1, HOUR, slurm_start=NOW + 10 * MINUTE)
    held = Queued(2, 1, HOUR)

    assert starts(cluster, releases, inside, held) == [NOW + 10 * MINUTE, NOW + 70 * MINUTE]


def test_slurms_estimate_wins_over_what_trainyard_sees_free():
    """Slurm knows the jobs that never came through Trainyard: by Trainyard's view the
    card is free now, but Slurm starts the job inside only at minute 45."""
    cluster, releases = one_node(1)
    inside = Queued(1, 1, HOUR, slurm_start=NOW + 45 * MINUTE)
    held = Queued(2, 1, HOUR)

    assert starts(cluster, releases, inside, held) == [NOW + 45 * MINUTE, NOW + 105 * MINUTE]


def test_slurms_estimate_tells_when_the_cards_held_outside_trainyard_free():
    """Jobs outside Trainyard hold all 4 cards, until a moment only Slurm knows: its
    estimate for the job inside (minute 20) says they free by then, so the job behind
    starts then too (2 + 2 cards), not never."""
    cluster, releases = one_node(0, outside=4)
    inside = Queued(1, 2, HOUR, slurm_start=NOW + 20 * MINUTE)
    held = [Queued(2, 2, HOUR), Queued(3, 2, HOUR)]

    assert starts(cluster, releases, inside, *held) == [
        NOW + 20 * MINUTE,
        NOW + 20 * MINUTE,
        NOW + 80 * MINUTE,
    ]


def test_without_slurms_estimate_jobs_start_as_cards_free_in_order():
    cluster, releases = one_node(1, held_until=[NOW + 20 * MINUTE, NOW + 30 * MINUTE])
    jobs = [Queued(1, 1, HOUR), Queued(2, 2, HOUR), Queued(3, 1, HOUR)]

    # 2 needs both held cards (minute 30); 3 comes after it, when job 1 ends.
    assert starts(cluster, releases, *jobs) == [NOW, NOW + 30 * MINUTE, NOW + 60 * MINUTE]


def test_behind_a_job_with_no_likely_end_the_estimate_is_unknown():
    cluster, releases = one_node(1)
    jobs = [Queued(1, 1, None), Queued(2, 1, HOUR), Queued(3, 1, HOUR)]

    assert starts(cluster, releases, *jobs) == [NOW, None, None]


def test_a_job_that_outranks_those_inside_goes_before_them():
    inside = [(500, Queued(1, 1, HOUR)), (500, Queued(2, 1, HOUR))]
    held = [(400, Queued(3, 1, HOUR)), (500, Queued(4, 1, HOUR))]

    assert [job.pk for job in in_slurm_order(inside, [], held)] == [3, 1, 2, 4]


@pytest.mark.django_db
def test_a_pass_gives_the_jobs_behind_the_lookahead_an_estimate_seeded_with_slurms(settings):
    settings.TRAINYARD_SLURM_LOOKAHEAD = 2  # one job inside Slurm per card
    v100 = GpuModelFactory(name="V100")
    NodeFactory(name="gpu01", gpu_model=v100, gpu_count=2, executor=Node.Executor.SLURM)
    jobs = [JobFactory(gpu_model=v100, gpu_count=1, expected_seconds=HOUR) for _ in range(4)]

    run_pass()

    inside, held = jobs[:2], jobs[2:]
    assert [fresh(job).state for job in inside] == [Job.State.STARTING] * 2
    # Nothing from Slurm yet: the two inside take the two free cards now, for an hour.
    hour_from_now = fresh(jobs[0]).submitted_at + timedelta(seconds=HOUR)
    first = fresh(held[0]).estimated_start
    assert first is not None and abs(first - hour_from_now) < 2 * MINUTE
    assert fresh(held[1]).estimated_start == first

    # Slurm says the two inside start only in 30 minutes (the cards are busy outside).
    slurm_start = (hour_from_now - 30 * MINUTE).replace(microsecond=0)
    Job.objects.filter(pk__in=[job.pk for job in inside]).update(estimated_start=slurm_start)
    run_pass()

    after = slurm_start + timedelta(seconds=HOUR)
    assert [fresh(job).estimated_start for job in held] == [after, after]
