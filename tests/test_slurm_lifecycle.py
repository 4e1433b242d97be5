"""Retry, max run time, stop and a controller outage, all through a real Slurm."""

import contextlib
import subprocess
from datetime import timedelta

import pytest

from jobs.execution.files import replica_output_dir, storage_name
from jobs.execution.slurm import cli
from jobs.execution.slurm.inventory import inventory_sync
from jobs.models import Job, ReplicaAttempt
from jobs.services.stop import job_stop
from resources.models import Node
from tests.agent_support import attempt_log, attempts_of, place, wait_for_state
from tests.support.waiting import wait_until
from tests.test_agent_distributed import all_reduce_job, sums
from tests.test_slurm_run import WAIT, gpu_job

pytestmark = pytest.mark.integration
State = ReplicaAttempt.State


def running(job: Job, slurm) -> Job:
    return wait_for_state(job, Job.State.RUNNING, slurm.worker, timeout=WAIT)


def test_failing_job_is_retried_as_a_new_slurm_job(slurm):
    command = 'echo "try $TRAINYARD_ATTEMPT"\ntest "$TRAINYARD_ATTEMPT" -ge 2'
    job = place(gpu_job(command, max_retries=1), [slurm.nodes[0]])
    job = wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    first, second = attempts_of(job)
    assert (first.state, first.exit_code, second.state) == (State.FAILED, 1, State.SUCCEEDED)
    assert first.external_id != second.external_id
    assert f"Slurm job {first.external_id} ended FAILED. Exited with exit code 1" in first.reason
    assert "try 1" in attempt_log(first) and "try 2" in attempt_log(second)
    jobs = slurm.jobs()
    assert jobs[first.external_id].state == "FAILED"
    assert jobs[first.external_id].name.endswith(f"-j{job.pk}-r0-a1")
    assert jobs[second.external_id].name.endswith(f"-j{job.pk}-r0-a2")
    assert any(
        "restarting it (retry 1 of 1)" in r for r in job.events.values_list("reason", flat=True)
    )


def test_distributed_replica_failure_restarts_both_replicas_in_a_new_slurm_job(slurm):
    nodes = slurm.nodes[2:4]
    job = place(all_reduce_job('test "$TRAINYARD_REPLICA-$TRAINYARD_ATTEMPT" != 1-1\n'), nodes)
    job = wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=2 * WAIT)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert [(a.number, a.replica.index, a.state) for a in attempts_of(job)] == [
        (1, 0, State.STOPPED),  # waiting at the rendezvous when its peer failed
        (1, 1, State.FAILED),
        (2, 0, State.SUCCEEDED),
        (2, 1, State.SUCCEEDED),
    ]
    assert sums(job, nodes) == ["0 2 3.0", "1 2 3.0"]
    assert len({a.external_id for a in attempts_of(job)}) == 2


def test_max_run_time_ends_timed_out_through_slurms_time_limit(slurm):
    job = place(gpu_job("echo started\nsleep 600", max_runtime_minutes=1), [slurm.nodes[1]])
    job = wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=180)
    assert job.state == Job.State.TIMED_OUT, job.state_reason
    [attempt] = attempts_of(job)
    assert attempt.state == State.TIMED_OUT
    assert f"Slurm job {attempt.external_id} ended TIMEOUT" in attempt.reason
    assert "Max run time of 1 minute exceeded." in job.state_reason
    slurm_job = slurm.jobs()[attempt.external_id]
    assert slurm_job.state == "TIMEOUT"
    # Slurm counts the limit from its own start, in whole seconds (59.1 s between the
    # attempt's sub-second start and Slurm's truncated end once): the limit is Slurm's
    # figures; the attempt began when its replica did and ended when Slurm's job did.
    assert 60 <= (slurm_job.end_time - slurm_job.start_time).total_seconds() < 150
    assert slurm_job.start_time <= attempt.started_at < attempt.ended_at
    assert abs(attempt.ended_at - slurm_job.end_time) < timedelta(seconds=2)
    assert "[trainyard] Slurm: the max run time ends in about" in attempt_log(attempt)


