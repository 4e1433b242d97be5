"""Giving back what a job holds: allocations, card shares and host ports."""

from __future__ import annotations

from django.db import transaction

from jobs.models import Job, PortAllocation
from resources.models import Allocation, CardAllocation

from .allocated_columns import add_to_allocated
from .pass_requests import schedule_soon


def job_release(*, job: Job) -> int:
    """Free everything ``job`` holds and schedule a pass; return the allocations freed.

    Idempotent: the allocation rows are locked before they are counted, so two
    releases of one job at once free it once; a second release finds nothing.
    Replica rows stay: they record where the job ran (node and cards).
    """
    with transaction.atomic(savepoint=False):  # no savepoint: see lifecycle/transitions.py
        allocations = list(
            Allocation.objects.select_for_update()
            .filter(replica__job_id=job.pk)
            .order_by("pk")
            .values_list("pk", "node_id", "gpu_count", "cpu_milli", "memory_mib", "storage_gib")
        )
        cards = list(
            CardAllocation.objects.filter(allocation_id__in=[row[0] for row in allocations])
            .order_by("card_id")
            .values_list("card_id", "compute_percent", "memory_mib")
        )
        _give_back(allocations, cards)
        Allocation.objects.filter(pk__in=[row[0] for row in allocations]).delete()
        PortAllocation.objects.filter(replica__job_id=job.pk).delete()
        schedule_soon()
    return len(allocations)


def _give_back(allocations: list[tuple], cards: list[tuple]) -> None:
    node_deltas: dict[int, list[int]] = {}
    for _pk, node_id, *amounts in allocations:
        delta = node_deltas.setdefault(node_id, [0, 0, 0, 0])
        for i, amount in enumerate(amounts):
            delta[i] -= amount
    card_deltas: dict[int, list[int]] = {}
    for card_id, compute, memory in cards:
        delta = card_deltas.setdefault(card_id, [0, 0])
        delta[0] -= compute
        delta[1] -= memory
    add_to_allocated(nodes=node_deltas, cards=card_deltas, ready_only=False)
