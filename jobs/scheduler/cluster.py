"""The cluster as one pass sees it: ready nodes and their cards, in memory.

Loaded once per pass (two queries); placement and backfill then work on these
objects only, and the pass writes what it decided in bulk at the end.
What a replica takes (``ReplicaUse``) is a named tuple: passes build thousands.
Indexes keep placement fast at a thousand nodes: nodes are bucketed by their
number of wholly free cards, and (for virtual GPUs) cards by free compute.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from statistics import median_low
from typing import NamedTuple

from resources.catalog import ModelCatalog
from resources.models import GpuCard, Node

FULL_CARD_PERCENT = 100


@dataclass(slots=True)
class CardState:
    index: int
    pk: int
    memory_mib: int
    compute_free: int
    memory_free_mib: int

    @property
    def whole_free(self) -> bool:
        return self.compute_free == FULL_CARD_PERCENT and self.memory_free_mib == self.memory_mib


class CardUse(NamedTuple):
    index: int
    compute_percent: int
    memory_mib: int


class ReplicaUse(NamedTuple):
    """What one replica takes on one node (``whole_cards``: cards held exclusively)."""

    node_pk: int
    cpu_milli: int
    memory_mib: int
    storage_gib: int
    cards: tuple[CardUse, ...] = ()
    whole_cards: int = 0


@dataclass(slots=True)
class NodeState:
    pk: int
    name: str
    model: str | None
    cpu_free: int
    memory_free: int
    storage_free: int
    cards: dict[int, CardState] = field(default_factory=dict)
    whole_free: int = 0  # cards nobody holds any of
    compute_free: int = 0  # percent, summed over the cards

    def copy(self) -> NodeState:
        cards = {
            i: CardState(c.index, c.pk, c.memory_mib, c.compute_free, c.memory_free_mib)
            for i, c in self.cards.items()
        }
        return NodeState(
            self.pk,
            self.name,
            self.model,
            self.cpu_free,
            self.memory_free,
            self.storage_free,
            cards,
            self.whole_free,
            self.compute_free,
        )

    def apply(self, use: ReplicaUse, sign: int = 1) -> None:
        """Take (``sign=1``) or give back (``sign=-1``) what ``use`` holds."""
        self.cpu_free -= sign * use.cpu_milli
        self.memory_free -= sign * use.memory_mib
        self.storage_free -= sign * use.storage_gib
        for card_use in use.cards:
            card = self.cards[card_use.index]
            was_whole = card.whole_free
            card.compute_free -= sign * card_use.compute_percent
            card.memory_free_mib -= sign * card_use.memory_mib
            self.whole_free += card.whole_free - was_whole
            self.compute_free -= sign * card_use.compute_percent


@dataclass(frozen=True, slots=True)
class Typical:
    """What a typical job asks per card: free cards without this much CPU and memory
    beside them are stranded (seed 000's V100 ratio unless the queue says otherwise)."""

    cpu_milli_per_card: int = 12_000
    memory_mib_per_card: int = 56 * 1024

    def stranded_percent(self, compute_free, cpu_free, memory_free, minimum=min):
        """Free compute (percent) that CPU and memory left beside it cannot feed; of many
        nodes at once with arrays and ``minimum=numpy.minimum``."""
        fed = minimum(
            compute_free,
            minimum(
                100 * cpu_free // self.cpu_milli_per_card,
                100 * memory_free // self.memory_mib_per_card,
            ),
        )
        return compute_free - fed


def typical_of(requests: Iterable) -> Typical:
    """The median CPU and memory per card of these requests (``Shape``s or requests)."""
    per_card = [
        (request.cpu_milli // request.gpu_count, request.memory_mib // request.gpu_count)
        for request in requests
        if request.gpu_count
    ]
    if not per_card:
        return Typical()
    return Typical(
        cpu_milli_per_card=max(1, median_low(cpu for cpu, _memory in per_card)),
        memory_mib_per_card=max(1, median_low(memory for _cpu, memory in per_card)),
    )


def take_held_outside(node: NodeState, count: int) -> None:
    """Mark ``count`` wholly free cards taken by jobs outside Trainyard: the highest
    indices, since on a Slurm node Trainyard's card indices are nominal (Slurm picks
    the devices), so which ones does not matter, only how many are left."""
    free = sorted((c for c in node.cards.values() if c.whole_free), key=lambda c: -c.index)
    for card in free[:count]:
        card.compute_free, card.memory_free_mib = 0, 0


class Cluster:
    """Ready nodes with indexes for best-fit search; ``allocate`` keeps them current."""

    def __init__(
        self, nodes: list[NodeState], catalog: ModelCatalog, typical: Typical | None = None
    ) -> None:
        self.catalog = catalog
        self.typical = typical or Typical()
        # The workload's shapes (``fragmentation.Workload``): placement then scores the
        # fragmentation a choice adds, first. None: best fit alone.
        self.workload = None
        # The nodes as arrays (``node_arrays.NodeArrays``), once fragment-aware placement
        # has built them; ``allocate`` keeps them current.
        self.arrays = None
        self.held_outside: dict[int, int] = {}  # node -> cards Slurm jobs not ours hold
        for node in nodes:
            node.whole_free = sum(card.whole_free for card in node.cards.values())
            node.compute_free = sum(card.compute_free for card in node.cards.values())
        self.nodes = {node.pk: node for node in nodes}
        self.max_cards = max((len(node.cards) for node in nodes), default=0)
        self.by_model: dict[str | None, list[NodeState]] = {}
        self._buckets: dict[str | None, list[dict[int, NodeState]]] = {}
        for node in nodes:
            self.by_model.setdefault(node.model, []).append(node)
            self._bucket(node.model, node.whole_free)[node.pk] = node
        self._card_buckets: dict[str, list[dict[tuple[int, int], None]]] = {}

    def copy(self) -> Cluster:
        """The same nodes, to allocate on without touching these (the start forecast)."""
        copy = Cluster([node.copy() for node in self.nodes.values()], self.catalog, self.typical)
        copy.workload = self.workload
        if self.arrays is not None:
            copy.arrays = self.arrays.copy_for(copy.nodes)
        return copy

    @classmethod
    def load(cls, catalog: ModelCatalog | None = None) -> Cluster:
        catalog = catalog or ModelCatalog.load()
        ready = Node.objects.filter(state=Node.State.READY).order_by("name")
        rows = ready.values_list(
            "pk",
            "name",
            "gpu_model__name",
            "gpu_count",
            "gpu_held_outside",
            "cpu_milli",
            "cpu_allocated_milli",
            "cpu_held_outside_milli",
            "memory_mib",
            "memory_allocated_mib",
            "memory_held_outside_mib",
            "storage_gib",
            "storage_allocated_gib",
            named=True,
        )
        nodes, gpu_counts, held_outside = [], {}, {}
        for row in rows:
            gpu_counts[row.pk], held_outside[row.pk] = row.gpu_count, row.gpu_held_outside
            # What jobs outside Trainyard hold (Slurm's, at the last sync) is taken. Not
            # floored at 0: a Trainyard job that Slurm keeps pending is in both, and the
            # forecast gives back only what Trainyard holds.
            cpu_free = row.cpu_milli - row.cpu_allocated_milli - row.cpu_held_outside_milli
            memory_free = row.memory_mib - row.memory_allocated_mib - row.memory_held_outside_mib
            nodes.append(
                NodeState(
                    pk=row.pk,
                    name=row.name,
                    model=row.gpu_model__name if row.gpu_count else None,
                    cpu_free=cpu_free,
                    memory_free=memory_free,
                    storage_free=row.storage_gib - row.storage_allocated_gib,
                )
            )
        by_pk = {node.pk: node for node in nodes}
        cards = GpuCard.objects.filter(node__state=Node.State.READY).order_by("node_id", "index")
        for node_pk, index, pk, memory, compute_used, memory_used in cards.values_list(
            "node_id",
            "index",
            "pk",
            "memory_mib",
            "compute_allocated_percent",
            "memory_allocated_mib",
        ):
            # Cards past the node's count linger only while still allocated.
            if node_pk in by_pk and index < gpu_counts[node_pk]:
                card = CardState(
                    index, pk, memory, FULL_CARD_PERCENT - compute_used, memory - memory_used
                )
                by_pk[node_pk].cards[index] = card
        for node_pk, count in held_outside.items():
            if count:
                take_held_outside(by_pk[node_pk], count)
        cluster = cls(nodes, catalog)
        cluster.held_outside = {pk: count for pk, count in held_outside.items() if count}
        return cluster

    def models_of(self, requested: str | None) -> tuple[str | None, ...] | None:
        """The node models that may serve a request (None: any node, for CPU jobs)."""
        if requested is None:
            return None
        return self.catalog.physical_models(requested)

    def whole_free_of(self, model: str) -> int:
        """Cards of ``model`` nobody holds any of."""
        return sum(node.whole_free for node in self.by_model.get(model, ()))

    def held_outside_of(self, model: str) -> int:
        """Cards of ``model`` that Slurm jobs outside Trainyard hold."""
        return sum(self.held_outside.get(node.pk, 0) for node in self.by_model.get(model, ()))

    def nodes_by_whole_free(
        self, models: tuple[str | None, ...] | None, minimum: int = 0
    ) -> Iterator[Iterable[NodeState]]:
        """Groups of nodes of these models, fewest wholly free cards first (from ``minimum``).

        Callers finish iterating before they ``allocate`` (which moves nodes
        between buckets), so the buckets are handed out without copies.
        """
        keys = list(self.by_model) if models is None else models
        for free in range(minimum, self.max_cards + 1):
            for model in keys:
                buckets = self._buckets.get(model)
                if buckets and free < len(buckets) and buckets[free]:
                    yield buckets[free].values()

    def cards_by_compute_free(
        self, models: tuple[str | None, ...], minimum: int
    ) -> Iterator[tuple[NodeState, CardState]]:
        """Cards of these models with at least ``minimum`` % free, tightest first."""
        for model in models:
            if model is not None and model not in self._card_buckets:
                self._index_cards(model)
        for free in range(minimum, FULL_CARD_PERCENT + 1):
            for model in models:
                if model is None:
                    continue
                for node_pk, index in self._card_buckets[model][free]:
                    node = self.nodes[node_pk]
                    yield node, node.cards[index]

    def allocate(self, use: ReplicaUse, sign: int = 1) -> None:
        node = self.nodes[use.node_pk]
        before = node.whole_free
        card_before = {u.index: node.cards[u.index].compute_free for u in use.cards}
        node.apply(use, sign)
        if self.arrays is not None:
            self.arrays.refresh(node)
        if node.whole_free != before:
            del self._buckets[node.model][before][node.pk]
            self._bucket(node.model, node.whole_free)[node.pk] = node
        card_index = self._card_buckets.get(node.model)
        if card_index is not None:
            for index, old_free in card_before.items():
                del card_index[old_free][(node.pk, index)]
                card_index[node.cards[index].compute_free][(node.pk, index)] = None

    def _bucket(self, model: str | None, free: int) -> dict[int, NodeState]:
        buckets = self._buckets.setdefault(model, [])
        while len(buckets) <= free:
            buckets.append({})
        return buckets[free]

    def _index_cards(self, model: str) -> None:
        index: list[dict[tuple[int, int], None]] = [{} for _ in range(FULL_CARD_PERCENT + 1)]
        for node in self.by_model.get(model, ()):
            for card in node.cards.values():
                index[card.compute_free][(node.pk, card.index)] = None
        self._card_buckets[model] = index