def test_stop_cancels_the_slurm_job_and_ends_stopped(slurm):
    job = running(place(gpu_job("echo started\nsleep 600"), [slurm.nodes[0]]), slurm)
    job_stop(job=job, reason="Enough for today")
    job = wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
    assert job.state == Job.State.STOPPED
    assert job.state_reason == "Enough for today"
    [attempt] = attempts_of(job)
    assert attempt.state == State.STOPPED and attempt.reason.endswith("Enough for today")
    wait_until(
        lambda: slurm.jobs()[attempt.external_id].state in {"CANCELLED", "FAILED"},
        what="the Slurm job to end",
    )


# Runs until the test lets it end (it touches ``go`` in the replica's output folder).
UNTIL_LET_GO = 'while [ ! -e "$TRAINYARD_DATA_OUT/go" ]; do sleep 0.2; done\necho finished'


CONTROLLER_WAIT = "Waiting for the Slurm controller to answer"


def let_go(job: Job, node: Node) -> None:
    (replica_output_dir(storage_name(node), job.pk, 0) / "go").touch()


def test_job_outlives_a_controller_outage_and_ends_right(slurm_cluster_alone, slurm):
    first = running(place(gpu_job(UNTIL_LET_GO), [slurm.nodes[0]]), slurm)
    quick = running(place(gpu_job(UNTIL_LET_GO), [slurm.nodes[2]]), slurm)
    slurm.cluster.run("stop-controller")
    try:
        # Submitted while the controller is down: it waits, and is submitted once it is back.
        second = place(gpu_job("echo second"), [slurm.nodes[1]])
        let_go(quick, slurm.nodes[2])
        # The outage lasts until the platform did without Slurm what it must: a replica that
        # exited meanwhile is reported from its own exit file, and the job placed meanwhile
        # says it waits for the controller.
        wait_until(
            lambda: Job.objects.get(pk=quick.pk).state == Job.State.SUCCEEDED,
            what="the replica that exited meanwhile reported",
            timeout=WAIT,
        )
        wait_until(
            lambda: second.events.filter(reason__contains=CONTROLLER_WAIT).exists(),
            what="the job placed meanwhile waiting for the controller",
            timeout=WAIT,
        )
        assert Job.objects.get(pk=first.pk).state == Job.State.RUNNING
        assert Job.objects.get(pk=second.pk).state == Job.State.STARTING
        with pytest.raises(cli.SlurmUnavailable):
            inventory_sync()  # and the nodes stay as they were
        partition = Node.objects.filter(pk__in=[n.pk for n in slurm.nodes])
        assert set(partition.values_list("state", flat=True)) == {Node.State.READY}
    finally:
        slurm.cluster.run("start")
    let_go(first, slurm.nodes[0])
    first = wait_for_state(first, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
    second = wait_for_state(second, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
    assert first.state == second.state == Job.State.SUCCEEDED, (
        first.state_reason,
        second.state_reason,
    )
    [attempt] = attempts_of(first)
    assert "finished" in attempt_log(attempt)
    assert attempt.exit_code == 0 and not attempt.platform_fault
    # One Slurm job each: nothing was submitted twice while the controller was away.
    names = [j.name for j in slurm.jobs().values()]
    assert len(names) == len(set(names)) == 3


def test_node_failure_loses_the_attempt_unbilled_and_places_the_job_again(
    slurm_cluster_alone, slurm
):
    cluster = slurm.cluster
    cluster.scontrol("update", "partitionname=trainyard", "nodes=gpu0[1-5]")
    try:
        inventory_sync()
        spare = Node.objects.get(name="gpu05")
        job = running(place(gpu_job("sleep 600"), [spare]), slurm)
        cluster.scontrol("update", "nodename=gpu05", "state=down", "reason=power cut")
        first = ReplicaAttempt.objects.filter(replica__job=job, number=1)
        wait_until(lambda: first.filter(state=State.LOST).exists(), what="attempt 1 lost")
    finally:
        cluster.scontrol("update", "partitionname=trainyard", "nodes=gpu0[1-4]")
        with contextlib.suppress(subprocess.CalledProcessError):
            cluster.scontrol("update", "nodename=gpu05", "state=resume")
    first = first.get()
    assert first.platform_fault  # not billed
    assert f"Slurm job {first.external_id} ended NODE_FAIL" in first.reason
    job = Job.objects.get(pk=job.pk)
    assert job.attempt == 2  # placed again as attempt 2, its retries untouched
    events = job.events.values_list("to_state", "reason")
    assert any(to == "resource_wait" and "was lost with node gpu05" in r for to, r in events)
    job_stop(job=job)
