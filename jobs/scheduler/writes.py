"""The pass's writes, in bulk and in the pass's one transaction.

Starting jobs: the conditional state change first (a job stopped meanwhile is
dropped), then the node and card columns (increments, so the CHECK
constraints refuse an over-commit), then the rows: replicas, allocations,
card allocations, host ports. Waiting jobs: their reason, queue position and
estimated start, only where something changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from core.bulk import insert_rows, update_from_values
from core.reasons import Reason
from jobs.lifecycle.allocated_columns import add_to_allocated
from jobs.lifecycle.transitions import REASON_FIELDS, Transition, job_transition_many
from jobs.models import Job, JobEvent, PortAllocation, Replica
from resources.models import Allocation, CardAllocation

from .cluster import Cluster, ReplicaUse
from .queue import WaitingJob


class NodeChanged(Exception):
    """A node left the ready state while the pass ran; the pass is retried."""


@dataclass(frozen=True)
class Start:
    job: WaitingJob
    uses: tuple[ReplicaUse, ...]
    host_ports: tuple[int, ...]
    borrowed: bool = False  # preemptible, beyond its owner's quota
    away_from_checkpoint: tuple[str, ...] = ()  # nodes holding checkpoints it starts without
    slurm_model: str | None = None  # no ``uses``: submitted for Slurm to place on this model
    slurm_model_id: int | None = None

    @property
    def replicas(self) -> int:
        return len(self.uses) if self.slurm_model is None else self.job.request.replicas


@dataclass(frozen=True)
class Waiting:
    job: WaitingJob
    state: str
    reason: Reason
    queue_position: int | None


def write_starts(starts: list[Start], cluster: Cluster) -> list[int]:
    """Move these jobs to ``starting`` with everything they hold; return their ids."""
    moved = job_transition_many(
        transitions=[
            Transition(
                job_id=start.job.pk,
                from_state=start.job.state,
                to_state=Job.State.STARTING,
                reason=_start_reason(start, cluster),
                old_reason=start.job.state_reason,
                data={
                    "nodes": [cluster.nodes[use.node_pk].name for use in start.uses],
                    "cards": [[card.index for card in use.cards] for use in start.uses],
                },
                fields={
                    "attempt": max(start.job.attempt, 1),
                    "queue_position": None,
                    "estimated_start": None,
                    "borrowed": start.borrowed,
                },
            )
            for start in starts
        ]
    )
    starts = [start for start in starts if start.job.pk in moved]
    if not starts:
        return []
    # What borrowing jobs were preempted for is taken: they may be preempted again later.
    reclaimed = [start.job.pk for start in starts if start.job.reclaiming]
    if reclaimed:
        Job.objects.filter(preempted_for__in=reclaimed).update(preempted_for=None)
    _hold_on_nodes(starts, cluster)
    replica_ids = _write_replicas(starts)
    _write_allocations(starts, replica_ids, cluster)
    _write_ports(starts, replica_ids)
    return [start.job.pk for start in starts]


def write_waiting(changes: list[Waiting]) -> None:
    """Record each waiting job's state, reason and position where they changed (its
    likely start is the forecast's, written after the pass: ``write_estimates``).

    A new state, or a reason of a new kind, is a transition with an event; a
    reason whose numbers alone changed ("1 has them" → "2 have them") is not.
    Reasons are compared by their English text, which the job row keeps.
    """
    transitions, annotations = [], []
    for change in changes:
        job = change.job
        if (
            job.state == change.state
            and job.state_reason == change.reason.english
            and job.queue_position == change.queue_position
        ):
            continue
        fields = {"queue_position": change.queue_position}
        if job.state != change.state or _kind(job.state_reason) != _kind(change.reason.english):
            transitions.append(
                Transition(
                    job_id=job.pk,
                    from_state=job.state,
                    to_state=change.state,
                    reason=change.reason,
                    old_reason=job.state_reason,
                    fields=fields,
                )
            )
        else:
            reason = change.reason
            annotations.append(
                (job.pk, job.state, reason.english, reason.code, reason.json_params)
                + tuple(fields.values())
            )
    job_transition_many(transitions=transitions)
    update_from_values(
        Job,
        rows=annotations,
        match_fields=["state"],
        set_fields=[*REASON_FIELDS, "queue_position"],
    )


def estimate_rows(changes: list[Waiting], estimates: dict[int, datetime | None]) -> list[tuple]:
    """``(job, state the pass left it in, likely start)`` for each estimate that changed."""
    return [
        (change.job.pk, change.state, estimates.get(change.job.pk))
        for change in changes
        if change.job.estimated_start != estimates.get(change.job.pk)
    ]


def write_estimates(rows: list[tuple]) -> None:
    """The ``estimate_rows``, for the jobs still in that state (the caller holds the pass
    lock, having checked that no later pass has written)."""
    update_from_values(Job, rows=rows, match_fields=["state"], set_fields=["estimated_start"])


def _kind(reason: str) -> str:
    """What a reason is about: the need before the semicolon, numbers aside.

    Every reason puts what is free now after a semicolon ("; 1 has them",
    "; your quota is 8 and 6 are in use"), which changes from pass to pass.
    """
    need = re.split("[;；]", reason, maxsplit=1)[0]
    return re.sub(r"\d+(\.\d+)?", "#", need)


def _start_reason(start: Start, cluster: Cluster) -> Reason:
    if start.slurm_model is not None:
        return Reason("start.slurm", {"model": start.slurm_model})
    parts = []
    for use in start.uses:
        name = cluster.nodes[use.node_pk].name
        if use.cards:
            cards = ", ".join(str(card.index) for card in use.cards)
            parts.append(Reason("start.node_cards", {"node": name, "cards": cards}))
        else:
            parts.append(Reason("start.node", {"node": name}))
    placement = parts[-1]
    for part in reversed(parts[:-1]):
        placement = Reason("start.more", {"first": part, "rest": placement})
    reason = Reason("start.borrowed" if start.borrowed else "start", {"placement": placement})
    if start.away_from_checkpoint:
        nodes = ", ".join(start.away_from_checkpoint)
        reason = Reason("start.away", {"start": reason, "nodes": nodes})
    return reason


def write_borrowing_ended(job_ids: list[int]) -> None:
    """These jobs' owners' quotas hold them now: no longer borrowing (unless being
    preempted already: that stands)."""
    if not job_ids:
        return
    ended = Job.objects.filter(pk__in=job_ids, borrowed=True, preempt_requested_at=None)
    rows = list(ended.values_list("pk", "state"))
    ended.update(borrowed=False)
    JobEvent.objects.bulk_create(
        JobEvent.build(job_id=pk, from_state=state, to_state=state, reason=Reason("borrow.ended"))
        for pk, state in rows
    )


def write_preemptions(preempted: dict[int, int], now: datetime) -> dict[int, int]:
    """Mark each victim as preempted for its job (if it still runs and nobody stopped it);
    the ones marked, to stop (after commit, by execution)."""
    if not preempted:
        return {}
    marked, states = {}, dict(Job.objects.filter(pk__in=preempted).values_list("pk", "state"))
    for victim, beneficiary in preempted.items():
        if Job.objects.filter(
            pk=victim,
            state__in=Job.ACTIVE_STATES,
            borrowed=True,
            preempt_requested_at=None,
            stop_requested_at=None,
        ).update(preempt_requested_at=now, preempted_for_id=beneficiary):
            marked[victim] = beneficiary
    JobEvent.objects.bulk_create(
        JobEvent.build(
            job_id=victim,
            from_state=states[victim],
            to_state=states[victim],
            reason=Reason("preempting", {"job": beneficiary}),
        )
        for victim, beneficiary in marked.items()
    )
    return marked


def _hold_on_nodes(starts: list[Start], cluster: Cluster) -> None:
    node_deltas: dict[int, list[int]] = {}
    card_deltas: dict[int, list[int]] = {}
    for start in starts:
        for use in start.uses:
            delta = node_deltas.setdefault(use.node_pk, [0, 0, 0, 0])
            delta[0] += use.whole_cards
            delta[1] += use.cpu_milli
            delta[2] += use.memory_mib
            delta[3] += use.storage_gib
    for start in starts:
        for use in start.uses:
            for card in use.cards:
                card_pk = cluster.nodes[use.node_pk].cards[card.index].pk
                delta = card_deltas.setdefault(card_pk, [0, 0])
                delta[0] += card.compute_percent
                delta[1] += card.memory_mib
    if not add_to_allocated(nodes=node_deltas, cards=card_deltas, ready_only=True):
        raise NodeChanged


def _write_replicas(starts: list[Start]) -> dict[tuple[int, int], int]:
    """Replica rows for each start (re-used when a job is placed again); ids by (job, index)."""
    existing = {
        (job_id, index): pk
        for pk, job_id, index in Replica.objects.filter(
            job_id__in=[start.job.pk for start in starts]
        ).values_list("pk", "job_id", "index")
    }
    new, moved = [], []
    for start in starts:
        # Slurm-placed: no node until Slurm starts it (``slurm/placed.py`` records it).
        uses = start.uses or [ReplicaUse(None, 0, 0, 0)] * start.replicas
        for index, use in enumerate(uses):
            row = (use.node_pk, [card.index for card in use.cards], start.slurm_model_id)
            pk = existing.get((start.job.pk, index))
            if pk is None:
                new.append((start.job.pk, index, *row))
            else:
                moved.append((pk, *row))
    fields = ["node", "card_indices", "slurm_model"]
    update_from_values(Replica, rows=moved, set_fields=fields)
    created = insert_rows(Replica, fields=["job", "index", *fields], rows=new, returning=True)
    for (job_id, index, *_row), pk in zip(new, created, strict=True):
        existing[job_id, index] = pk
    return existing


def _write_allocations(
    starts: list[Start], replica_ids: dict[tuple[int, int], int], cluster: Cluster
) -> None:
    now = timezone.now()
    uses = [
        (replica_ids[start.job.pk, index], use)
        for start in starts
        for index, use in enumerate(start.uses)
    ]
    created = insert_rows(
        Allocation,
        fields=[
            "replica",
            "node",
            "gpu_count",
            "cpu_milli",
            "memory_mib",
            "storage_gib",
            "created_at",
        ],
        rows=[
            (
                replica_id,
                use.node_pk,
                use.whole_cards,
                use.cpu_milli,
                use.memory_mib,
                use.storage_gib,
                now,
            )
            for replica_id, use in uses
        ],
        returning=True,
    )
    insert_rows(
        CardAllocation,
        fields=["allocation", "card", "compute_percent", "memory_mib"],
        rows=[
            (
                allocation_id,
                cluster.nodes[use.node_pk].cards[card.index].pk,
                card.compute_percent,
                card.memory_mib,
            )
            for allocation_id, (_replica_id, use) in zip(created, uses, strict=True)
            for card in use.cards
        ],
    )


def _write_ports(starts: list[Start], replica_ids: dict[tuple[int, int], int]) -> None:
    """A host port per job port per replica; the rendezvous port (no job port) on replica 0."""
    rows = []
    for start in starts:
        host_ports = iter(start.host_ports)
        for index in range(start.replicas):
            replica_id = replica_ids[start.job.pk, index]
            if index == 0 and start.replicas > 1:
                rows.append((replica_id, None, next(host_ports)))
            rows.extend((replica_id, port, next(host_ports)) for port in start.job.ports)
    insert_rows(PortAllocation, fields=["replica", "job_port", "host_port"], rows=rows)
