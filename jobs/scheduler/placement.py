"""Best-fit placement of one job's replicas on the in-memory cluster.

Best fit keeps whole nodes free for large and distributed jobs: candidates
come in best-fit order (a whole-card request: nodes with the fewest wholly
free cards that still have enough; a virtual GPU: the cards with the least
free compute that still have its share; a CPU job: nodes with the fewest free
cards), and among the first few the one is taken that also strands the fewest
cards — free cards left without the CPU and memory a typical job needs beside
them (see ``fit_score``; measured on the Alibaba trace by
``bench/scheduler_trace.py``). A distributed job gets all its replicas on
distinct nodes at once or nothing (gang).

When the cluster knows its workload (``Cluster.workload``: the pass learns it,
``workload.py``), every fitting node is scored: a share first by whether its card
stays on the plan of how the workload's shares pack (``share_packing.py``,
``off_plan``), then every job by how much the placement fragments the node for the
workload's shapes (FGD, ``fragmentation.py``), best fit breaking ties; all nodes at
once (``fragment_placement.py``) unless the view cannot say which nodes it narrows or
a replica has several virtual GPUs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from resources.models import ResourceKind
from resources.request import ResourceRequest

from .cluster import FULL_CARD_PERCENT, CardUse, Cluster, NodeState, ReplicaUse, Typical

if TYPE_CHECKING:
    from .share_packing import SharePlan

# How many fitting nodes, in best-fit order, are scored before one is chosen:
# enough to avoid stranding cards, few enough for thousands of jobs a pass.
CANDIDATES = 16


class Shape(NamedTuple):
    """One replica's needs, and on which node models (None: any node); a cache key."""

    kind: str
    models: tuple[str | None, ...] | None
    gpu_count: int
    vgpu_percent: int
    vgpu_memory_mib: int
    cpu_milli: int
    memory_mib: int
    storage_gib: int
    replicas: int

    @classmethod
    def of(cls, request: ResourceRequest, models: tuple[str | None, ...] | None) -> Shape:
        """The shape of ``request`` on nodes of ``models``."""
        return cls(
            kind=request.kind,
            models=models,
            gpu_count=request.gpu_count,
            vgpu_percent=request.vgpu_compute_percent or 0,
            vgpu_memory_mib=request.vgpu_memory_mib or 0,
            cpu_milli=request.cpu_milli,
            memory_mib=request.memory_mib,
            storage_gib=request.storage_gib,
            replicas=request.replicas,
        )

    @property
    def is_vgpu(self) -> bool:
        return self.kind == ResourceKind.VGPU

    @property
    def whole_cards(self) -> int:
        return self.gpu_count if self.kind == ResourceKind.GPU else 0

    def admits(self, node: NodeState) -> bool:
        return self.models is None or node.model in self.models


@dataclass(frozen=True, slots=True)
class Outcome:
    """``uses`` (one per replica) when placed; otherwise whether free nodes were refused."""

    uses: tuple[ReplicaUse, ...] | None
    refused: bool = False


# What a job may use of a node: the node itself, or a narrower copy (see backfill). A view
# may name the nodes it can narrow (its attribute ``nodes``): placement then asks it of those
# alone and scores every other node as it is, at once (``fragment_placement``).
View = Callable[[NodeState], NodeState]


def fit_on_node(
    node: NodeState, shape: Shape, shares: SharePlan | None = None
) -> ReplicaUse | None:
    """What one replica would take on ``node`` now, or None if it does not fit; a share
    goes on a card where it stays on ``shares``' plan, if one has room."""
    if (
        not shape.admits(node)
        or node.cpu_free < shape.cpu_milli
        or node.memory_free < shape.memory_mib
        or node.storage_free < shape.storage_gib
    ):
        return None
    cards: tuple[CardUse, ...] = ()
    if shape.whole_cards:
        if node.whole_free < shape.whole_cards:
            return None
        cards = _whole_cards(node, shape.whole_cards)
    elif shape.is_vgpu:
        cards = _shared_cards(node, shape, shares)
        if not cards:
            return None
    return ReplicaUse(
        node.pk, shape.cpu_milli, shape.memory_mib, shape.storage_gib, cards, shape.whole_cards
    )


