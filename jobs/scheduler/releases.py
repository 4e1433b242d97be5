"""What the ready nodes hold now, and when each piece is likely given back (one pass's read)."""

from __future__ import annotations

from datetime import datetime, timedelta

from jobs.models import Job
from resources.models import Allocation, CardAllocation, Node

from .backfill import Release
from .cluster import CardUse, Cluster, ReplicaUse
from .forecast import likely_end


def load_releases(cluster: Cluster, now: datetime) -> list[Release]:
    """Every allocation on a ready node, ending at its job's start plus max run time.

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
    for row in ready.order_by("created_at", "pk").values_list(
        "pk",
        "node_id",
        "cpu_milli",
        "memory_mib",
        "storage_gib",
        "gpu_count",
        "created_at",
        "replica__job__state",
        "replica__job__started_at",
        "replica__job__max_runtime_minutes",
        "replica__job__expected_seconds",
        "replica__job_id",
    ):
        pk, node_id, cpu, memory, storage, whole, created, state, started, max_runtime = row[:10]
        expected, job = row[10:]
        if node_id not in cluster.nodes:
            continue
        use = ReplicaUse(node_id, cpu, memory, storage, tuple(cards.get(pk, ())), whole)
        if state in final_states:
            releases.append(Release(now, len(releases), use, job, now))
            continue
        end = None
        if max_runtime is not None:
            duration = durations.get(max_runtime) or durations.setdefault(
                max_runtime, timedelta(minutes=max_runtime)
            )
            end = (started or created) + duration
        likely = likely_end(started or created, expected, end, now)
        releases.append(Release(end, len(releases), use, job, likely))
    return releases
