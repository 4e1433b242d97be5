"""A requeued job goes back to the nodes that hold its node-local checkpoints
(jobs/scheduler/checkpoints.py), or says that it starts without them."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.models import Job, Replica
from jobs.scheduler import run_pass
from tests.factories import GpuModelFactory, JobFactory, NodeFactory
from tests.scheduling import assert_invariants, fresh

pytestmark = pytest.mark.django_db


@pytest.fixture
def nodes():
    v100 = GpuModelFactory(name="V100")
    exact = NodeFactory(name="exact", gpu_model=v100, gpu_count=1)  # best fit for 1 card
    roomy = NodeFactory(name="roomy", gpu_model=v100, gpu_count=2)
    return v100, exact, roomy


def requeued(v100, ran_on) -> Job:
    """A job that ran on ``ran_on`` and waits again (preempted, retried or lost)."""
    job = JobFactory(gpu_model=v100, state=Job.State.RESOURCE_WAIT, attempt=2)
    Replica.objects.create(job=job, index=0, node=ran_on)
    return job


def test_a_requeued_job_starts_again_where_its_checkpoint_is(nodes):
    v100, exact, roomy = nodes
    job = requeued(v100, ran_on=roomy)

    run_pass()

    assert Replica.objects.get(job=job).node == roomy  # not the best fit: its checkpoint
    assert "without its checkpoint" not in fresh(job).state_reason
    assert_invariants()


def test_elsewhere_when_its_node_is_full_and_says_it_starts_without_it(nodes):
    v100, exact, roomy = nodes
    JobFactory(gpu_model=v100, gpu_count=2)  # fills roomy
    run_pass()
    job = requeued(v100, ran_on=roomy)

    run_pass()

    assert Replica.objects.get(job=job).node == exact
    assert fresh(job).state_reason == (
        "Starting on exact (cards 0); without its checkpoint, which stays on roomy "
        "(not free for it now)"
    )


def test_no_preference_when_checkpoints_are_on_shared_storage(nodes, settings, tmp_path: Path):
    settings.TRAINYARD_CHECKPOINT_ROOT = tmp_path
    v100, exact, roomy = nodes
    job = requeued(v100, ran_on=roomy)

    run_pass()

    assert Replica.objects.get(job=job).node == exact  # best fit: the checkpoint follows
    assert "without its checkpoint" not in fresh(job).state_reason


def on_slurm(v100, *nodes) -> None:
    """These nodes are Slurm's; a local-agent node (down) serves the model too, so
    Trainyard still places its jobs (``lookahead.py``) rather than Slurm."""
    for node in nodes:
        node.executor = "slurm"
        node.save(update_fields=["executor"])
    NodeFactory(name="local-down", gpu_model=v100, gpu_count=1, state="down")


def test_no_preference_for_a_job_that_ran_on_slurm(nodes):
    """A Slurm attempt's checkpoint lies in the cluster's shared folder (``_slurm``), so
    it follows the job to whichever Slurm node it starts on next."""
    v100, exact, roomy = nodes
    on_slurm(v100, exact, roomy)
    job = requeued(v100, ran_on=roomy)

    run_pass()

    assert Replica.objects.get(job=job).node == exact  # best fit, as for a new job
    assert "without its checkpoint" not in fresh(job).state_reason


def test_a_job_that_ran_on_slurm_says_nothing_of_its_checkpoint_when_placed_elsewhere(nodes):
    v100, exact, roomy = nodes
    on_slurm(v100, exact, roomy)
    JobFactory(gpu_model=v100, gpu_count=2)  # fills roomy
    run_pass()
    job = requeued(v100, ran_on=roomy)

    run_pass()

    assert Replica.objects.get(job=job).node == exact
    assert fresh(job).state_reason == "Starting on exact (cards 0)"
