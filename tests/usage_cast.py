"""Jobs holding cards, and the agent's looks at them (as ``agent/usage.py`` writes them),
for the utilisation page's tests."""

from __future__ import annotations

from datetime import datetime, timedelta

from jobs.models import AttemptSample, Job, Replica, ReplicaAttempt, mean_util
from resources.models import GpuCard


def held(job: Job, node, indices: list[int], *, since: datetime, until: datetime | None = None):
    """``job``'s replica on ``node``'s ``indices`` from ``since`` (to ``until``), the cards
    marked allocated while it runs."""
    replica = Replica.objects.create(job=job, index=0, node=node, card_indices=indices)
    attempt = ReplicaAttempt.objects.create(
        replica=replica,
        number=1,
        node=node,
        state=ReplicaAttempt.State.SUCCEEDED if until else ReplicaAttempt.State.RUNNING,
        started_at=since,
        training_started_at=since,
        ended_at=until,
    )
    if until is None:
        share = job.vgpu_compute_percent or 100
        GpuCard.objects.filter(node=node, index__in=indices).update(
            compute_allocated_percent=share, memory_allocated_mib=1
        )
    return attempt


def sampled(attempt, utils: dict[int, int], *, since: datetime, until: datetime, every: int = 10):
    """Looks every ``every`` seconds from ``since`` to ``until``: card index → GPU %."""
    looks = []
    at = since
    while at <= until:
        cards = [
            {"index": i, "util": u, "memory_mib": 1, "power_w": 1.0, "temp_c": 1}
            for i, u in utils.items()
        ]
        looks.append(
            AttemptSample(
                attempt=attempt,
                at=at,
                cpu_seconds=0,
                memory_mib=1,
                gpus=cards,
                gpu_util=mean_util(cards),
            )
        )
        at += timedelta(seconds=every)
    AttemptSample.objects.bulk_create(looks)
