"""Borrowing and preemption tests' world: a V100 model, ada (quota 1 card) and bob (4).

The fixtures are a plugin (``tests/conftest.py``); a module's own fixture of the same name
wins. ``borrowing`` and ``preempted_off`` are imported.
"""

from __future__ import annotations

import pytest

from jobs.execution.settle import job_settle
from jobs.models import Job, Replica, ReplicaAttempt
from jobs.scheduler import run_pass
from tests.factories import GpuModelFactory, JobFactory, QuotaFactory, UserFactory
from tests.scheduling import fresh, run_job


@pytest.fixture
def v100():
    return GpuModelFactory(name="V100")


@pytest.fixture
def ada(v100):
    """A user whose quota is 1 V100 card."""
    user = UserFactory(username="ada")
    QuotaFactory(user=user, gpu_model=v100, limit=1)
    return user


@pytest.fixture
def bob(v100):
    """A user whose quota is 4 V100 cards."""
    user = UserFactory(username="bob")
    QuotaFactory(user=user, gpu_model=v100, limit=4)
    return user


def borrowing(owner, v100, *, cards: int, minutes_ago: int = 0) -> Job:
    """A preemptible job of ``owner`` beyond their quota, started borrowing and running."""
    job = JobFactory(owner=owner, gpu_model=v100, gpu_count=cards, preemptible=True)
    run_pass()
    job = fresh(job)
    assert (job.state, job.borrowed) == (Job.State.STARTING, True), job.state_reason
    return run_job(job, started_minutes_ago=minutes_ago)


def preempted_off(victim: Job) -> Job:
    """What the agent and settle do with a preempted job: its attempt ends stopped."""
    victim = fresh(victim)
    replica = Replica.objects.get(job=victim)
    ReplicaAttempt.objects.create(
        replica=replica, number=victim.attempt, node=replica.node, state="stopped"
    )
    job_settle(job=Job.objects.select_for_update().get(pk=victim.pk))
    return fresh(victim)
