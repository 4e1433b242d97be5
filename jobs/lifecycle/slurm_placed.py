"""Where Slurm started a replica it placed: recorded like a placement of Trainyard's.

A job Slurm places (``jobs/scheduler/lookahead.py``) has no node until it starts. Its
start names the node and the cards; from then on it holds them in Trainyard's view as
any placed job does (the node's and the cards' allocated columns, an Allocation), so the
free figures, the forecast and the release at its end treat it alike.
"""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction

from core.reasons import Reason
from jobs.models import Job, JobEvent, Replica, ReplicaAttempt
from resources.models import Allocation, CardAllocation, GpuCard, Node

from .allocated_columns import add_to_allocated
from .pass_requests import schedule_soon

logger = logging.getLogger(__name__)
FULL_CARD_PERCENT = 100


def record_slurm_start(
    *, attempt_id: int, node: Node, cards: list[int], holds: bool = True
) -> bool:
    """The attempt, still without a node, started on ``node`` with these card indices
    (checked by the caller; empty when unknown: the node's count is still taken); False if
    its node was recorded already. Without ``holds`` (it has ended already) its node and
    cards are recorded, and nothing is counted as taken."""
    with transaction.atomic(savepoint=False):  # no savepoint: see lifecycle/transitions.py
        attempt = (
            ReplicaAttempt.objects.select_for_update()
            .select_related("replica__job")
            .filter(pk=attempt_id, node__isnull=True)
            .first()
        )
        if attempt is None:
            return False
        replica, job = attempt.replica, attempt.replica.job
        ReplicaAttempt.objects.filter(pk=attempt.pk).update(node=node)
        Replica.objects.filter(pk=replica.pk).update(node=node, card_indices=cards)
        held = holds and _hold(replica, job, node, cards)
        placement = Reason("start.node_cards", {"node": node.name, "cards": _listed(cards)})
        JobEvent.build(
            job_id=job.pk,
            from_state=job.state,
            to_state=job.state,
            reason=Reason("start.slurm_node", {"placement": placement}),
            data={"nodes": [node.name], "cards": [cards], "counted": held},
        ).save()
        # Its place in Slurm's queue is free: the pass lets the next job in.
        schedule_soon()
    return True


def _hold(replica: Replica, job: Job, node: Node, cards: list[int]) -> bool:
    """Count what it holds on ``node``; False when Trainyard's figures were behind Slurm's
    (they count the cards taken already): then it runs uncounted until it ends."""
    card_rows = list(
        GpuCard.objects.filter(node=node, index__in=cards).values_list("pk", "memory_mib")
    )
    try:
        with transaction.atomic():
            allocation = Allocation.objects.create(
                replica=replica,
                node=node,
                gpu_count=job.gpu_count,
                cpu_milli=job.cpu_milli,
                memory_mib=job.memory_mib,
                storage_gib=job.storage_gib,
            )
            CardAllocation.objects.bulk_create(
                CardAllocation(
                    allocation=allocation,
                    card_id=pk,
                    compute_percent=FULL_CARD_PERCENT,
                    memory_mib=memory,
                )
                for pk, memory in card_rows
            )
            add_to_allocated(
                nodes={node.pk: [job.gpu_count, job.cpu_milli, job.memory_mib, job.storage_gib]},
                cards={pk: [FULL_CARD_PERCENT, memory] for pk, memory in card_rows},
                ready_only=False,
            )
    except IntegrityError:
        logger.warning(
            "job %s started on %s (cards %s), which Trainyard counted as taken", job.pk, node, cards
        )
        return False
    return True


def _listed(cards: list[int]) -> str:
    return ", ".join(map(str, cards)) or "—"
