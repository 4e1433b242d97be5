"""EASY backfill: a reservation for each blocked queue head.

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
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple

from .cluster import Cluster, NodeState, ReplicaUse
from .placement import Shape, choose_best, fit_on_node


class Release(NamedTuple):
    """Something held now that will be given back at ``end`` (None: unknown).

    ``end`` is the latest end the scheduler can count on (the max run time);
    ``likely_end``, when it should end (see ``forecast``), and ``job_id`` whose.
    """

    end: datetime | None
    order: int
    use: ReplicaUse
    job_id: int | None = None
    likely_end: datetime | None = None


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


def release_order(release: Release) -> tuple:
    """Sorts releases as they end: the soonest first, unknown ends last, then as loaded."""
    return (release.end is None, release.end or datetime.max, release.order)


def merged(ordered: list[Release], more: list[Release]) -> list[Release]:
    """Two lists in ``release_order`` as one. A few more are put in their places by search
    (a few keys made, not one for every release held); many, by a merge."""
    if len(more) * max(1, len(ordered)).bit_length() > len(ordered):
        return list(heapq.merge(ordered, more, key=release_order))
    result: list[Release] = []
    start = 0
    for release in more:
        at = bisect_right(ordered, release_order(release), lo=start, key=release_order)
        result += ordered[start:at]
        result.append(release)
        start = at
    result += ordered[start:]
    return result


def ends_at(now: datetime, max_runtime_minutes: int | None) -> datetime | None:
    return None if max_runtime_minutes is None else now + timedelta(minutes=max_runtime_minutes)


def plan_reservation(
    *,
    cluster: Cluster,
    shape: Shape,
    job_id: int,
    releases: Iterable[Release],
    excluded: set[int],
) -> Reservation | None:
    """Where and when the blocked ``shape`` starts if nothing else starts first.

    ``releases`` in the order they end (``release_order``); nodes already reserved for an
    earlier head (``excluded``) are not offered. None when the job does not fit even once
    everything running has ended.
    """
    candidates = {
        pk: node for pk, node in cluster.nodes.items() if pk not in excluded and shape.admits(node)
    }
    copies: dict[int, NodeState] = {}
    fitting = {pk for pk, node in candidates.items() if fit_on_node(node, shape)}
    if len(fitting) >= shape.replicas:
        return None  # it was held back by something else (ports), not by nodes
    for release in releases:
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


def reservations_view(
    reservations_by_node: dict[int, list[Reservation]],
    ends: datetime | None,
    refusing: list[Reservation],
    job_id: int,
):
    """A placement view (``placement.View``): what the reservations (but job ``job_id``'s
    own) leave of a node to a job ending at ``ends``; None without any. Each reservation
    that narrowed a node is added to ``refusing``."""
    if not reservations_by_node:
        return None

    def view(node: NodeState) -> NodeState:
        usable = node
        for reservation in reservations_by_node.get(node.pk, ()):
            if reservation.job_id == job_id:
                continue
            narrowed = reservation.narrow(usable, ends)
            if narrowed is not usable:
                refusing.append(reservation)
            usable = narrowed
        return usable

    view.nodes = reservations_by_node.keys()
    return view


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
