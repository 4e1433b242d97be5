"""The start estimator before the forecast (commit a91c766), frozen for ``start_estimates.py``.

The pass replayed each queue's resource-waiting jobs in order against the
running jobs' max run times (``estimate_starts``, like ``squeue --start``),
and a job waiting for quota got the moment its owner's jobs, at their max run
time, left room. The replay is copied here as it was; the bench's jobs never
wait for quota (its quota does not bind), so that half is left out.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from datetime import datetime

from jobs.models import Job
from jobs.scheduler.backfill import Release, ends_at
from jobs.scheduler.cluster import Cluster, NodeState, typical_of
from jobs.scheduler.placement import Shape, choose_best, fit_on_node
from jobs.scheduler.queue import load_waiting, waiting_rows
from jobs.scheduler.releases import load_releases
from resources.catalog import ModelCatalog

DEPTH = 50


def baseline_starts(now: datetime) -> dict[int, datetime | None]:
    """Each resource-waiting job's start as the old pass estimated it, now."""
    catalog = ModelCatalog.load()
    cluster = Cluster.load(catalog)
    waiting = load_waiting(waiting_rows(), catalog)
    cluster.typical = typical_of(job.request for job in waiting)
    queues: dict[str, list[Queued]] = {}
    for job in waiting:
        if job.state != Job.State.RESOURCE_WAIT:
            continue
        queue = queues.setdefault(job.queue, [])
        if len(queue) < DEPTH:
            shape = Shape.of(job.request, cluster.models_of(job.requested_model))
            queue.append(Queued(job.pk, shape, job.max_runtime_minutes))
    releases = load_releases(cluster, now)
    starts: dict[int, datetime | None] = {}
    for queue in queues.values():
        starts.update(estimate_starts(cluster=cluster, queue=queue, releases=releases, now=now))
    return starts


@dataclass(frozen=True, slots=True)
class Queued:
    job_id: int
    shape: Shape
    max_runtime_minutes: int | None


def estimate_starts(
    *, cluster: Cluster, queue: list[Queued], releases: list[Release], now: datetime
) -> dict[int, datetime | None]:
    """Start times if the queue ran in order and jobs ran to their max run time."""
    pending = [(r.end, i, r.use) for i, r in enumerate(releases) if r.end is not None]
    heapq.heapify(pending)
    copies: dict[int, NodeState] = {}
    sequence = len(releases)
    now_or_later = now
    starts: dict[int, datetime | None] = {}
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
