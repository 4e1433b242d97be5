"""A pass costs a fixed number of queries, however many jobs wait or start."""

import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.models import Job, JobPort
from jobs.scheduler import run_pass
from resources.models import Quota
from tests.factories import GpuModelFactory, JobFactory, NodeFactory, UserFactory
from tests.scheduling import assert_invariants, run_job

pytestmark = pytest.mark.django_db


def submit_mix(count: int, model, users, rng: random.Random) -> None:
    for number in range(count):
        kind = rng.choice(["gpu", "vgpu", "gang", "cpu"])
        fields = {
            "owner": users[number % len(users)],
            "max_runtime_minutes": rng.choice([None, 30]),
        }
        if kind == "vgpu":
            fields.update(
                resource_kind="vgpu",
                gpu_model=model,
                gpu_count=1,
                vgpu_compute_percent=30,
                vgpu_memory_mib=2048,
            )
        elif kind == "gang":
            fields.update(gpu_model=model, gpu_count=4, task_mode="distributed", replicas=2)
        elif kind == "cpu":
            fields.update(resource_kind="cpu", gpu_model=None, gpu_count=0, cpu_milli=4_000)
        else:
            fields.update(gpu_model=model, gpu_count=rng.choice([1, 2, 8]))
        job = JobFactory(**fields)
        if number % 5 == 0:
            JobPort.objects.create(job=job, port=8080)


def pass_queries() -> int:
    with CaptureQueriesContext(connection) as queries:
        run_pass()
    return len(queries)


def test_a_pass_costs_the_same_queries_for_40_or_160_jobs():
    v100 = GpuModelFactory(name="V100")
    NodeFactory.create_batch(4, gpu_model=v100)
    users = [UserFactory(username=f"user{i}") for i in range(3)]
    Quota.objects.create(user=users[0], resource=Quota.Resource.GPU, gpu_model=v100, limit=6)
    rng = random.Random(4)

    submit_mix(40, v100, users, rng)
    small = pass_queries()
    for job in Job.objects.filter(state=Job.State.STARTING):
        run_job(job, started_minutes_ago=5)
    submit_mix(120, v100, users, rng)
    large = pass_queries()

    assert Job.objects.filter(state__in=Job.WAITING_STATES).count() > 100
    # 5 of them the fair share's (billing/fair_share.py); 4 the forecast's after the pass
    # (its own savepoint, the pass lock again, the estimates: jobs/scheduler/run.py)
    assert large <= small + 2 <= 50
    assert_invariants()


def test_a_pass_with_nothing_waiting_is_a_handful_of_queries():
    NodeFactory.create_batch(3)
    assert pass_queries() <= 4  # savepoint, lock, the waiting jobs, release
