"""Slurm places the jobs of a model only it serves, end to end on the dev cluster: the
pass admits and submits them without a node, Slurm starts them where it likes, their
node and cards are recorded; the look-ahead keeps Trainyard's order (fair share) in
charge of who enters Slurm's queue (jobs/scheduler/lookahead.py, slurm/placed.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from jobs.execution.replica.folder import AttemptFolder
from jobs.execution.slurm import cli, submit
from jobs.execution.slurm.submit import PLAN
from jobs.lifecycle.pass_requests import request_pass
from jobs.models import Job, JobEvent, Replica, ReplicaAttempt
from jobs.scheduler import run_pass
from jobs.services.stop import job_stop
from resources.models import Allocation, Node
from resources.services import node_set_state
from tests.agent_support import attempts_of, wait_for_state
from tests.factories import GpuModelFactory, UserFactory
from tests.support.waiting import wait_until
from tests.test_agent_distributed import all_reduce_job, sums
from tests.test_fair_share import used
from tests.test_slurm_held_outside import outside  # noqa: F401 (a fixture)
from tests.test_slurm_queue_mirror import cancel, foreign_job
from tests.test_slurm_run import WAIT, gpu_job

pytestmark = pytest.mark.integration


def test_a_job_runs_where_slurm_places_it_and_holds_what_slurm_gave(slurm):
    job = gpu_job('echo "cards $CUDA_VISIBLE_DEVICES"; sleep 3', gpu_count=2)

    job = wait_for_state(job, Job.State.RUNNING, slurm.worker, timeout=WAIT)

    [attempt] = attempts_of(job)
    plan = AttemptFolder.of(attempt).read(PLAN)
    assert not [arg for arg in plan["argv"] if arg.startswith("--nodelist")]
    assert "--gres=gpu:v100:2" in plan["argv"]
    replica = Replica.objects.get(job=job)
    assert replica.node in slurm.nodes and attempt.node == replica.node
    assert len(replica.card_indices) == 2  # Slurm's own indices ($SLURM_JOB_GPUS)
    assert Allocation.objects.get(replica=replica).gpu_count == 2
    node = replica.node
    cards = ", ".join(map(str, replica.card_indices))
    started = f"Slurm started it on {node.name} (cards {cards})"
    assert JobEvent.objects.filter(job=job, reason=started).exists()
    submitted = "Submitted to Slurm, which picks the V100 node and cards"
    assert JobEvent.objects.filter(job=job, reason=submitted).exists()

    job = wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert not Allocation.objects.filter(replica=replica).exists()


def test_the_lookahead_lets_a_light_users_job_overtake_a_heavy_users_fifty(
    slurm, slurm_cluster_alone, settings
):
    """Plain Slurm (FIFO here) would start it last. Through Trainyard, at most the
    look-ahead (two per card of the partition's 16) of the heavy user's jobs wait inside Slurm,
    and inside it the light user's job goes first (``slurm/priority.py``): it waits
    for the cards of those running when it entered, no more.

    The heavy jobs take two cards each: eight run at once, so the light job's place
    does not hang on launch order. Jobs Slurm starts in one scheduling cycle begin in
    whatever order their nodes launch them; with one-card jobs the light one was one
    of 16 such and, under load, began behind 13 of them (CI saw 21 later, not 25)."""
    heavy, light = UserFactory(username="heavy"), UserFactory(username="light")
    # Used elsewhere (a V100 node of its own would make V100 a model Trainyard places).
    used(heavy, GpuModelFactory(name="P4"), hours=500, ago=timedelta(hours=2))
    heavies = [gpu_job("sleep 2", owner=heavy, gpu_count=2) for _ in range(50)]
    wait_until(
        lambda: Job.objects.filter(pk__in=[j.pk for j in heavies], state="starting").count() >= 16,
        what="the heavy user's jobs fill the look-ahead",
        timeout=WAIT,
    )
    light_job = gpu_job("sleep 2", owner=light)
    request_pass()  # as a submission through the API or the form asks for one

    light_job = wait_for_state(light_job, Job.FINAL_STATES, slurm.worker, timeout=WAIT)

    assert light_job.state == Job.State.SUCCEEDED, light_job.state_reason
    for job in heavies:
        wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
    # When each replica's first phase began (its own note), not when Trainyard heard of it.
    began = dict(
        ReplicaAttempt.objects.filter(replica__job__in=[*heavies, light_job]).values_list(
            "replica__job_id", "started_at"
        )
    )
    light_began = began.pop(light_job.pk)
    later = sum(1 for moment in began.values() if moment > light_began)
    assert later >= 25, f"only {later} of the heavy user's 50 jobs started after it"


def test_a_job_whose_nodes_all_close_before_its_sbatch_waits_again_instead_of_failing(slurm):
    """Admitted into Slurm's look-ahead, then every V100 node closed by Trainyard (an
    admin's drain, or keepers that could not isolate) before its ``sbatch`` ran: Slurm
    refuses a request that excludes every node it has. The platform closed them, not
    the job asked the impossible: it goes back to the queue, its retries untouched,
    and waits for a node to open (a burst on a fresh site lost 200 jobs this way)."""
    # One transaction from the job's submission on: no other pass (beat's, or one the
    # tracking worker asks for) sees the job waiting, nor admitted with its nodes still
    # open, nor without the attempt the launch makes.
    with transaction.atomic():
        job = gpu_job("true", max_retries=0)
        run_pass()  # admitted: starting, but nothing launches it
        # What the launch does before it hands the attempt to the Slurm executor.
        replica = Replica.objects.get(job=job)
        attempt = ReplicaAttempt.objects.create(replica=replica, number=1, node=replica.node)
        assert attempt.node is None  # Slurm places it
        for node in slurm.nodes:
            node_set_state(node=node, state=Node.State.DRAINING, reason="Maintenance")

    submit.submit_attempts([attempt.pk])

    job = Job.objects.get(pk=job.pk)
    assert job.state == Job.State.RESOURCE_WAIT, job.state_reason
    assert job.attempt == 2
    [attempt] = attempts_of(job)[:1]
    assert attempt.platform_fault and "Requested node configuration" in attempt.reason


def test_a_job_slurm_placed_is_stopped_and_gives_back_its_cards(slurm):
    """TERM through its keeper, then scancel, and the cards Slurm gave it given back."""
    runner = gpu_job("echo started\nsleep 600", gpu_count=1)
    runner = wait_for_state(runner, Job.State.RUNNING, slurm.worker, timeout=WAIT)
    replica = Replica.objects.get(job=runner)
    assert replica.node is not None

    job_stop(job=runner, reason="Enough for today")

    runner = wait_for_state(runner, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
    assert (runner.state, runner.state_reason) == (Job.State.STOPPED, "Enough for today")
    assert not Allocation.objects.filter(replica=replica).exists()
    [attempt] = attempts_of(runner)
    wait_until(
        lambda: slurm.jobs()[attempt.external_id].state in {"CANCELLED", "FAILED", "COMPLETED"},
        what="the Slurm job to end",
    )


def test_a_gang_slurm_places_waits_whole_then_starts_together_and_all_reduces(
    slurm,
    outside,  # noqa: F811
):
    """Two replicas of 4 cards while jobs outside Trainyard hold three nodes' cards: one
    Slurm job of 2 nodes waits in Slurm's queue with nothing of it started; when they
    free, Slurm starts both replicas at once on the nodes it picks, and they find
    replica 0's node for their rendezvous."""
    foreign = [outside(node.name, cards=4, cpus=1, memory_mib=1024) for node in slurm.nodes[:3]]
    job = all_reduce_job()
    Job.objects.filter(pk=job.pk).update(
        resource_kind="gpu", gpu_model=slurm.nodes[0].gpu_model, gpu_count=4, memory_mib=4096
    )
    request_pass()

    waiting = wait_until(
        lambda: [a for a in attempts_of(job) if a.external_id] or None,
        what="the gang in Slurm",
        timeout=WAIT,
    )
    assert len(waiting) == 2 and len({a.external_id for a in waiting}) == 1  # one Slurm job
    slurm_id = waiting[0].external_id
    wait_until(
        lambda: "the resources it needs are in use" in Job.objects.get(pk=job.pk).state_reason,
        what="Slurm's reason on the job",
        timeout=WAIT,
    )
    assert slurm.jobs()[slurm_id].state == "PENDING"
    assert [r.node for r in Replica.objects.filter(job=job)] == [None, None]
    plan = AttemptFolder.of(waiting[0]).read(PLAN)
    assert "--nodes=2" in plan["argv"] and "--gres=gpu:v100:4" in plan["argv"]
    assert not [arg for arg in plan["argv"] if arg.startswith("--nodelist")]

    cli.cancel(foreign)
    job = wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=WAIT)

    assert job.state == Job.State.SUCCEEDED, job.state_reason
    attempts = attempts_of(job)
    nodes = [attempt.node for attempt in attempts]
    assert None not in nodes and len(set(nodes)) == 2, nodes
    first, second = sorted(attempt.started_at for attempt in attempts)
    assert second - first < timedelta(seconds=5)  # one allocation: together
    assert sums(job, nodes) == ["0 2 3.0", "1 2 3.0"]


