"""Placement: best fit, card indices, vGPU sharing, gangs, ready nodes, aggregated models."""

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from jobs.models import Job, Replica
from jobs.quota_usage import quota_usage
from jobs.scheduler import run_pass, workload
from jobs.scheduler.pass_load import load_pass
from jobs.scheduler.writes import NodeChanged
from resources.models import CardAllocation, GpuCard, Node, Quota
from resources.services import node_set_state
from tests.factories import GpuModelFactory, JobFactory, NodeFactory, UserFactory
from tests.scheduling import assert_invariants, fresh, states

pytestmark = pytest.mark.django_db


@pytest.fixture
def v100():
    return GpuModelFactory(name="V100")


def placement(job: Job) -> list[tuple[str, list[int]]]:
    return [
        (replica.node.name, replica.card_indices)
        for replica in Replica.objects.filter(job=job).select_related("node").order_by("index")
    ]


def vgpu_job(model, percent: int, memory_gib: int, count: int = 1, **fields) -> Job:
    return JobFactory(
        resource_kind="vgpu",
        gpu_model=model,
        gpu_count=count,
        vgpu_compute_percent=percent,
        vgpu_memory_mib=memory_gib * 1024,
        cpu_milli=1_000,
        memory_mib=1024,
        **fields,
    )


def test_best_fit_keeps_the_whole_node_free_for_the_large_job(v100):
    NodeFactory(name="big", gpu_model=v100, gpu_count=8)
    NodeFactory(name="small", gpu_model=v100, gpu_count=2)
    one = JobFactory(gpu_model=v100, gpu_count=1)
    eight = JobFactory(gpu_model=v100, gpu_count=8, cpu_milli=12_000)

    run_pass()

    assert placement(one) == [("small", [0])]
    assert placement(eight) == [("big", list(range(8)))]
    assert_invariants()


def test_cards_are_given_by_index_and_held_in_rows_and_columns(v100):
    node = NodeFactory(name="gpu01", gpu_model=v100, gpu_count=4)
    first = JobFactory(gpu_model=v100, gpu_count=2)
    second = JobFactory(gpu_model=v100, gpu_count=1)

    run_pass()

    assert placement(first) == [("gpu01", [0, 1])]
    assert placement(second) == [("gpu01", [2])]
    node.refresh_from_db()
    assert node.gpu_allocated == 3
    assert node.cpu_allocated_milli == 24_000
    card = GpuCard.objects.get(node=node, index=1)
    assert (card.compute_allocated_percent, card.memory_allocated_mib) == (100, 16 * 1024)
    assert CardAllocation.objects.filter(allocation__replica__job=first).count() == 2
    assert fresh(first).state_reason == "Starting on gpu01 (cards 0, 1)"
    assert fresh(first).attempt == 1
    assert_invariants()


def test_virtual_gpus_share_a_card_while_compute_stays_within_100_percent(v100):
    NodeFactory(name="gpu01", gpu_model=v100, gpu_count=1)
    jobs = [vgpu_job(v100, percent=40, memory_gib=4) for _ in range(3)]

    run_pass()

    assert states(jobs) == [Job.State.STARTING, Job.State.STARTING, Job.State.RESOURCE_WAIT]
    assert GpuCard.objects.get().compute_allocated_percent == 80
    assert fresh(jobs[2]).state_reason == (
        "Waiting for resources: needs a node with 1 V100 card with 40% compute and "
        "4 GiB of card memory free; none has them"
    )
    assert_invariants()


def test_virtual_gpus_share_a_card_only_while_its_memory_lasts(v100):
    NodeFactory(gpu_model=v100, gpu_count=1)
    first = vgpu_job(v100, percent=30, memory_gib=10)
    second = vgpu_job(v100, percent=30, memory_gib=10)

    run_pass()

    assert states([first, second]) == [Job.State.STARTING, Job.State.RESOURCE_WAIT]
    assert GpuCard.objects.get().memory_allocated_mib == 10 * 1024


