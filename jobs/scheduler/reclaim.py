"""What a preemption frees goes to the job it was for.

A job for which borrowing jobs were preempted (*reclaiming*, ``preemption.py``) sorts
first until it starts: those whose victims are gone, then those whose victims still
stop (``queue.waiting_rows``). At the start of each pass, before anything else is
placed, each claims where it will start: on its victims' nodes if it fits there (once
its stopping victims are gone), else wherever it fits then. What the claim takes
beyond the victims' own capacity is kept from every later job of the pass
(``Claim.narrow``); a job whose victims are gone starts on its claim, one whose victims
still stop waits for them, and does not start on what frees elsewhere meanwhile: that
goes to the next job, and no victim stops for nothing. Without claims, a later job
took the idle part a reclaiming job needed beside its victims' cards, and it preempted
again once they had stopped (``bench/fair_queues.py`` counted such cycles).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from jobs.models import Replica

from .backfill import ends_at
from .cluster import CardUse, Cluster, NodeState, ReplicaUse
from .placement import Shape, choose_best, place
from .queue import WaitingJob


def victims_nodes(reclaiming: list[int]) -> dict[int, set[int]]:
    """Reclaiming job → the nodes its victims ran on (one query; none without such jobs)."""
    if not reclaiming:
        return {}
    rows = Replica.objects.filter(job__preempted_for_id__in=reclaiming, node__isnull=False)
    nodes: dict[int, set[int]] = {}
    for job_id, node_id in rows.values_list("job__preempted_for_id", "node_id"):
        nodes.setdefault(job_id, set()).add(node_id)
    return nodes


def make_claims(scheduling) -> dict[int, Claim]:
    """Each reclaiming job's claim, in queue order, each within what the earlier left
    (``scheduling``: the pass)."""
    claims: dict[int, Claim] = {}
    held_by: dict[int, list[ReplicaUse]] | None = None  # job -> what it holds, read once
    for job in scheduling.jobs:
        if not job.reclaiming:
            break  # they sort first
        admission = scheduling.quotas.admit(job)
        if not admission.admitted:
            continue
        held: list[ReplicaUse] = []
        if job.on_victims:
            if held_by is None:
                held_by = {}
                for release in scheduling.releases():
                    held_by.setdefault(release.job_id, []).append(release.use)
            for victim in scheduling.borrowing().stopping_for.get(job.pk, ()):
                held += held_by.get(victim, ())
        shape = Shape.of(job.request, admission.models)
        nodes = scheduling.victim_nodes.get(job.pk, ())
        claimed = claim(scheduling, job, shape, held, nodes)
        if claimed is not None:
            claims[job.pk] = claimed
    return claims


def claim(
    scheduling, job: WaitingJob, shape: Shape, held: list[ReplicaUse], nodes: Iterable[int]
) -> Claim | None:
    """Where ``job`` starts once its stopping victims give back what they ``held``, on
    their ``nodes`` if it fits there; added to the pass's reservations. None if it would
    not fit even then."""
    view = scheduling.narrowing(ends_at(scheduling.now, job.max_runtime_minutes), [], job.pk)
    with _freed(scheduling.cluster, held):
        uses = place_among(scheduling.cluster, shape, nodes, view)
        if uses is None:
            uses = place(scheduling.cluster, shape, view).uses
    if uses is None:
        return None
    claimed = Claim.of(job.pk, uses, held)
    for node_pk in claimed.idle:
        scheduling.reservations_by_node.setdefault(node_pk, []).append(claimed)
    return claimed


def place_among(
    cluster: Cluster,
    shape: Shape,
    nodes: Iterable[int],
    view: Callable[[NodeState], NodeState] | None,
) -> tuple[ReplicaUse, ...] | None:
    """The best placement of ``shape`` on these nodes only, or None."""
    candidates = [
        node if view is None else view(node)
        for node in (cluster.nodes.get(pk) for pk in nodes)
        if node is not None and shape.admits(node)
    ]
    return choose_best(candidates, shape, cluster.typical) if candidates else None


@contextmanager
def _freed(cluster: Cluster, uses: list[ReplicaUse]):
    """``cluster`` as if ``uses`` were given back, then as it was."""
    for use in uses:
        cluster.allocate(use, -1)
    try:
        yield
    finally:
        for use in uses:
            cluster.allocate(use)


@dataclass
class Claim:
    """Where a reclaiming job will start (``uses``); the part of it that its stopping
    victims do not hold (``idle``) is kept from every other job, however short (a
    reservation without a shadow time)."""

    job_id: int
    uses: tuple[ReplicaUse, ...]
    idle: dict[int, ReplicaUse]  # node -> what it takes there beyond its victims' part

    @classmethod
    def of(cls, job_id: int, uses: tuple[ReplicaUse, ...], victims: list[ReplicaUse]) -> Claim:
        """The part of ``uses`` that ``victims`` (on the same nodes) do not hold now."""
        held: dict[int, list[int]] = {}  # node -> cpu, memory, storage; (node, card) -> 2
        for use in victims:
            _add(held, use)
        idle: dict[int, ReplicaUse] = {}
        for use in uses:
            on_node = held.setdefault(use.node_pk, [0, 0, 0])
            cpu, memory, storage = (
                _beyond(need, on_node, i)
                for i, need in enumerate((use.cpu_milli, use.memory_mib, use.storage_gib))
            )
            cards = []
            for card in use.cards:
                on_card = held.setdefault((use.node_pk, card.index), [0, 0])
                compute = _beyond(card.compute_percent, on_card, 0)
                cards.append(CardUse(card.index, compute, _beyond(card.memory_mib, on_card, 1)))
            before = idle.get(use.node_pk)
            part = ReplicaUse(use.node_pk, cpu, memory, storage, tuple(cards))
            idle[use.node_pk] = part if before is None else _sum(before, part)
        return cls(job_id, tuple(uses), idle)

    def narrow(self, node: NodeState, ends_at: datetime | None) -> NodeState:
        take = self.idle.get(node.pk)
        if take is None:
            return node
        narrowed = node.copy()
        narrowed.apply(take)
        return narrowed

    def consume(self, use: ReplicaUse, ends_at: datetime | None) -> None:
        """Nothing: a job placed beside the claim took only what it left."""


def _add(held: dict, use: ReplicaUse) -> None:
    node = held.setdefault(use.node_pk, [0, 0, 0])
    for i, amount in enumerate((use.cpu_milli, use.memory_mib, use.storage_gib)):
        node[i] += amount
    for card in use.cards:
        on_card = held.setdefault((use.node_pk, card.index), [0, 0])
        on_card[0] += card.compute_percent
        on_card[1] += card.memory_mib


def _beyond(need: int, held: list[int], i: int) -> int:
    """What of ``need`` the victims' ``held[i]`` does not cover (using that much of it)."""
    covered = min(need, held[i])
    held[i] -= covered
    return need - covered


def _sum(a: ReplicaUse, b: ReplicaUse) -> ReplicaUse:
    cards: dict[int, CardUse] = {card.index: card for card in a.cards}
    for card in b.cards:
        old = cards.get(card.index, CardUse(card.index, 0, 0))
        cards[card.index] = CardUse(
            card.index, old.compute_percent + card.compute_percent, old.memory_mib + card.memory_mib
        )
    return ReplicaUse(
        a.node_pk,
        a.cpu_milli + b.cpu_milli,
        a.memory_mib + b.memory_mib,
        a.storage_gib + b.storage_gib,
        tuple(cards.values()),
    )
