"""Helpers for scheduler tests: a test-only executor and the invariants every state keeps.

Until the node agent runs jobs, ``run_job`` / ``end_job`` play its part: they
move a started job on with ``job_transition`` and give back what it holds with
``job_release``, as the execution engine does when a job ends.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from jobs.execution.settle import job_settle
from jobs.lifecycle.release import job_release
from jobs.lifecycle.transitions import job_transition
from jobs.models import Job, PortAllocation, Replica, ReplicaAttempt
from jobs.quota_usage import quota_usage_for
from jobs.scheduler import run_pass
from resources.models import Allocation, CardAllocation, GpuCard, Node
from resources.quota import quota_limits_for


def run_job(job: Job, *, started_minutes_ago: int = 0) -> Job:
    """Mark a starting job running (as the agent does once its replicas run)."""
    job.refresh_from_db()
    started_at = timezone.now() - timedelta(minutes=started_minutes_ago)
    assert job_transition(
        job=job, to_state=Job.State.RUNNING, reason="running", started_at=started_at
    )
    return job


def end_job(job: Job, state: str = Job.State.SUCCEEDED) -> Job:
    """End an active job and release what it holds."""
    job.refresh_from_db()
    assert job_transition(job=job, to_state=state, reason="ended")
    job_release(job=job)
    return job


def replicas_end(job: Job, state: str) -> None:
    """What the executor reports once the job's replicas have ended (``state``, each),
    then settle: how a job being preempted ends, whatever ended it."""
    for replica in Replica.objects.filter(job=job):
        ReplicaAttempt.objects.get_or_create(
            replica=replica,
            number=job.attempt,
            defaults={"node_id": replica.node_id, "state": state},
        )
    job_settle(job=job)


def states(jobs: list[Job]) -> list[str]:
    by_pk = dict(Job.objects.filter(pk__in=[j.pk for j in jobs]).values_list("pk", "state"))
    return [by_pk[job.pk] for job in jobs]


def fresh(job: Job) -> Job:
    return Job.objects.get(pk=job.pk)


def settle(passes: int = 3) -> None:
    for _ in range(passes):
        run_pass()


@contextmanager
def consistent_snapshot():
    """Read in one snapshot while others write (PostgreSQL REPEATABLE READ)."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


def assert_invariants() -> None:
    """Nothing is over-committed, and every column agrees with the rows that hold it."""
    for node in Node.objects.all():
        held = Allocation.objects.filter(node=node).aggregate(
            gpu=Sum("gpu_count"),
            cpu=Sum("cpu_milli"),
            memory=Sum("memory_mib"),
            storage=Sum("storage_gib"),
        )
        assert node.gpu_allocated == (held["gpu"] or 0) <= node.gpu_count, node
        assert node.cpu_allocated_milli == (held["cpu"] or 0) <= node.cpu_milli, node
        assert node.memory_allocated_mib == (held["memory"] or 0) <= node.memory_mib, node
        assert node.storage_allocated_gib == (held["storage"] or 0) <= node.storage_gib, node
    for card in GpuCard.objects.all():
        held = CardAllocation.objects.filter(card=card).aggregate(
            compute=Sum("compute_percent"), memory=Sum("memory_mib")
        )
        assert card.compute_allocated_percent == (held["compute"] or 0) <= 100, card
        assert card.memory_allocated_mib == (held["memory"] or 0) <= card.memory_mib, card
    active = Job.objects.filter(state__in=Job.ACTIVE_STATES)
    # A replica Slurm has yet to place (no node: ``lookahead.py``) holds nothing yet.
    placed_replicas = Count("replica_set", filter=Q(replica_set__node__isnull=False))
    for job in active.annotate(placed=Count("replica_set__allocation"), nodes=placed_replicas):
        assert job.placed == job.nodes, f"{job} holds {job.placed} of {job.nodes} placed replicas"
        unplaced = job.replicas - job.nodes
        assert unplaced == 0 or job.state == Job.State.STARTING, f"{job} runs without a node"
    waiting = Job.objects.filter(state__in=Job.WAITING_STATES)
    assert not Allocation.objects.filter(replica__job__in=waiting).exists()
    assert not PortAllocation.objects.filter(replica__job__in=waiting).exists()
    owners = set(active.values_list("owner_id", flat=True))
    limits = quota_limits_for(user_ids=owners)
    for owner, usage in quota_usage_for(user_ids=owners).items():
        for key, limit in limits[owner].items():
            assert usage[key] <= limit, f"user {owner} holds {usage[key]} {key}, quota {limit}"


def assert_borrowing_invariants() -> None:
    """Only preemptible jobs borrow, and only while they run; a job is preempted only for
    one that does not borrow (no cycles); a victim borrows until it ends (one that ended
    in its grace keeps its mark: ``settle``), and a requeued one has lost the mark."""
    assert not Job.objects.filter(borrowed=True, preemptible=False).exists()
    assert not Job.objects.filter(state__in=Job.WAITING_STATES, borrowed=True).exists()
    victims = Job.objects.filter(preempt_requested_at__isnull=False)
    assert not victims.filter(state__in=Job.ACTIVE_STATES, borrowed=False).exists()
    assert not victims.filter(state__in=Job.WAITING_STATES).exists()
    assert not Job.objects.filter(preempted_for__borrowed=True).exists()
