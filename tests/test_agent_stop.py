"""Max run time and stop: TERM, a grace period, then KILL; timed out or stopped."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from jobs.models import Job, ReplicaAttempt
from jobs.services.stop import job_stop
from resources.models import node_queue
from tests.agent_support import attempt_log, attempts_of, cpu_job, place, wait_for_state
from tests.support.processes import celery_idle
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

IGNORES_TERM = "trap 'echo got TERM, ignoring' TERM\necho started\nsleep 300 & wait; sleep 300"


def running_attempt(job: Job, agent) -> ReplicaAttempt:
    wait_for_state(job, Job.State.RUNNING, agent)
    wait_until(lambda: "started" in attempt_log(attempts_of(job)[0]), what="command output")
    return attempts_of(job)[0]


def test_max_run_time_kills_a_replica_that_ignores_term(agent):
    job = place(cpu_job(IGNORES_TERM, max_runtime_minutes=1, max_retries=3), agent.nodes)
    attempt = running_attempt(job, agent)
    assert attempt.deadline == attempt.started_at + timedelta(minutes=1)
    # A minute is long for a test: bring the deadline to now, as the passing minute would.
    ReplicaAttempt.objects.filter(pk=attempt.pk).update(deadline=timezone.now())
    job = wait_for_state(job, Job.FINAL_STATES, agent)
    assert job.state == Job.State.TIMED_OUT
    assert job.state_reason == "Max run time of 1 minute exceeded."
    (attempt,) = attempts_of(job)  # a timeout is not retried
    assert attempt.state == ReplicaAttempt.State.TIMED_OUT
    assert attempt.exit_code == 128 + 9  # TERM was ignored; KILL after the grace period
    log = attempt_log(attempt)
    assert "got TERM, ignoring" in log and "killed by SIGKILL" in log


def test_stop_terminates_the_replica_and_ends_stopped(agent, owner):
    command = "trap 'echo saving; exit 0' TERM\necho started\nsleep 300 & wait"
    job = place(cpu_job(command, owner=owner), agent.nodes)
    running_attempt(job, agent)
    with transaction.atomic():
        job_stop(job=job, actor=owner)
    job = wait_for_state(job, Job.FINAL_STATES, agent)
    assert job.state == Job.State.STOPPED
    assert job.state_reason == "Stopped by owner"
    (attempt,) = attempts_of(job)
    assert attempt.state == ReplicaAttempt.State.STOPPED
    assert attempt.exit_code == 0  # it handled TERM within the grace period
    assert "saving" in attempt_log(attempt)


def test_stop_before_the_start_message_is_handled_starts_nothing(agent, owner):
    job = cpu_job("touch $TRAINYARD_DATA_OUT/ran", owner=owner)
    with transaction.atomic():
        place(job, agent.nodes)
        job_stop(job=Job.objects.get(pk=job.pk), actor=owner)
    job = wait_for_state(job, Job.FINAL_STATES, agent)
    assert job.state == Job.State.STOPPED
    (attempt,) = attempts_of(job)
    assert attempt.state == ReplicaAttempt.State.STOPPED and attempt.started_at is None
    # A start that slipped through would have run by the time the agent is idle.
    start_queue = node_queue(agent.nodes[0].name)
    starts = ["jobs.agent.start_attempt"]
    wait_until(
        lambda: celery_idle(agent.log_path, [start_queue], tasks=starts), what="the agent idle"
    )
    assert not list(agent.node_root.glob(f"*/jobs/{job.pk}/replica-0/output/ran"))
