"""What the ready nodes hold now, and when each piece is likely given back (one pass's read)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models.functions import Coalesce

from core.timestamps import EpochMicros, from_micros
from jobs.models import Job
from resources.models import Allocation, CardAllocation, Node

from .backfill import Release, release_order
from .cluster import CardUse, Cluster, ReplicaUse
from .forecast import likely_end


def load_releases(cluster: Cluster, now: datetime) -> list[Release]:
    """Every allocation on a ready node, ending at its job's start plus max run time, in
    the order they end (``backfill.release_order``).

    A finished job's allocation is about to be released (now); a job without a
    max run time has an unknown end (None). Each also gets its likely end, from
    the job's expected run time (``forecast.likely_end``).
    """
    ready = Allocation.objects.filter(node__state=Node.State.READY)
    cards: dict[int, list[CardUse]] = {}
    for allocation_id, index, compute, memory in CardAllocation.objects.filter(
        allocation__node__state=Node.State.READY
    ).values_list("allocation_id", "card__index", "compute_percent", "memory_mib"):
        cards.setdefault(allocation_id, []).append(CardUse(index, compute, memory))
    releases = []
    final_states = set(Job.FINAL_STATES)
    durations: dict[int, timedelta] = {}
    # The job's start, or the allocation's while it starts: one timestamp a row to read,
    # as an integer (``core.timestamps``).
    rows = ready.annotate(since=EpochMicros(Coalesce("replica__job__started_at", "created_at")))
    for row in rows.order_by("created_at", "pk").values_list(
        "pk",
        "node_id",
        "cpu_milli",
        "memory_mib",
        "storage_gib",
        "gpu_count",
        "since",
        "replica__job__state",
        "replica__job__max_runtime_minutes",
        "replica__job__expected_seconds",
        "replica__job_id",
    ):
        pk, node_id, cpu, memory, storage, whole, since, state, max_runtime = row[:9]
        expected, job = row[9:]
        if node_id not in cluster.nodes:
            continue
        use = ReplicaUse(node_id, cpu, memory, storage, tuple(cards.get(pk, ())), whole)
        if state in final_states:
            releases.append(Release(now, len(releases), use, job, now))
            continue
        since = from_micros(since)
        end = None
        if max_runtime is not None:
            duration = durations.get(max_runtime) or durations.setdefault(
                max_runtime, timedelta(minutes=max_runtime)
            )
            end = since + duration
        likely = likely_end(since, expected, end, now)
        releases.append(Release(end, len(releases), use, job, likely))
    releases.sort(key=release_order)
    return releases
