"""How much of a node's free GPU the workload could not use: FGD's fragmentation measure.

"Beware of Fragmentation" (USENIX ATC '23): for one shape ``t`` of the workload, a
node's free GPU compute is fragmented where ``t`` cannot use it — all of it when the
node cannot host ``t`` at all (its model, CPU, memory, too few fitting cards), else
the free compute on the cards too small for ``t``. A node's fragmentation is
``F = Σ_t n_t · f_t``, ``n_t`` how often ``t`` arrived; placement puts a replica where
``F`` grows least (fragmentation gradient descent), and best fit breaks ties.

The workload is learned from the jobs that arrived (``Workload.of``: the pass gives the
recent ones), never assumed. ``F`` depends only on a node's model, which of the shapes'
CPU and memory needs its free CPU and memory reach, and its cards' free compute and
memory, so it is remembered per such state: nodes alike cost one computation a pass.
Counts are integers, so equal states score exactly equal and ties fall to best fit.

A shape is its GPU and CPU request, as FGD's typical pods are; its node memory is the
median of what its jobs asked (``bench/placement_fgd.py``, openb seed 42, every node
scored: shapes told apart by memory too split into many rare ones, 94.96 % of the GPU
allocated at 100 % arrival; memory left out, as FGD does, 95.38 %; the median, 95.35 %,
and a node short of memory is not counted as able to host the shape).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from statistics import median_low
from typing import NamedTuple

from .cluster import FULL_CARD_PERCENT, NodeState, ReplicaUse

# The most common shapes, until they cover this share of arrivals, make the workload (as
# FGD's "typical pods"): rarer ones would cost every score and change few choices.
COVERAGE = 0.95

CardKey = tuple[int, int, bool]  # (free compute %, free memory MiB, wholly free)


class Demand(NamedTuple):
    """One shape of the workload: ``cards`` cards with ``percent`` % and ``memory_mib`` free
    each (``whole``: wholly free cards), CPU and node memory beside them, on ``models``;
    arrived ``count`` times."""

    models: frozenset[str | None] | None
    cards: int
    percent: int
    memory_mib: int
    whole: bool
    cpu_milli: int
    count: int
    node_memory_mib: int = 0

    def fragmented(self, hosts: bool, cards: tuple[CardKey, ...]) -> int:
        """Free compute (%) on these cards that this shape cannot use; ``hosts``: the node
        has its model, CPU and memory."""
        total = sum(card[0] for card in cards)
        if not hosts:
            return total
        usable = [card[0] for card in cards if self._fits(card)]
        return total - sum(usable) if len(usable) >= self.cards else total

    def _fits(self, card: CardKey) -> bool:
        if self.whole:
            return card[2]
        return card[0] >= self.percent and card[1] >= self.memory_mib


class Workload:
    """The shapes that arrived, with how often; ``grows`` scores a replica's placement."""

    def __init__(self, demands: Iterable[Demand]) -> None:
        self.demands = tuple(demands)
        self.cpu_steps = sorted({d.cpu_milli for d in self.demands})
        self.memory_steps = sorted({d.node_memory_mib for d in self.demands})
        # A node's CPU counts by its level, how many steps it reaches: a demand's need is
        # reached from the level of its own step.
        self._levels = [
            (
                d,
                bisect_right(self.cpu_steps, d.cpu_milli),
                bisect_right(self.memory_steps, d.node_memory_mib),
            )
            for d in self.demands
        ]
        self._memo: dict[tuple, int] = {}

    @classmethod
    def of(cls, shapes: Iterable) -> Workload | None:
        """The workload of these replicas' shapes (``placement.Shape``s, each counted once
        per replica); None without a GPU one. CPU-only shapes are left out: they leave
        every card as it is, so they fragment every node alike and change no choice."""
        counts: Counter = Counter()
        memory: dict = {}
        for shape in shapes:
            if demand := _demand_of(shape):
                counts[demand] += shape.replicas
                memory.setdefault(demand, []).append(shape.memory_mib)
        if not counts:
            return None
        wanted, covered, kept = COVERAGE * sum(counts.values()), 0, []
        for demand, count in counts.most_common():
            if covered >= wanted:
                break
            kept.append(demand._replace(count=count, node_memory_mib=median_low(memory[demand])))
            covered += count
        return cls(kept)

    def fragmentation(self, node: NodeState) -> int:
        """``F`` of the node as it is now."""
        return self._of(node.model, node.cpu_free, node.memory_free, _cards(node))

    def grows(self, node: NodeState, use: ReplicaUse) -> int:
        """How much ``F`` of ``node`` grows if it takes ``use`` (negative: it shrinks)."""
        taken = {card_use.index: card_use for card_use in use.cards}
        after = []
        for card in node.cards.values():
            took = taken.get(card.index)
            if took is None:
                after.append((card.compute_free, card.memory_free_mib, card.whole_free))
            else:
                compute = card.compute_free - took.compute_percent
                after.append((compute, card.memory_free_mib - took.memory_mib, False))
        cpu, memory = node.cpu_free - use.cpu_milli, node.memory_free - use.memory_mib
        after_f = self._of(node.model, cpu, memory, tuple(sorted(after)))
        return after_f - self.fragmentation(node)

    def _of(self, model, cpu: int, memory: int, cards: tuple[CardKey, ...]) -> int:
        cpu_level = bisect_right(self.cpu_steps, cpu)
        memory_level = bisect_right(self.memory_steps, memory)
        key = (model, cpu_level, memory_level, cards)
        value = self._memo.get(key)
        if value is None:
            value = sum(
                demand.count
                * demand.fragmented(
                    (demand.models is None or model in demand.models)
                    and cpu_level >= cpu_needed
                    and memory_level >= memory_needed,
                    cards,
                )
                for demand, cpu_needed, memory_needed in self._levels
            )
            self._memo[key] = value
        return value


def _cards(node: NodeState) -> tuple[CardKey, ...]:
    return tuple(
        sorted((c.compute_free, c.memory_free_mib, c.whole_free) for c in node.cards.values())
    )


def _demand_of(shape) -> Demand | None:
    if shape.whole_cards:
        cards, percent, memory, whole = shape.whole_cards, FULL_CARD_PERCENT, 0, True
    elif shape.is_vgpu:
        cards, percent, memory, whole = shape.gpu_count, shape.vgpu_percent, 0, False
        memory = shape.vgpu_memory_mib
    else:
        return None
    models = None if shape.models is None else frozenset(shape.models)
    return Demand(models, cards, percent, memory, whole, shape.cpu_milli, 0)