def test_a_share_packs_onto_the_card_already_in_use(v100):
    NodeFactory(name="gpu01", gpu_model=v100, gpu_count=2)
    first = vgpu_job(v100, percent=50, memory_gib=4)
    second = vgpu_job(v100, percent=50, memory_gib=4)

    run_pass()

    assert placement(first) == [("gpu01", [0])]
    assert placement(second) == [("gpu01", [0])]


def test_a_whole_card_job_never_takes_a_shared_card(v100):
    NodeFactory(name="gpu01", gpu_model=v100, gpu_count=2)
    share = vgpu_job(v100, percent=10, memory_gib=1)
    whole = JobFactory(gpu_model=v100, gpu_count=2)

    run_pass()

    assert fresh(share).state == Job.State.STARTING
    assert fresh(whole).state == Job.State.RESOURCE_WAIT
    assert fresh(whole).state_reason == (
        "Waiting for resources: needs a node with 2 free V100 cards; none has them"
    )


def test_several_virtual_gpus_of_one_replica_go_on_distinct_cards(v100):
    NodeFactory(name="gpu01", gpu_model=v100, gpu_count=2)
    job = vgpu_job(v100, percent=60, memory_gib=8, count=2)

    run_pass()

    assert placement(job) == [("gpu01", [0, 1])]
    assert list(GpuCard.objects.values_list("compute_allocated_percent", flat=True)) == [60, 60]


def test_a_distributed_job_starts_on_distinct_nodes_all_at_once_or_not_at_all(v100):
    NodeFactory(name="gpu01", gpu_model=v100)
    down = NodeFactory(name="gpu02", gpu_model=v100, state=Node.State.DOWN)
    gang = JobFactory(
        gpu_model=v100, gpu_count=8, task_mode="distributed", replicas=2, cpu_milli=12_000
    )

    run_pass()

    gang = fresh(gang)
    assert gang.state == Job.State.RESOURCE_WAIT
    assert gang.state_reason == (
        "Waiting for resources: needs 2 nodes with 8 free V100 cards; 1 has them"
    )
    assert not Replica.objects.filter(job=gang).exists()
    assert Node.objects.get(name="gpu01").gpu_allocated == 0

    node_set_state(node=down, state=Node.State.READY)
    run_pass()

    assert fresh(gang).state == Job.State.STARTING
    assert placement(gang) == [("gpu01", list(range(8))), ("gpu02", list(range(8)))]
    assert_invariants()


def test_replicas_of_a_distributed_job_never_share_a_node(v100):
    NodeFactory(gpu_model=v100, gpu_count=8)
    gang = JobFactory(gpu_model=v100, gpu_count=1, task_mode="distributed", replicas=2)

    run_pass()

    assert fresh(gang).state == Job.State.RESOURCE_WAIT
    assert fresh(gang).state_reason == (
        "Waiting for resources: needs 2 nodes with 1 free V100 card; 1 has them"
    )


def test_only_ready_nodes_get_work(v100):
    NodeFactory(gpu_model=v100, state=Node.State.DRAINING)
    NodeFactory(gpu_model=v100, state=Node.State.DOWN)
    job = JobFactory(gpu_model=v100)

    run_pass()

    assert fresh(job).state == Job.State.RESOURCE_WAIT
    assert fresh(job).state_reason == "Waiting for resources: no ready node has V100 cards"


def test_a_cpu_job_goes_to_a_node_with_no_free_cards(v100):
    NodeFactory(name="gpu01", gpu_model=v100)
    NodeFactory(name="cpu01", gpu_model=None, gpu_count=0)
    job = JobFactory(resource_kind="cpu", gpu_model=None, gpu_count=0, cpu_milli=4_000)

    run_pass()

    assert placement(job) == [("cpu01", [])]


def test_reason_names_cpu_when_cards_are_free_but_cores_are_not(v100):
    NodeFactory(gpu_model=v100, cpu_milli=16_000)
    job = JobFactory(gpu_model=v100, gpu_count=1, cpu_milli=24_000)

    run_pass()

    assert fresh(job).state_reason == (
        "Waiting for resources: needs a node with 24 free CPU cores; none has them"
    )


