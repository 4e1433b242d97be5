"""Releasing a job gives back its nodes, cards and ports, and lets the queue move on."""

import pytest

from jobs.lifecycle.pass_requests import request_pass
from jobs.lifecycle.release import job_release
from jobs.lifecycle.transitions import job_transition
from jobs.models import Job, JobPort, PortAllocation, Replica
from jobs.scheduler import run_pass
from resources.models import Allocation, CardAllocation, GpuCard, Node
from tests.factories import GpuModelFactory, JobFactory, NodeFactory
from tests.scheduling import assert_invariants, end_job, fresh, run_job, states

pytestmark = pytest.mark.django_db


@pytest.fixture
def v100():
    return GpuModelFactory(name="V100")


def test_release_gives_back_node_columns_cards_and_ports(v100):
    node = NodeFactory(gpu_model=v100, gpu_count=4)
    job = JobFactory(gpu_model=v100, gpu_count=2)
    JobPort.objects.create(job=job, port=8888)
    share = JobFactory(
        resource_kind="vgpu",
        gpu_model=v100,
        gpu_count=1,
        vgpu_compute_percent=25,
        vgpu_memory_mib=2048,
    )
    run_pass()
    assert states([job, share]) == [Job.State.STARTING, Job.State.STARTING]

    assert job_release(job=job) == 1
    assert job_release(job=share) == 1

    node.refresh_from_db()
    assert (node.gpu_allocated, node.cpu_allocated_milli, node.memory_allocated_mib) == (0, 0, 0)
    assert node.storage_allocated_gib == 0
    assert set(
        GpuCard.objects.values_list("compute_allocated_percent", "memory_allocated_mib")
    ) == {(0, 0)}
    assert not Allocation.objects.exists()
    assert not CardAllocation.objects.exists()
    assert not PortAllocation.objects.exists()
    # Where the job ran stays on record.
    assert list(Replica.objects.filter(job=job).values_list("node__name", "card_indices")) == [
        (node.name, [0, 1])
    ]


def test_a_second_release_frees_nothing_more(v100):
    node = NodeFactory(gpu_model=v100)
    first, second = JobFactory(gpu_model=v100), JobFactory(gpu_model=v100)
    run_pass()

    assert job_release(job=first) == 1
    assert job_release(job=first) == 0

    node.refresh_from_db()
    assert node.gpu_allocated == 1
    assert fresh(second).state == Job.State.STARTING
    assert Allocation.objects.filter(replica__job=second).exists()


def test_release_schedules_a_pass_after_commit(v100, django_capture_on_commit_callbacks):
    NodeFactory(gpu_model=v100)
    job = JobFactory(gpu_model=v100)
    run_pass()

    with django_capture_on_commit_callbacks() as callbacks:
        job_release(job=job)

    assert request_pass in callbacks


def test_the_next_job_starts_when_the_running_one_ends(v100):
    NodeFactory(gpu_model=v100)
    first = JobFactory(gpu_model=v100, gpu_count=8)
    second = JobFactory(gpu_model=v100, gpu_count=8)
    run_pass()
    run_job(first)
    assert states([first, second]) == [Job.State.RUNNING, Job.State.RESOURCE_WAIT]

    end_job(first)
    run_pass()

    assert states([first, second]) == [Job.State.SUCCEEDED, Job.State.STARTING]
    assert_invariants()


def test_a_job_sent_back_to_wait_is_placed_again_keeping_its_attempt(v100):
    lost = NodeFactory(name="gpu01", gpu_model=v100)
    NodeFactory(name="gpu02", gpu_model=v100, state=Node.State.DOWN)
    job = JobFactory(gpu_model=v100, gpu_count=2)
    run_pass()
    replica = Replica.objects.get(job=job)
    assert replica.node == lost

    # What the execution engine does when a node is lost: release, wait again, next attempt.
    Node.objects.filter(pk=lost.pk).update(state=Node.State.DOWN)
    Node.objects.filter(name="gpu02").update(state=Node.State.READY)
    job = fresh(job)
    job_release(job=job)
    job_transition(job=job, to_state=Job.State.RESOURCE_WAIT, reason="node lost", attempt=2)
    run_pass()

    job = fresh(job)
    assert job.state == Job.State.STARTING
    assert job.attempt == 2
    moved = Replica.objects.get(job=job)
    assert (moved.pk, moved.node.name, moved.card_indices) == (replica.pk, "gpu02", [0, 1])
    assert_invariants()
