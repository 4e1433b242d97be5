"""Replica retry: the whole replica restarts with the next attempt until retries run out."""

import pytest

from jobs.models import Job, ReplicaAttempt
from tests.agent_support import attempt_log, attempts_of, cpu_job, place, wait_for_state

pytestmark = pytest.mark.integration

FAIL_BEFORE_THIRD = 'echo "try $TRAINYARD_ATTEMPT"\ntest "$TRAINYARD_ATTEMPT" -ge 3\necho done'


def test_fails_twice_then_succeeds_on_attempt_3(agent):
    job = place(cpu_job(FAIL_BEFORE_THIRD, max_retries=2), agent.nodes)
    job = wait_for_state(job, Job.FINAL_STATES, agent)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert job.attempt == 3
    attempts = attempts_of(job)
    assert [(a.number, a.state, a.exit_code) for a in attempts] == [
        (1, ReplicaAttempt.State.FAILED, 1),
        (2, ReplicaAttempt.State.FAILED, 1),
        (3, ReplicaAttempt.State.SUCCEEDED, 0),
    ]
    assert "try 3\ndone" in attempt_log(attempts[2])
    assert attempts[0].ended_at <= attempts[1].started_at
    reasons = list(job.events.values_list("reason", flat=True))
    assert any("restarting it (retry 2 of 2)" in reason for reason in reasons)


def test_job_fails_when_retries_run_out(agent):
    job = place(cpu_job(FAIL_BEFORE_THIRD, max_retries=1), agent.nodes)
    job = wait_for_state(job, Job.FINAL_STATES, agent)
    assert job.state == Job.State.FAILED
    assert [a.number for a in attempts_of(job)] == [1, 2]
    # The user's error first: the exit, where, and the log's last lines.
    assert job.state_reason.startswith(
        "Exited with exit code 1 on replica 0, attempt 2; no retries left."
    )
    assert "exit code 1" in job.state_reason and "try 2" in job.state_reason