def _whole_cards(node: NodeState, count: int) -> tuple[CardUse, ...]:
    """The lowest-numbered wholly free cards (the caller checked there are enough)."""
    cards = []
    for card in node.cards.values():
        if card.compute_free == FULL_CARD_PERCENT and card.memory_free_mib == card.memory_mib:
            cards.append(CardUse(card.index, FULL_CARD_PERCENT, card.memory_mib))
            if len(cards) == count:
                break
    return tuple(cards)


def _shared_cards(node: NodeState, shape: Shape, shares: SharePlan | None) -> tuple[CardUse, ...]:
    """Distinct cards with room for each vGPU, tightest first so shares pack (those where
    it stays on plan before the others); () if too few."""
    percent, memory = shape.vgpu_percent, shape.vgpu_memory_mib
    fitting = [
        (
            _off_plan(shares, card.compute_free, percent),
            card.compute_free,
            card.memory_free_mib,
            card.index,
        )
        for card in node.cards.values()
        if card.compute_free >= percent and card.memory_free_mib >= memory
    ]
    if len(fitting) < shape.gpu_count:
        return ()
    chosen = [min(fitting)] if shape.gpu_count == 1 else sorted(fitting)[: shape.gpu_count]
    return tuple(CardUse(index, percent, memory) for *_free, index in sorted(chosen, key=_last))


def _last(item: tuple) -> int:
    return item[-1]


def _off_plan(shares: SharePlan | None, compute_free: int, percent: int) -> bool:
    """Whether a ``percent`` share on a card with ``compute_free`` leaves ``shares``' plan."""
    return shares is not None and bool(shares.leaves(compute_free, percent))


def off_plan(node: NodeState, use: ReplicaUse, shares: SharePlan | None) -> int:
    """How many of ``use``'s shares leave the plan on their cards (0 for whole cards)."""
    if shares is None:
        return 0
    return sum(
        _off_plan(shares, node.cards[card.index].compute_free, card.compute_percent)
        for card in use.cards
        if card.compute_percent < FULL_CARD_PERCENT
    )


def shares_of(cluster: Cluster, shape: Shape) -> SharePlan | None:
    """The plan a replica of ``shape`` is packed by (``Workload.shares_for``), if any."""
    return cluster.workload.shares_for(shape) if cluster.workload is not None else None


def fit_score(node: NodeState, use: ReplicaUse, shape: Shape, typical: Typical) -> tuple:
    """Lower is better: few wholly free cards left, few cards stranded, a tight fit.

    A whole-card job looks first at the wholly free cards it leaves (so whole
    nodes stay free for large jobs); a share or a CPU job first at how many
    free cards it strands without CPU and memory beside them. Then the free
    compute and CPU left (tightest first), and the node name for ties.
    """
    whole_left = node.whole_free
    compute_left = node.compute_free
    for card_use in use.cards:
        whole_left -= node.cards[card_use.index].whole_free
        compute_left -= card_use.compute_percent
    cpu_left, memory_left = node.cpu_free - use.cpu_milli, node.memory_free - use.memory_mib
    stranded = typical.stranded_percent(compute_left, cpu_left, memory_left)
    newly_stranded = stranded - typical.stranded_percent(
        node.compute_free, node.cpu_free, node.memory_free
    )
    if shape.whole_cards:
        return (whole_left, newly_stranded, compute_left, cpu_left, node.name)
    return (newly_stranded, whole_left, compute_left, cpu_left, node.name)


def fragment_keys(cluster: Cluster, node: NodeState, shape: Shape) -> tuple | None:
    """Whether a share leaves the plan (``off_plan``), how much ``F`` of ``node`` grows if
    it takes a replica of ``shape``, then ``fit_score`` without the name; None if it does
    not fit (``fragment_placement``)."""
    shares = shares_of(cluster, shape)
    use = fit_on_node(node, shape, shares)
    if use is None:
        return None
    score = fit_score(node, use, shape, cluster.typical)
    return (off_plan(node, use, shares), cluster.workload.grows(node, use), *score[:-1])


def best_fit_order(cluster: Cluster, shape: Shape) -> Iterator[Iterable[NodeState]]:
    """Groups of candidate nodes, best fit first, each node at most once."""
    if shape.is_vgpu and shape.gpu_count == 1 and shape.models is not None:
        yield _distinct_nodes(cluster.cards_by_compute_free(shape.models, shape.vgpu_percent))
        return
    yield from cluster.nodes_by_whole_free(shape.models, minimum=shape.whole_cards)


