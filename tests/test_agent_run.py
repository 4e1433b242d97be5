"""Jobs run for real on the local agent: success, failure, the environment."""

import pytest

from jobs.models import Job, JobEvent, ReplicaAttempt
from tests.agent_support import attempt_log, attempts_of, cpu_job, place, wait_for_state

pytestmark = pytest.mark.integration


def test_job_succeeds_when_its_replica_exits_0(agent):
    job = place(cpu_job("echo hello from $TRAINYARD_JOB_ID\necho second line"), agent.nodes)
    job = wait_for_state(job, Job.FINAL_STATES, agent)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    (attempt,) = attempts_of(job)
    assert attempt.state == ReplicaAttempt.State.SUCCEEDED
    assert attempt.exit_code == 0
    assert attempt.started_at <= attempt.training_started_at <= attempt.ended_at
    assert attempt.pid and not attempt.platform_fault
    log = attempt_log(attempt)
    assert f"hello from {job.pk}\nsecond line\n" in log
    assert attempt.log_offset == len(log.encode())
    path = list(JobEvent.objects.filter(job=job).values_list("to_state", flat=True))
    assert path[-3:] == [Job.State.STARTING, Job.State.RUNNING, Job.State.SUCCEEDED]


def test_failure_on_line_2_of_3_fails_the_job_with_code_and_last_lines(agent):
    command = "echo step one\necho broken >&2 && sh -c 'exit 7'\necho step three"
    job = place(cpu_job(command), agent.nodes)
    job = wait_for_state(job, Job.FINAL_STATES, agent)
    assert job.state == Job.State.FAILED
    (attempt,) = attempts_of(job)
    assert (attempt.state, attempt.exit_code) == (ReplicaAttempt.State.FAILED, 7)
    assert "step three" not in attempt_log(attempt)
    assert "exit code 7" in job.state_reason
    assert "line 2 failed with exit code 7" in job.state_reason
    assert "broken" in job.state_reason and "step one" in job.state_reason
