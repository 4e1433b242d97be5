"""EASY backfill: a reservation for each blocked queue head, and start estimates.

When the first job of a queue cannot start, we replay the ends of what runs now
(each at its start plus its max run time) until the job fits: that moment is
its *shadow time* and the nodes it would get are reserved. A later job may use a
reserved node only if it ends before the shadow time, or if it takes only what
the head will not need there ("extra"), as Slurm's backfill does.

Jobs without a max run time have an unknown end; we treat it as infinite. Such
a job can never prove that it ends before a shadow time, so it backfills only
into extra resources. A head that needs resources held by such jobs has an
unknown shadow time (no estimated start) but still gets its reservation, on the
nodes whose running jobs started longest ago, so that it is not starved.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple

from .placement import Shape, choose_best, fit_on_node
from .state import Cluster, NodeState, ReplicaUse


class Release(NamedTuple):
    """Something held now that will be given back at ``end`` (None: unknown)."""

    end: datetime | None
    order: int
    use: ReplicaUse


@dataclass
class Reservation:
    job_id: int
    shadow: datetime | None
    extra: dict[int, NodeState] = field(default_factory=dict)

    def narrow(self, node: NodeState, ends_at: datetime | None) -> NodeState:
        """What a job ending at ``ends_at`` may use of ``node`` without delaying the head."""
        extra = self.extra.get(node.pk)
        if extra is None or self.ends_in_time(ends_at):
            return node
        return _smaller_of(node, extra)

    def consume(self, use: ReplicaUse, ends_at: datetime | None) -> None:
        extra = self.extra.get(use.node_pk)
        if extra is not None and not self.ends_in_time(ends_at):
            extra.apply(use)

    def ends_in_time(self, ends_at: datetime | None) -> bool:
        return self.shadow is not None and ends_at is not None and ends_at <= self.shadow


def ends_at(now: datetime, max_runtime_minutes: int | None) -> datetime | None:
    return None if max_runtime_minutes is None else now + timedelta(minutes=max_runtime_minutes)


def plan_reservation(
    *,
    cluster: Cluster,
    shape: Shape,
    job_id: int,
    releases: list[Release],
    excluded: set[int],
) -> Reservation | None:
    """Where and when the blocked ``shape`` starts if nothing else starts first.

    Nodes already reserved for an earlier head (``excluded``) are not offered.
    None when the job does not fit even once everything running has ended.
    """
    candidates = {
        pk: node for pk, node in cluster.nodes.items() if pk not in excluded and shape.admits(node)
    }
    copies: dict[int, NodeState] = {}
    fitting = {pk for pk, node in candidates.items() if fit_on_node(node, shape)}
    if len(fitting) >= shape.replicas:
        return None  # it was held back by something else (ports), not by nodes
    ordered = sorted(releases, key=lambda r: (r.end is None, r.end or datetime.max, r.order))
    for release in ordered:
        pk = release.use.node_pk
        if pk not in candidates:
            continue
        node = copies.get(pk) or copies.setdefault(pk, candidates[pk].copy())
        node.apply(release.use, -1)
        if pk not in fitting and fit_on_node(node, shape):
            fitting.add(pk)
        if len(fitting) >= shape.replicas:
            nodes = [copies.get(p, candidates[p]) for p in fitting]
            uses = choose_best(nodes, shape, cluster.typical)
            if uses is None:
                continue
            extra = {}
            for use in uses:
                extra[use.node_pk] = copies.get(use.node_pk, candidates[use.node_pk]).copy()
                extra[use.node_pk].apply(use)
            return Reservation(job_id=job_id, shadow=release.end, extra=extra)
    return None


@dataclass(frozen=True, slots=True)
class Queued:
    job_id: int
    shape: Shape
    max_runtime_minutes: int | None


def estimate_starts(
    *, cluster: Cluster, queue: list[Queued], releases: list[Release], now: datetime
) -> dict[int, datetime | None]:
    """Start times if the queue ran in order and jobs ran to their max run time.

    Like ``squeue --start``: an upper bound for the head, an estimate for the
    others (a backfilled job may still delay them). Unknown (None) from the
    first job that needs something whose end is unknown.
    """
    pending = [(r.end, i, r.use) for i, r in enumerate(releases) if r.end is not None]
    heapq.heapify(pending)
    copies: dict[int, NodeState] = {}
    sequence = len(releases)
    now_or_later = now
    starts: dict[int, datetime | None] = {}
    # Nodes the simulation has not touched are as the pass left them: which of
    # them fit a shape is worked out once per shape.
    untouched_fit: dict[Shape, list[int]] = {}
    for position, item in enumerate(queue):
        shape = item.shape
        if shape not in untouched_fit:
            untouched_fit[shape] = [
                pk for pk, node in cluster.nodes.items() if fit_on_node(node, shape)
            ]
        fitting = {pk for pk in untouched_fit[shape] if pk not in copies}
        fitting.update(pk for pk, node in copies.items() if fit_on_node(node, shape))
        while len(fitting) < shape.replicas and pending:
            end, _order, use = heapq.heappop(pending)
            now_or_later = max(now_or_later, end)
            node = copies.get(use.node_pk) or copies.setdefault(
                use.node_pk, cluster.nodes[use.node_pk].copy()
            )
            node.apply(use, -1)
            if fit_on_node(node, shape):
                fitting.add(use.node_pk)
        uses = None
        if len(fitting) >= item.shape.replicas:
            nodes = [copies.get(pk) or cluster.nodes[pk] for pk in fitting]
            uses = choose_best(nodes, item.shape, cluster.typical)
        if uses is None:
            starts.update({later.job_id: None for later in queue[position:]})
            break
        starts[item.job_id] = now_or_later
        end = ends_at(now_or_later, item.max_runtime_minutes)
        for use in uses:
            node = copies.get(use.node_pk) or copies.setdefault(
                use.node_pk, cluster.nodes[use.node_pk].copy()
            )
            node.apply(use)
            if end is not None:
                sequence += 1
                heapq.heappush(pending, (end, sequence, use))
    return starts


def _smaller_of(node: NodeState, other: NodeState) -> NodeState:
    """A copy of ``node`` with, for each resource and card, the lesser free amount."""
    narrowed = node.copy()
    narrowed.cpu_free = min(node.cpu_free, other.cpu_free)
    narrowed.memory_free = min(node.memory_free, other.memory_free)
    narrowed.storage_free = min(node.storage_free, other.storage_free)
    for index, card in narrowed.cards.items():
        card.compute_free = min(card.compute_free, other.cards[index].compute_free)
        card.memory_free_mib = min(card.memory_free_mib, other.cards[index].memory_free_mib)
    narrowed.whole_free = sum(card.whole_free for card in narrowed.cards.values())
    return narrowed