def _distinct_nodes(cards: Iterable[tuple[NodeState, object]]) -> Iterator[NodeState]:
    seen: set[int] = set()
    for node, _card in cards:
        if node.pk not in seen:
            seen.add(node.pk)
            yield node


def place(cluster: Cluster, shape: Shape, view: View | None = None) -> Outcome:
    """Choose a node for every replica (distinct nodes), or none at all.

    The first ``CANDIDATES`` fitting nodes in best-fit order are scored
    (``fit_score``) and the best taken. ``view`` narrows what the job may use
    of a node (reservations); ``refused`` tells that some node would have
    fitted without it.
    """
    narrowed = _narrowed(cluster, view)
    if cluster.workload is not None and narrowed is not None and not _several_shares(shape):
        # numpy is imported where a workload is known (the scheduler), not at every start-up.
        from . import fragment_placement

        nodes = fragment_placement.choose(cluster, shape, fragment_keys, narrowed)
        if nodes is None:
            refused = bool(narrowed) and (
                fragment_placement.choose(cluster, shape, fragment_keys) is not None
            )
            return Outcome(None, refused)
        shares = shares_of(cluster, shape)
        return Outcome(tuple(fit_on_node(node, shape, shares) for node in nodes))
    # With a workload, every fitting node: the first 64 in best-fit order alone allocate
    # 94.4 % of the openb trace's GPU, below best fit's 95.0 % (bench/placement_fgd.py).
    wanted = len(cluster.nodes) if cluster.workload is not None else CANDIDATES
    scored, refused = _score_candidates(cluster, shape, view, max(wanted, shape.replicas))
    if len(scored) < shape.replicas:
        return Outcome(None, refused)
    scored.sort(key=lambda item: item[0])
    return Outcome(tuple(use for _score, use in scored[: shape.replicas]))


def _narrowed(cluster: Cluster, view: View | None) -> dict[int, NodeState] | None:
    """The nodes ``view`` narrows, as it leaves them (empty without a view); None when the
    view does not name the nodes it may narrow (``view.nodes``): each must be asked."""
    if view is None:
        return {}
    candidates = getattr(view, "nodes", None)
    if candidates is None:
        return None
    narrowed = {}
    for pk in candidates:
        node = cluster.nodes.get(pk)
        if node is not None and (usable := view(node)) is not node:
            narrowed[pk] = usable
    return narrowed


def _several_shares(shape: Shape) -> bool:
    """Virtual GPUs on several cards of a node: which cards, only the scalar path says."""
    return shape.is_vgpu and shape.gpu_count > 1


def _score_candidates(
    cluster: Cluster, shape: Shape, view: View | None, wanted: int
) -> tuple[list[tuple[tuple, ReplicaUse]], bool]:
    scored: list[tuple[tuple, ReplicaUse]] = []
    refused = False
    cpu, memory = shape.cpu_milli, shape.memory_mib
    workload, shares = cluster.workload, shares_of(cluster, shape)
    for group in best_fit_order(cluster, shape):
        for node in group:
            # Most nodes that come up have free cards but not the CPU or memory: skip
            # them before anything costlier (a reservation's view only narrows a node).
            if node.cpu_free < cpu or node.memory_free < memory:
                continue
            usable = node if view is None else view(node)
            use = fit_on_node(usable, shape, shares)
            if use is None:
                refused = refused or (usable is not node and fit_on_node(node, shape) is not None)
                continue
            score = fit_score(usable, use, shape, cluster.typical)
            if workload is not None:
                score = (off_plan(usable, use, shares), workload.grows(usable, use), *score)
            scored.append((score, use))
            if len(scored) == wanted:
                return scored, refused
    return scored, refused


def choose_best(
    candidates: list[NodeState], shape: Shape, typical: Typical
) -> tuple[ReplicaUse, ...] | None:
    """The ``shape.replicas`` best-fitting of these nodes (for simulations, no index)."""
    scored = []
    for node in candidates:
        use = fit_on_node(node, shape)
        if use is not None:
            scored.append((fit_score(node, use, shape, typical), use))
    if len(scored) < shape.replicas:
        return None
    scored.sort(key=lambda item: item[0])
    return tuple(use for _score, use in scored[: shape.replicas])
