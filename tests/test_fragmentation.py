"""Fragmentation-aware placement (``jobs/scheduler/fragmentation.py``) on hand-built nodes.

The cases follow "Beware of Fragmentation" (USENIX ATC '23): a node's free GPU is
fragmented for a shape of the workload where that shape cannot use it, and a replica
goes where the fragmentation grows least. In memory only: no database.
"""

from __future__ import annotations

import random
from collections import Counter
from statistics import median_low

from jobs.scheduler.cluster import CardState, Cluster, NodeState, Typical
from jobs.scheduler.fragmentation import FEW_STALE, Workload, known_fragmentation
from jobs.scheduler.node_arrays import NodeArrays
from jobs.scheduler.placement import Outcome, Shape, place
from resources.catalog import ModelCatalog
from resources.models import ResourceKind

CARD_MIB = 16 * 1024
MODELS = ("V100",)


def node(pk: int, *, cards: list[int], cores: int, memory_gib: int = 256) -> NodeState:
    """A V100 node whose cards have these free compute percentages."""
    states = {
        index: CardState(index, pk * 10 + index, CARD_MIB, free, CARD_MIB * free // 100)
        for index, free in enumerate(cards)
    }
    return NodeState(pk, f"n{pk}", "V100", cores * 1000, memory_gib * 1024, 1000, states)


def whole(cards: int = 1, cores: int = 4, replicas: int = 1) -> Shape:
    return Shape(ResourceKind.GPU, MODELS, cards, 0, 0, cores * 1000, 8 * 1024, 10, replicas)


def share(percent: int, cores: int = 2) -> Shape:
    memory = CARD_MIB * percent // 100
    return Shape(ResourceKind.VGPU, MODELS, 1, percent, memory, cores * 1000, 4 * 1024, 10, 1)


def cpu_only(cores: int) -> Shape:
    return Shape(ResourceKind.CPU, None, 0, 0, 0, cores * 1000, 4 * 1024, 10, 1)


def cluster(*nodes: NodeState, workload: list[Shape] | None = None) -> Cluster:
    # Best fit's own guess of what a card needs beside it, 1 core and 1 GiB, is no help
    # here: only the workload tells what the cards' next jobs need.
    result = Cluster(list(nodes), ModelCatalog(), Typical(1000, 1024))
    result.workload = Workload.of(workload) if workload else None
    return result


def chosen(result: Cluster, shape: Shape) -> list[tuple[str, tuple[int, ...]]]:
    outcome = place(result, shape)
    assert outcome.uses is not None
    names = {n.pk: n.name for n in result.nodes.values()}
    return [(names[use.node_pk], tuple(c.index for c in use.cards)) for use in outcome.uses]


def test_a_cpu_job_goes_where_it_leaves_the_cards_their_cpu_not_where_the_cpu_fits_best():
    # Best fit takes the tighter CPU (n1), leaving its two free cards 2 cores: no 1-card
    # job of the workload (4 cores) could use them. n2 keeps 26 cores beside its cards.
    nodes = (node(1, cards=[100, 100], cores=8), node(2, cards=[100, 100], cores=32))
    assert chosen(cluster(*nodes), cpu_only(6)) == [("n1", ())]
    workload = [whole()] * 10
    assert chosen(cluster(*nodes, workload=workload), cpu_only(6)) == [("n2", ())]


def test_a_share_goes_to_the_card_it_leaves_usable_for_the_workloads_shares():
    # The paper's case: a 20 % share on the card with 60 % free (best fit: the tightest)
    # leaves 40 %, too little for the 50 % shares that keep arriving; on the card with
    # 70 % free it leaves exactly 50 %.
    nodes = (node(1, cards=[60], cores=16), node(2, cards=[70], cores=16))
    assert chosen(cluster(*nodes), share(20)) == [("n1", (0,))]
    workload = [share(50)] * 10 + [whole()] * 10
    assert chosen(cluster(*nodes, workload=workload), share(20)) == [("n2", (0,))]


def test_fragmentation_is_the_free_compute_each_shape_cannot_use_weighted_by_its_count():
    # The rarest shape, one 20 % share, is left out (``COVERAGE``).
    workload = Workload.of([share(50)] * 2 + [whole()] * 2 + [share(20)])
    # Cards 100 % and 30 % free, 16 cores: the whole-card shape can use the 100 (not the
    # 30); the 50 % share can use the 100 (not the 30).
    assert workload.fragmentation(node(1, cards=[100, 30], cores=16)) == 2 * 30 + 2 * 30
    # Too few cores, or too little memory, for either: all 130 % is fragmented for both.
    assert workload.fragmentation(node(2, cards=[100, 30], cores=1)) == 4 * 130
    assert workload.fragmentation(node(4, cards=[100, 30], cores=16, memory_gib=2)) == 4 * 130
    # Nothing free, nothing fragmented.
    assert workload.fragmentation(node(3, cards=[0, 0], cores=16)) == 0


def test_a_gang_takes_the_nodes_whose_fragmentation_grows_least_and_never_one_too_small():
    # n3's free card lacks the CPU for the replica (never chosen); n1 would be left with
    # 1 core beside a free card, n2 and n4 keep theirs usable.
    nodes = (
        node(1, cards=[100, 100], cores=5),
        node(2, cards=[100, 100], cores=40),
        node(3, cards=[100, 100], cores=3),
        node(4, cards=[100, 100], cores=40),
    )
    result = cluster(*nodes, workload=[whole()] * 10)
    assert sorted(chosen(result, whole(cores=4, replicas=2))) == [("n2", (0,)), ("n4", (0,))]


def test_nothing_is_placed_where_it_does_not_fit_whatever_the_fragmentation():
    nodes = (node(1, cards=[100, 40], cores=1), node(2, cards=[30, 30], cores=64))
    result = cluster(*nodes, workload=[share(50)] * 10 + [whole()] * 5)
    assert place(result, whole(cores=4)).uses is None  # n1: too few cores; n2: no whole card
    assert place(result, share(50)).uses is None  # no card with 50 % and the cores


def test_the_workload_keeps_the_common_gpu_shapes_and_leaves_out_cpu_only_ones():
    shapes = [share(50)] * 45 + [whole()] * 40 + [whole(cards=8)] * 15 + [cpu_only(4)] * 50
    workload = Workload.of(shapes)
    # Half of the 100 GPU replicas (``COVERAGE``) takes the two commonest shapes.
    assert [(d.cards, d.percent, d.count) for d in workload.demands] == [(1, 50, 45), (1, 100, 40)]
    assert Workload.of([cpu_only(4)] * 3) is None


def test_scoring_every_node_at_once_chooses_as_scoring_them_one_by_one():
    # The array path (``fragment_placement``) against the scalar one (``Workload.grows``
    # over every fitting node, which a reservation's view takes), on random clusters.
    rng = random.Random(7)
    for _trial in range(40):
        nodes = [
            node(
                pk,
                cards=[
                    rng.choice([0, 0, 30, 50, 70, 100, 100]) for _ in range(rng.choice([2, 4, 8]))
                ],
                cores=rng.choice([2, 6, 16, 40]),
                memory_gib=rng.choice([8, 64, 256]),
            )
            for pk in range(1, 13)
        ]
        workload = [share(rng.choice([25, 50])) for _ in range(5)] + [
            whole(cards=rng.choice([1, 2, 4]), cores=rng.choice([2, 4, 8])) for _ in range(6)
        ]
        for shape in (whole(), whole(cards=2, replicas=2), share(30), share(60), cpu_only(3)):
            arrays = cluster(*nodes, workload=workload)
            one_by_one = cluster(*nodes, workload=workload)
            assert place(arrays, shape) == place(one_by_one, shape, view=lambda n: n), shape


def test_scores_kept_between_placements_choose_as_scoring_afresh_each_time():
    # A pass places many replicas on one cluster: what fragment_placement keeps per shape
    # must follow every allocation and release, with and without a reservation's view.
    rng = random.Random(3)
    nodes = [
        node(pk, cards=[100] * rng.choice([2, 4, 8]), cores=rng.choice([8, 16, 40]))
        for pk in range(1, 16)
    ]
    workload = [share(rng.choice([25, 50])) for _ in range(6)] + [whole()] * 6
    kept = cluster(*nodes, workload=workload)
    shapes = [whole(), whole(cards=2), share(30), share(60), cpu_only(3), whole(replicas=2)]
    placed = []
    for step in range(120):
        shape = rng.choice(shapes)
        view = None
        if step % 7 == 0:
            held = rng.randrange(1, 16)

            def view(state: NodeState, held=held) -> NodeState:
                if state.pk != held:
                    return state
                narrowed = state.copy()
                narrowed.cpu_free = min(narrowed.cpu_free, 2000)
                return narrowed

            view.nodes = [held]
        fresh = cluster(*(n.copy() for n in kept.nodes.values()), workload=workload)
        outcome = place(kept, shape, view)
        assert outcome == place(fresh, shape, view or (lambda n: n)), step
        if outcome.uses is not None:
            for use in outcome.uses:
                kept.allocate(use)
                placed.append(use)
        if placed and step % 3 == 0:
            kept.allocate(placed.pop(rng.randrange(len(placed))), sign=-1)


def test_a_reservations_view_is_asked_of_the_nodes_it_names_and_scored_as_it_leaves_them():
    nodes = [node(1, cards=[100, 100], cores=40), node(2, cards=[100, 100, 100], cores=40)]
    workload = [whole()] * 10

    def reserve_n2(keep: int):
        """A view leaving n2 ``keep`` cores (a reservation holds the rest)."""

        def view(state: NodeState) -> NodeState:
            if state.pk != 2:
                return state
            narrowed = state.copy()
            narrowed.cpu_free = keep * 1000
            return narrowed

        return view

    for keep in (2, 4, 6, 40):
        named, asked = reserve_n2(keep), reserve_n2(keep)
        named.nodes = [2]
        at_once = place(cluster(*nodes, workload=workload), whole(cores=4), named)
        one_by_one = place(cluster(*nodes, workload=workload), whole(cores=4), asked)
        assert at_once == one_by_one, keep
    # Only n2 fits, and only without its reservation: refused by it.
    alone = cluster(node(2, cards=[100], cores=40), workload=workload)
    view = reserve_n2(2)
    view.nodes = [2]
    assert place(alone, whole(cores=4), view) == Outcome(None, refused=True)


def test_each_nodes_fragmentation_is_the_same_counted_one_by_one_or_all_at_once():
    rng = random.Random(11)
    nodes = [
        node(
            pk,
            cards=[rng.choice([0, 20, 50, 80, 100]) for _ in range(rng.choice([1, 4, 8]))],
            cores=rng.choice([1, 4, 16]),
            memory_gib=rng.choice([4, 256]),
        )
        for pk in range(1, 41)
    ]
    workload = Workload.of(
        [share(rng.choice([25, 50]), cores=rng.choice([1, 8])) for _ in range(20)]
        + [whole(cards=rng.choice([1, 2, 8]), cores=rng.choice([2, 12])) for _ in range(20)]
    )
    arrays = NodeArrays(nodes)
    assert len(nodes) > FEW_STALE  # all at once
    at_once = known_fragmentation(workload, arrays)
    assert [int(at_once[arrays.row[n.pk]]) for n in nodes] == [
        workload.fragmentation(n) for n in nodes
    ]


def test_a_workload_from_counted_shapes_is_the_workload_of_the_shapes_listed():
    listed = [share(50)] * 3 + [share(50)._replace(memory_mib=9 * 1024)] * 4 + [whole()] * 2
    counted = Counter(listed)
    assert Workload.of(counted).demands == Workload.of(listed).demands
    # Node memory is the median of the jobs', as statistics.median_low has it.
    (share_demand,) = (d for d in Workload.of(counted).demands if not d.whole)
    assert share_demand.node_memory_mib == median_low(s.memory_mib for s in listed[:7])


def test_a_share_goes_where_the_plan_of_the_arrived_shares_packs_it_not_the_tightest_card():
    # 70 % and 30 % shares fill a card together, 45 % ones pair up (``share_packing``). A
    # third 30 % share on a card holding two (40 % free) would leave 10 % that nothing
    # uses, and take the 30 % a 70 % share's card waits for: it opens a whole card
    # instead, though best fit and F both prefer the tighter one.
    workload = [share(70)] * 10 + [share(30)] * 10 + [share(45)] * 10
    nodes = (node(1, cards=[40], cores=16), node(2, cards=[100], cores=16))
    assert chosen(cluster(*nodes), share(30)) == [("n1", (0,))]
    assert chosen(cluster(*nodes, workload=workload), share(30)) == [("n2", (0,))]
    # The same between the cards of one node.
    one = node(1, cards=[40, 100], cores=16)
    assert chosen(cluster(one, workload=workload), share(30)) == [("n1", (1,))]
    # Beside a 70 % share it is on plan, and the tightest: it fills that card.
    nodes = (node(1, cards=[30], cores=16), node(2, cards=[100], cores=16))
    assert chosen(cluster(*nodes, workload=workload), share(30)) == [("n1", (0,))]
