"""Best-fit placement of one job's replicas on the in-memory cluster.

Best fit keeps whole nodes free for large and distributed jobs: a whole-card
request goes to the node with the fewest wholly free cards that still has
enough (ties: node name order), a virtual GPU to the card with the least free
compute that still has its share, a CPU job to the node with the fewest free
cards. A distributed job gets all its replicas on distinct nodes at once or
nothing (gang).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from resources.models import ResourceKind
from resources.request import ResourceRequest

from .state import FULL_CARD_PERCENT, CardUse, Cluster, NodeState, ReplicaUse


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


# What a job may use of a node: the node itself, or a narrower copy (see backfill).
View = Callable[[NodeState], NodeState]


def fit_on_node(node: NodeState, shape: Shape) -> ReplicaUse | None:
    """What one replica would take on ``node`` now, or None if it does not fit."""
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
        free = [c for c in node.cards.values() if c.whole_free][: shape.whole_cards]
        cards = tuple(CardUse(c.index, FULL_CARD_PERCENT, c.memory_mib) for c in free)
    elif shape.is_vgpu:
        fitting = [
            c
            for c in node.cards.values()
            if c.compute_free >= shape.vgpu_percent and c.memory_free_mib >= shape.vgpu_memory_mib
        ]
        if len(fitting) < shape.gpu_count:
            return None
        # Tightest cards first: shares pack onto cards already in use.
        fitting.sort(key=lambda c: (c.compute_free, c.memory_free_mib, c.index))
        cards = tuple(
            sorted(
                (
                    CardUse(c.index, shape.vgpu_percent, shape.vgpu_memory_mib)
                    for c in fitting[: shape.gpu_count]
                ),
                key=lambda u: u.index,
            )
        )
    return ReplicaUse(
        node.pk, shape.cpu_milli, shape.memory_mib, shape.storage_gib, cards, shape.whole_cards
    )


def fit_score(node: NodeState, use: ReplicaUse) -> tuple:
    """Lower is a better fit: fewest wholly free cards left, then least CPU left."""
    freed_whole = sum(1 for u in use.cards if node.cards[u.index].whole_free)
    compute_left = sum(node.cards[u.index].compute_free - u.compute_percent for u in use.cards)
    return (node.whole_free - freed_whole, compute_left, node.cpu_free - use.cpu_milli, node.name)


def best_fit_order(cluster: Cluster, shape: Shape) -> Iterator[NodeState]:
    """Candidate nodes, best fit first, each at most once."""
    if shape.is_vgpu and shape.gpu_count == 1 and shape.models is not None:
        seen: set[int] = set()
        for node, _card in cluster.cards_by_compute_free(shape.models, shape.vgpu_percent):
            if node.pk not in seen:
                seen.add(node.pk)
                yield node
        return
    yield from cluster.nodes_by_whole_free(shape.models, minimum=shape.whole_cards)


def place(cluster: Cluster, shape: Shape, view: View | None = None) -> Outcome:
    """Choose a node for every replica (distinct nodes), or none at all.

    ``view`` narrows what the job may use of a node (reservations); ``refused``
    tells that some node would have fitted without it.
    """
    uses: list[ReplicaUse] = []
    refused = False
    for node in best_fit_order(cluster, shape):
        usable = node if view is None else view(node)
        use = fit_on_node(usable, shape)
        if use is None:
            refused = refused or (usable is not node and fit_on_node(node, shape) is not None)
            continue
        uses.append(use)
        if len(uses) == shape.replicas:
            return Outcome(tuple(uses))
    return Outcome(None, refused)


def choose_best(candidates: list[NodeState], shape: Shape) -> tuple[ReplicaUse, ...] | None:
    """The ``shape.replicas`` best-fitting of these nodes (for simulations, no index)."""
    scored = []
    for node in candidates:
        use = fit_on_node(node, shape)
        if use is not None:
            scored.append((fit_score(node, use), use))
    if len(scored) < shape.replicas:
        return None
    scored.sort(key=lambda item: item[0])
    return tuple(use for _score, use in scored[: shape.replicas])
