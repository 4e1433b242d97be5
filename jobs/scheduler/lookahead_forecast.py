"""Expected starts of the jobs behind the look-ahead, seeded with Slurm's own estimates.

A job held in Trainyard's queue behind the look-ahead waits for the jobs inside Slurm
that go before it there, and those hold nothing in Trainyard's view until Slurm starts
them: the pass's replay (``forecast.py``) would start it at once. So each model Slurm
places gets a replay of its own, over its cards as a pool:

- the cards free now, and those freed by what runs at its likely end (``Release``);
- the jobs inside Slurm in Slurm's order (their nice, then submission), each starting at
  Slurm's estimate (``squeue``'s ``StartTime``: its backfill's plan, which knows the
  jobs Trainyard never sees) or, without one, when enough cards have freed; a job that
  Slurm starts when Trainyard sees too few cards free says that the cards held outside
  Trainyard (``Cluster.held_outside``, whose end Trainyard does not know) free by then;
- then the waiting jobs, in Trainyard's order, merged with those by rank, each when
  enough cards have freed after the job before it (Slurm starts them in that order);
- every started job gives its cards back after its likely run (expected, else its max
  run time); a job whose cards never free in the replay (no likely end) makes the
  estimates of those behind it unknown.

A pool rather than nodes: these jobs are one replica of whole cards, so a job fits
wherever enough cards are free, except when the free cards are split across nodes;
then the estimate is early by the time it takes one node to free the rest.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import NamedTuple

from .backfill import Release
from .cluster import Cluster


class Queued(NamedTuple):
    """A job in one model's replay, in the order Slurm starts them."""

    pk: int
    cards: int
    likely_seconds: int | None
    slurm_start: datetime | None = None


def lookahead_starts(
    *,
    now: datetime,
    cluster: Cluster,
    releases: Iterable[Release],
    queues: dict[str, list[Queued]],
) -> dict[int, datetime | None]:
    """The expected start of each job in ``queues`` (model → its jobs inside Slurm and
    behind the look-ahead, in Slurm's order); None: unknown."""
    ends: dict[str, list[tuple[datetime, int]]] = {model: [] for model in queues}
    for release in releases:
        node = cluster.nodes.get(release.use.node_pk)
        cards = release.use.whole_cards
        if node is not None and node.model in ends and cards and release.likely_end is not None:
            ends[node.model].append((max(now, release.likely_end), cards))
    starts: dict[int, datetime | None] = {}
    for model, queued in queues.items():
        free, outside = cluster.whole_free_of(model), cluster.held_outside_of(model)
        starts |= _replay(now, free, ends[model], queued, outside)
    return starts


def _replay(
    now: datetime,
    free: int,
    ends: list[tuple[datetime, int]],
    queued: list[Queued],
    outside: int = 0,
) -> dict[int, datetime | None]:
    """``outside``: cards jobs outside Trainyard hold, whose end only Slurm knows."""
    heapq.heapify(ends)
    starts: dict[int, datetime | None] = {}
    moment: datetime | None = now
    for job in queued:
        if moment is None:
            starts[job.pk] = None  # behind a job that never starts in the replay
            continue
        if job.slurm_start is not None:
            # Slurm's word: it knows what holds its nodes, Trainyard's jobs or not.
            moment = max(moment, job.slurm_start)
            while ends and ends[0][0] <= moment:
                free += heapq.heappop(ends)[1]
            if free < job.cards:
                # Starting then on cards Trainyard sees held: by Slurm's plan, those
                # held outside Trainyard free by then.
                free, outside = free + outside, 0
        else:
            while free < job.cards and ends:
                end, cards = heapq.heappop(ends)
                moment, free = max(moment, end), free + cards
            if free < job.cards:
                moment = None
                starts[job.pk] = None
                continue
        starts[job.pk] = moment
        free -= job.cards  # below zero if Slurm starts it on cards Trainyard saw held
        if job.likely_seconds is not None:
            heapq.heappush(ends, (moment + timedelta(seconds=job.likely_seconds), job.cards))
    return starts


def in_slurm_order(*groups: list[tuple[int, Queued]]) -> list[Queued]:
    """One model's jobs as Slurm would start them: by nice (the first of each pair), on
    a tie the earlier group first (those inside Slurm came first), each in its own order."""
    merged = [
        (rank, group, position, job)
        for group, jobs in enumerate(groups)
        for position, (rank, job) in enumerate(jobs)
    ]
    merged.sort(key=lambda entry: entry[:3])
    return [job for *_key, job in merged]
