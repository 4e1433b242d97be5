"""An agent killed with -9 and restarted re-adopts its replicas: none runs twice or is lost."""

import json
import os
from datetime import timedelta

import pytest
from celery import current_app
from django.utils import timezone

from jobs.execution.files import attempt_dir
from jobs.models import Job, ReplicaAttempt
from resources.models import node_queue
from tests.agent_support import attempt_log, attempts_of, cpu_job, place, wait_for_state
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


def exit_file(attempt: ReplicaAttempt):
    return attempt_dir(attempt.node.name, attempt.pk) / "exit.json"


def test_replica_outlives_a_killed_agent_and_its_exit_is_reported_after_restart(agent):
    job = place(cpu_job("echo started\nsleep 2\necho finished"), agent.nodes)
    wait_for_state(job, Job.State.RUNNING, agent)
    (attempt,) = attempts_of(job)
    agent.kill9()
    os.kill(attempt.pid, 0)  # still running without its agent
    wait_until(lambda: exit_file(attempt).exists(), what="the replica to finish alone")
    ended_at = json.loads(exit_file(attempt).read_text())["ended_at"]
    assert Job.objects.get(pk=job.pk).state == Job.State.RUNNING  # nobody is there to look

    agent.start()
    job = wait_for_state(job, Job.FINAL_STATES, agent)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    (attempt,) = attempts_of(job)
    assert attempt.ended_at.isoformat() == ended_at  # when it ended, not when we noticed
    log = attempt_log(attempt)
    assert log.count("started") == 1 and "finished" in log


def test_deadline_that_passed_while_the_agent_was_down_is_enforced_after_restart(agent):
    command = "trap '' TERM\nsleep 300"
    job = place(cpu_job(command, max_runtime_minutes=5), agent.nodes)
    wait_for_state(job, Job.State.RUNNING, agent)
    agent.kill9()
    ReplicaAttempt.objects.filter(replica__job=job).update(deadline=timezone.now())
    agent.start()
    job = wait_for_state(job, Job.FINAL_STATES, agent)
    assert job.state == Job.State.TIMED_OUT, job.state_reason


def test_the_same_start_message_twice_starts_one_process(agent):
    job = place(cpu_job("echo once >> $TRAINYARD_DATA_OUT/runs\nsleep 1"), agent.nodes)
    wait_for_state(job, Job.State.RUNNING, agent)
    (attempt,) = attempts_of(job)
    for _ in range(2):
        current_app.send_task(
            "jobs.agent.start_attempt", args=[attempt.pk], queue=node_queue(attempt.node.name)
        )
    job = wait_for_state(job, Job.FINAL_STATES, agent)
    assert job.state == Job.State.SUCCEEDED
    (runs,) = agent.node_root.glob(f"*/jobs/{job.pk}/replica-0/output/runs")
    assert runs.read_text() == "once\n"
    assert attempts_of(job)[0].pid == attempt.pid


def test_a_start_message_that_never_arrived_is_started_by_the_poll(agent):
    job = place(cpu_job("echo started late"), agent.nodes, launch=False)
    replica = job.replica_set.get()
    attempt = ReplicaAttempt.objects.create(replica=replica, number=1, node=replica.node)
    # As if its message had been lost a while ago (the poll waits that long before acting).
    ReplicaAttempt.objects.filter(pk=attempt.pk).update(
        created_at=timezone.now() - timedelta(minutes=5)
    )
    job = wait_for_state(job, Job.FINAL_STATES, agent)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert "started late" in attempt_log(attempts_of(job)[0])
