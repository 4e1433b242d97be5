"""A job of a ``*`` model whose members only Slurm serves goes to Slurm too: Trainyard
picks the member when it admits it (as Kueue assigns a flavor: its quota charged to that
member from then on), and Slurm places it among that member's nodes
(jobs/scheduler/lookahead.py ``_member``, slurm/submit.py)."""

from __future__ import annotations

import pytest

from jobs.execution.slurm import eligible, submit
from jobs.models import Job, Replica
from jobs.quota_usage import quota_holdings_for
from jobs.scheduler import run_pass
from resources.models import Node
from tests.factories import GpuModelFactory, JobFactory, NodeFactory, QuotaFactory, UserFactory
from tests.scheduling import assert_invariants, fresh

pytestmark = pytest.mark.django_db


@pytest.fixture
def star():
    """``*V100``: V100-16G on two Slurm nodes of 4 cards, V100-32G on one."""
    small, large = GpuModelFactory(name="V100-16G"), GpuModelFactory(name="V100-32G")
    for name, model in (("gpu01", small), ("gpu02", small), ("gpu03", large)):
        NodeFactory(name=name, gpu_model=model, gpu_count=4, executor=Node.Executor.SLURM)
    aggregate = GpuModelFactory(name="*V100")
    aggregate.members.set([small, large])
    return aggregate


def submitted_for(job: Job) -> list[str | None]:
    replicas = Replica.objects.filter(job=job).order_by("index")
    return [r.slurm_model.name if r.slurm_model else None for r in replicas]


def test_a_star_job_goes_to_slurm_for_the_member_with_the_most_free_cards(star):
    job = JobFactory(gpu_model=star, gpu_count=2)

    run_pass()

    assert fresh(job).state_reason == (
        "Submitted to Slurm, which picks the V100-16G node and cards"
    )
    assert submitted_for(job) == ["V100-16G"]
    assert Replica.objects.get(job=job).node is None
    assert_invariants()


def test_a_member_the_owners_quota_refuses_is_never_chosen(star):
    owner = UserFactory()
    QuotaFactory(user=owner, gpu_model=star.members.get(name="V100-16G"), limit=0)
    job = JobFactory(owner=owner, gpu_model=star, gpu_count=2)

    run_pass()

    assert submitted_for(job) == ["V100-32G"]
    [holding] = quota_holdings_for(user_ids=[owner.pk])[owner.pk]
    assert holding.vector.get("gpu:V100-32G") == 2
    assert holding.vector.get("gpu:V100-16G", 0) == 0


def test_when_one_members_lookahead_is_full_the_next_member_takes_the_job(star, settings):
    settings.TRAINYARD_SLURM_LOOKAHEAD = 1
    first, second, third = (JobFactory(gpu_model=star, gpu_count=1) for _ in range(3))

    run_pass()

    assert submitted_for(first) == ["V100-16G"] and submitted_for(second) == ["V100-32G"]
    assert fresh(third).state == Job.State.RESOURCE_WAIT
    assert "Waiting its turn to enter Slurm's queue" in fresh(third).state_reason


def test_a_star_model_a_local_node_serves_in_part_is_placed_by_trainyard(star):
    NodeFactory(name="local", gpu_model=star.members.get(name="V100-32G"), gpu_count=4)
    job = JobFactory(gpu_model=star, gpu_count=1)

    run_pass()

    assert Replica.objects.get(job=job).node is not None
    assert submitted_for(job) == [None]


def test_the_sbatch_request_is_for_the_member_and_keeps_off_other_models_untyped(star):
    small = star.members.get(name="V100-16G")
    job = JobFactory(gpu_model=star, gpu_count=2)
    request = submit._request(job, small.pk)
    assert request.gres == "gpu:2"  # no Slurm type maps to V100-16G yet
    assert eligible.avoided_nodes(request, small.pk) == ["gpu03"]

    small.slurmgputype_set.create(slurm_type="v100_16g")
    request = submit._request(job, small.pk)
    assert request.gres == "gpu:v100_16g:2"
    assert eligible.avoided_nodes(request, small.pk) == []  # the type keeps it on its nodes