@pytest.fixture
def aggregated():
    small = GpuModelFactory(name="V100-16G", card_memory_gib=16)
    large = GpuModelFactory(name="V100-32G", card_memory_gib=32)
    star = GpuModelFactory(name="*V100", card_memory_gib=16)
    star.members.set([small, large])
    return star, small, large


def test_an_aggregated_request_is_placed_on_any_member(aggregated):
    star, _small, large = aggregated
    NodeFactory(name="big32", gpu_model=large)
    job = JobFactory(gpu_model=star, gpu_count=2)

    run_pass()

    assert placement(job) == [("big32", [0, 1])]
    assert quota_usage(user=job.owner) == {
        "gpu:V100-32G": 2,
        "gpu:*V100": 2,
        "cpu_milli": 12_000,
        "memory_mib": 56 * 1024,
    }


def test_an_aggregated_request_cannot_get_around_a_member_quota(aggregated):
    star, small, large = aggregated
    user = UserFactory(username="ada")
    NodeFactory(name="n16", gpu_model=small)
    NodeFactory(name="n32", gpu_model=large)
    Quota.objects.create(user=user, resource=Quota.Resource.GPU, gpu_model=large, limit=0)
    job = JobFactory(owner=user, gpu_model=star, gpu_count=2)

    run_pass()

    assert placement(job) == [("n16", [0, 1])]


def test_a_quota_on_the_aggregate_counts_member_requests_too(aggregated):
    star, small, _large = aggregated
    user = UserFactory(username="ada")
    NodeFactory(gpu_model=small)
    Quota.objects.create(user=user, resource=Quota.Resource.GPU, gpu_model=star, limit=3)
    direct = JobFactory(owner=user, gpu_model=small, gpu_count=2)
    via_star = JobFactory(owner=user, gpu_model=star, gpu_count=2)

    run_pass()

    assert states([direct, via_star]) == [Job.State.STARTING, Job.State.QUOTA_WAIT]
    assert fresh(via_star).state_reason == (
        "Waiting for quota: needs 2 *V100 cards; your quota is 3 and 2 are in use"
    )


