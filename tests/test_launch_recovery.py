"""A job moved to starting whose launch never ran (its process died) is launched again."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.execution.agent.attempt_start import start_attempt
from jobs.execution.launch import LAUNCH_LOST_AFTER, lost_launches_retry
from jobs.models import Job, JobEvent, Replica, ReplicaAttempt
from tests.agent_support import cpu_job, make_node

pytestmark = pytest.mark.django_db


def placed_job(*, attempt: int = 1, **fields) -> Job:
    """As a committed pass leaves a job: starting, replica placed, no attempt yet."""
    job = cpu_job("true", state=Job.State.STARTING, attempt=attempt, **fields)
    Replica.objects.create(job=job, index=0, node=make_node())
    JobEvent.objects.create(job=job, from_state="resource_wait", to_state="starting", reason="-")
    return job


def fake_executor(monkeypatch, start_attempts) -> None:
    """Every executor hands its attempts to ``start_attempts`` instead of a node or Slurm."""
    from jobs.execution import launch

    executor = type("FakeExecutor", (), {"start_attempts": staticmethod(start_attempts)})()
    monkeypatch.setattr(launch, "executor_for", lambda name: executor)


def later(seconds: float) -> timezone.datetime:
    return timezone.now() + timedelta(seconds=seconds)


def attempt_numbers(job: Job) -> list[int]:
    return list(
        ReplicaAttempt.objects.filter(replica__job=job)
        .order_by("number")
        .values_list("number", flat=True)
    )


def test_a_starting_job_left_without_attempts_is_launched_once_it_sat_long_enough():
    job = placed_job()
    assert lost_launches_retry(now=later(LAUNCH_LOST_AFTER.total_seconds() - 2)) == []
    assert attempt_numbers(job) == []

    assert lost_launches_retry(now=later(LAUNCH_LOST_AFTER.total_seconds() + 1)) == [job.pk]
    assert attempt_numbers(job) == [1]
    # Launched now: the next call finds nothing to do.
    assert lost_launches_retry(now=later(3600)) == []
    assert attempt_numbers(job) == [1]


def test_a_retry_in_place_whose_launch_was_lost_gets_its_new_attempt():
    job = placed_job(attempt=2)
    replica = job.replica_set.get()
    ReplicaAttempt.objects.create(
        replica=replica, number=1, node=replica.node, state=ReplicaAttempt.State.FAILED
    )
    assert lost_launches_retry(now=later(60)) == [job.pk]
    assert attempt_numbers(job) == [1, 2]


def test_jobs_that_are_not_starting_are_left_alone():
    waiting = cpu_job("true")
    running = placed_job()
    Job.objects.filter(pk=running.pk).update(state=Job.State.RUNNING)
    assert lost_launches_retry(now=later(3600)) == []
    assert attempt_numbers(waiting) == attempt_numbers(running) == []


def test_a_stop_asked_of_an_unlaunched_job_is_carried_out_through_the_relaunch(settings, tmp_path):
    """The stop found no attempt to signal; the relaunched attempt is refused a start."""
    settings.TRAINYARD_NODE_ROOT = tmp_path
    job = placed_job(stop_requested_at=timezone.now())
    assert lost_launches_retry(now=later(60)) == [job.pk]
    (attempt_id,) = ReplicaAttempt.objects.filter(replica__job=job).values_list("pk", flat=True)
    start_attempt(attempt_id)  # what the node's agent does with the start message

    job.refresh_from_db()
    assert job.state == Job.State.STOPPED
    assert ReplicaAttempt.objects.get(pk=attempt_id).reason == "Stopped before it started."


def test_the_jobs_a_pass_started_are_launched_together_in_a_fixed_number_of_queries(
    django_assert_max_num_queries, monkeypatch
):
    from jobs.execution import launch

    started: list[list[int]] = []
    fake_executor(monkeypatch, started.append)
    jobs = [placed_job() for _ in range(12)]
    waiting = cpu_job("true")
    retried = placed_job(attempt=2)
    old = retried.replica_set.get()
    ReplicaAttempt.objects.create(
        replica=old, number=1, node=old.node, state=ReplicaAttempt.State.FAILED
    )
    with django_assert_max_num_queries(6):
        launch.jobs_launch([job.pk for job in [*jobs, retried]] + [waiting.pk])
    assert [attempt_numbers(job) for job in jobs] == [[1]] * 12
    assert attempt_numbers(retried) == [1, 2] and attempt_numbers(waiting) == []
    # One hand-over to the executor, of every attempt in the order given (a Slurm job
    # each, queued first first); launching again creates nothing.
    firsts = {job.pk: job.replica_set.get().attempts.get(number=job.attempt).pk for job in jobs}
    firsts[retried.pk] = old.attempts.get(number=2).pk
    assert started == [[firsts[job.pk] for job in [*jobs, retried]]]
    launch.jobs_launch([job.pk for job in jobs])
    assert [attempt_numbers(job) for job in jobs] == [[1]] * 12


def test_a_launch_that_fails_stops_no_other_job(monkeypatch):
    from jobs.execution import launch

    first, broken, last = placed_job(), placed_job(), placed_job()
    broken_attempts: set[int] = set()
    started: list[int] = []

    def start_attempts(attempt_ids: list[int]) -> None:
        if set(attempt_ids) & broken_attempts:
            raise RuntimeError("executor down for this one")
        started.extend(attempt_ids)

    fake_executor(monkeypatch, start_attempts)
    broken_replica = broken.replica_set.get()
    broken_attempts.add(
        ReplicaAttempt.objects.create(replica=broken_replica, number=1, node=broken_replica.node).pk
    )
    assert launch.launch_each([first.pk, broken.pk, last.pk]) == [first.pk, last.pk]
    assert attempt_numbers(last) == [1]
    last_attempt = ReplicaAttempt.objects.get(replica__job=last)
    assert last_attempt.pk in started
