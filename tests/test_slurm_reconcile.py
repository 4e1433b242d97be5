"""Reconciling with Slurm: vanished jobs, replicas' own exit files, orphans, submitting once.

The tracking pass and the submission run here, in the test process, against the
real development cluster.
"""

import pytest
from django.utils import timezone

from jobs.execution.replica.folder import AttemptFolder
from jobs.execution.slurm import cli, submit
from jobs.execution.slurm.track import track_pass
from jobs.lifecycle.transitions import job_transition
from jobs.models import Job, Replica, ReplicaAttempt
from resources.models import Node
from tests.factories import JobFactory
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration
State = ReplicaAttempt.State


@pytest.fixture
def site(slurm_here):
    return slurm_here


def attempt_on(node_name: str, *, state: str = State.PENDING, external_id: str = "", **job):
    """A job placed on the node with one attempt, without launching anything."""
    job = JobFactory(cpu_milli=1000, memory_mib=1024, **job)
    job_transition(job=job, to_state=Job.State.STARTING, reason="placed", attempt=1)
    node = Node.objects.get(name=node_name)
    replica = Replica.objects.create(job=job, index=0, node=node, card_indices=[0])
    started = timezone.now() if state == State.RUNNING else None
    if state == State.RUNNING:
        job_transition(job=job, to_state=Job.State.RUNNING, reason="running")
    return ReplicaAttempt.objects.create(
        replica=replica,
        number=1,
        node=node,
        state=state,
        external_id=external_id,
        started_at=started,
    )


def test_running_attempt_whose_slurm_job_vanished_is_lost_and_placed_again(site):
    attempt = attempt_on("gpu01", state=State.RUNNING, external_id="999999")
    report = track_pass()
    assert report.reconciled == 1
    attempt.refresh_from_db()
    assert (attempt.state, attempt.platform_fault) == (State.LOST, True)
    assert "Slurm no longer knows the job" in attempt.reason
    job = Job.objects.get(pk=attempt.replica.job_id)
    assert (job.state, job.attempt) == (Job.State.RESOURCE_WAIT, 2)  # not left running


def test_a_vanished_job_whose_replica_wrote_its_exit_ends_as_the_replica_did(site):
    attempt = attempt_on("gpu02", state=State.RUNNING, external_id="999998")
    folder = AttemptFolder.of(attempt)
    folder.path.mkdir(parents=True)
    folder.write(
        "exit", {"exit_code": 0, "summary": "exit code 0", "ended_at": timezone.now().isoformat()}
    )
    track_pass()
    attempt.refresh_from_db()
    assert (attempt.state, attempt.exit_code) == (State.SUCCEEDED, 0)
    assert Job.objects.get(pk=attempt.replica.job_id).state == Job.State.SUCCEEDED


def test_our_slurm_job_that_no_attempt_owns_is_cancelled_and_nobody_elses(site):
    ours = cli.submit(
        argv=[f"--job-name={site}-j99999-r0-a1", "--partition=trainyard", "--output=/dev/null"],
        script="#!/bin/bash\nsleep 300\n",
        env={},
    )
    theirs = cli.submit(
        argv=["--job-name=someone-else", "--partition=trainyard", "--output=/dev/null"],
        script="#!/bin/bash\nsleep 300\n",
        env={},
    )
    try:
        wait_until(lambda: cli.jobs(name_prefix=site)[ours].state == "RUNNING", what="running")
        attempt_on("gpu03", state=State.RUNNING, external_id="999997")  # something to track
        assert track_pass().orphans_cancelled == 1
        wait_until(lambda: cli.jobs(name_prefix=site)[ours].state == "CANCELLED", what="cancelled")
        assert cli.jobs(name_prefix="someone-else")[theirs].state in {"PENDING", "RUNNING"}
    finally:
        cli.cancel([theirs])


def test_submitting_twice_makes_one_slurm_job_even_when_its_id_was_not_recorded(site):
    attempt = attempt_on("gpu04", command="sleep 60")
    [group] = submit.load_groups([attempt.pk])
    first = submit.submit_group(group)
    ReplicaAttempt.objects.filter(pk=attempt.pk).update(external_id="")  # as if lost mid-way
    [group] = submit.load_groups([attempt.pk])
    again = submit.submit_group(group)
    assert first == again
    assert len(cli.job_ids_named(submit.job_name(attempt.replica.job_id, 1, 1))) == 1
    assert ReplicaAttempt.objects.get(pk=attempt.pk).external_id == first


def test_stop_before_submission_ends_the_attempt_and_nothing_reaches_slurm(site):
    attempt = attempt_on("gpu01")
    submit.stop_attempts([attempt.pk], reason="Changed my mind")
    attempt.refresh_from_db()
    assert (attempt.state, attempt.reason) == (State.STOPPED, "Changed my mind")
    [group] = submit.load_groups([attempt.pk])
    assert submit.submit_group(group) is None
    assert cli.job_ids_named(submit.job_name(attempt.replica.job_id, 1, 1)) == []