def test_the_database_refuses_an_over_allocation_whatever_the_scheduler_decides(v100):
    node = NodeFactory(gpu_model=v100, gpu_count=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        Node.objects.filter(pk=node.pk).update(gpu_allocated=2)
    card = node.cards.get()
    with pytest.raises(IntegrityError), transaction.atomic():
        GpuCard.objects.filter(pk=card.pk).update(compute_allocated_percent=101)


def test_a_node_that_leaves_ready_during_the_pass_gets_nothing(v100):
    node = NodeFactory(gpu_model=v100)
    job = JobFactory(gpu_model=v100)
    scheduling = load_pass(now=timezone.now())
    node_set_state(node=node, state=Node.State.DOWN, reason="lost")

    with pytest.raises(NodeChanged), transaction.atomic():
        scheduling.run()

    run_pass()
    assert fresh(job).state == Job.State.RESOURCE_WAIT
    assert not Replica.objects.exists()


def test_a_share_goes_where_it_strands_no_card(v100):
    # Both nodes keep one whole card whichever is chosen. The tightest card is gpu-a's
    # (20 % free), but taking it leaves gpu-a's whole card with 4 cores beside it: too
    # few for the 10 cores per card the queue asks for, so that card would be stranded.
    tight = NodeFactory(name="gpu-a", gpu_model=v100, gpu_count=2, cpu_milli=14_000)
    roomy = NodeFactory(name="gpu-b", gpu_model=v100, gpu_count=2, cpu_milli=30_000)
    GpuCard.objects.filter(node=tight, index=0).update(compute_allocated_percent=80)
    GpuCard.objects.filter(node=roomy, index=0).update(compute_allocated_percent=50)
    share = vgpu_job(v100, percent=10, memory_gib=1)
    Job.objects.filter(pk=share.pk).update(cpu_milli=10_000)

    run_pass()

    assert placement(share) == [("gpu-b", [0])]


@pytest.mark.parametrize(("aware", "node"), [(True, "big2"), (False, "big1")])
def test_the_pass_places_by_the_fragmentation_of_the_recent_jobs_workload(
    v100, settings, aware, node
):
    # The last jobs asked for one card and 4 cores. The CPU job fits both V100 nodes; best
    # fit alone (its typical need per card taken from the queue: the P4 job's one core)
    # takes the tighter CPU, big1, leaving its two free cards 2 cores: useless to the
    # jobs that keep coming. The fragmentation they would see takes big2, unless the site
    # turned it off (TRAINYARD_FRAGMENTATION_AWARE=0).
    settings.TRAINYARD_FRAGMENTATION_AWARE = aware
    for _ in range(30):
        JobFactory(gpu_model=v100, gpu_count=1, cpu_milli=4_000, state=Job.State.SUCCEEDED)
    p4 = GpuModelFactory(name="P4")
    NodeFactory(name="big1", gpu_model=v100, gpu_count=2, cpu_milli=14_000)
    NodeFactory(name="big2", gpu_model=v100, gpu_count=2, cpu_milli=40_000)
    NodeFactory(name="small", gpu_model=p4, gpu_count=1, cpu_milli=2_000)
    JobFactory(gpu_model=p4, gpu_count=1, cpu_milli=1_000, memory_mib=1024)
    cpu_job = JobFactory(
        resource_kind="cpu", gpu_model=None, gpu_count=0, cpu_milli=12_000, memory_mib=1024
    )

    run_pass()

    assert placement(cpu_job) == [(node, [])]
    assert_invariants()


def test_the_wait_reason_counts_the_nodes_with_enough_cards_for_a_jobs_shares():
    """``nodes_with_shares``: a node counts when that many of its cards each have the
    share's compute and card memory free; nodes of fewer cards than others too."""
    from jobs.scheduler.cluster import CardState, NodeState
    from jobs.scheduler.placement import Shape
    from jobs.scheduler.reasons import _FreeAmounts

    def node(pk: int, *cards: tuple[int, int]) -> NodeState:
        states = {
            i: CardState(i, 10 * pk + i, 16_384, compute, memory)
            for i, (compute, memory) in enumerate(cards)
        }
        return NodeState(pk, f"gpu{pk:02}", "V100", 8_000, 65_536, 100, states)

    free = _FreeAmounts(
        [
            node(1, (50, 8_192), (50, 8_192)),  # two cards with room
            node(2, (50, 8_192), (30, 8_192)),  # one: too little compute on the other
            node(3, (50, 2_048), (100, 16_384), (100, 16_384), (100, 16_384)),  # three
            node(4, (40, 16_384)),  # one card alone
        ]
    )
    share = Shape("vgpu", ("V100",), 2, 40, 4_096, 1_000, 1_024, 10, 1)

    assert free.nodes_with_shares(share) == 2
    assert free.nodes_with_shares(share._replace(gpu_count=1)) == 4
    assert free.nodes_with_shares(share._replace(vgpu_percent=50)) == 2
    assert free.nodes_with_shares(share._replace(gpu_count=3)) == 1


def test_the_workload_counts_every_waiting_job_beside_the_last_jobs_not_waiting(v100, monkeypatch):
    # A burst waits while later jobs come and go: what is about to be placed is the burst,
    # so its shapes count however many jobs came after it. ``RECENT_JOBS`` (3 here)
    # bounds only the jobs not waiting.
    monkeypatch.setattr(workload, "RECENT_JOBS", 3)
    for _ in range(4):
        vgpu_job(v100, percent=40, memory_gib=4)
    for _ in range(5):
        JobFactory(gpu_model=v100, gpu_count=1, state=Job.State.SUCCEEDED)

    learned = load_pass(now=timezone.now()).cluster.workload

    # The burst's 4 shares before the 3 whole cards counted of the 5 jobs after it (the
    # commonest shapes covering half of the 7 are kept), and the shares' plan is theirs.
    assert [(d.whole, d.percent, d.count) for d in learned.demands] == [(False, 40, 4)]
    assert learned.shares is not None and learned.shares.fits(40, 40)