def test_a_star_models_job_runs_on_the_member_trainyard_chose(slurm):
    """``*GPU`` = V100 (the dev cluster's nodes) and P4 (no node): Slurm places it among
    the V100 nodes, with the V100 gres, and the replica keeps the member it went for."""
    v100 = slurm.nodes[0].gpu_model
    star = GpuModelFactory(name="*GPU")
    star.members.set([v100, GpuModelFactory(name="P4")])
    job = gpu_job("sleep 1", gpu_model=star)

    job = wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=WAIT)

    assert job.state == Job.State.SUCCEEDED, job.state_reason
    [attempt] = attempts_of(job)
    assert "--gres=gpu:v100:1" in AttemptFolder.of(attempt).read(PLAN)["argv"]
    replica = Replica.objects.get(job=job)
    assert replica.slurm_model == v100 and replica.node in slurm.nodes


@pytest.mark.parametrize("slurm_lookahead", [4])
def test_a_job_behind_the_lookahead_expects_to_start_after_the_jobs_inside_slurm(
    slurm, slurm_cluster_alone
):
    """One V100 node open to Trainyard (a look-ahead of 4, one per card), held whole by a job
    outside Trainyard for 5 more minutes: 4 jobs enter Slurm's queue and get Slurm's own
    estimates (after the outside job's end); the fifth waits its turn in Trainyard's queue
    and expects to start after the last of them (Slurm's order: same nice, submitted
    later), no later than one run (10 minutes) after it."""
    *closed, node = slurm.nodes
    for other in closed:
        node_set_state(node=other, state=Node.State.DRAINING, reason="Not for this test")
    foreign = foreign_job(slurm, node.name, minutes=5)
    try:
        jobs = [gpu_job("sleep 600", max_runtime_minutes=10) for _ in range(5)]
        request_pass()
        inside, held = jobs[:4], jobs[4]

        def estimates() -> list:
            return [Job.objects.get(pk=job.pk).estimated_start for job in inside]

        slurm_starts = wait_until(
            lambda: all(estimates()) and estimates(), what="Slurm's estimates", timeout=WAIT
        )
        last = max(slurm_starts)
        assert last > timezone.now() + timedelta(minutes=3)  # after the outside job's end

        def expected() -> datetime | None:
            start = Job.objects.get(pk=held.pk).estimated_start
            return start if start and last <= start <= last + timedelta(minutes=10) else None

        wait_until(expected, what=f"the held job's estimate after {last}", timeout=WAIT)
        held = Job.objects.get(pk=held.pk)
        assert held.state == Job.State.RESOURCE_WAIT
        assert held.state_reason.startswith("Waiting its turn to enter Slurm's queue: 4 V100")
    finally:
        cancel(slurm, foreign)
