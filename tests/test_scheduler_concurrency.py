"""Real concurrency on PostgreSQL: passes, submissions and releases at once never over-allocate.

Threads each hold their own database connection; the second test runs the
passes in the processes of a real Celery worker. SQLite is the single-user
embedded database (its transactions begin IMMEDIATE, one writer at a time), so
these tests need the PostgreSQL the deployment and CI use.
"""

import random
import threading
import time

import pytest
from django.db import connection

from jobs.lifecycle.pass_requests import schedule_soon
from jobs.models import Job, JobPort
from jobs.scheduler import run_pass
from jobs.tasks import schedule_pass
from resources.models import Quota
from tests.factories import GpuModelFactory, NodeFactory, ProjectFactory, UserFactory
from tests.scheduling import assert_invariants, consistent_snapshot, end_job, run_job
from tests.support.processes import celery_idle
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.skipif(
        "postgresql" not in connection.settings_dict["ENGINE"],
        reason="real concurrency needs PostgreSQL (SQLite has one writer at a time)",
    ),
]


def in_thread(work, errors: list) -> threading.Thread:
    def run() -> None:
        try:
            work()
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def job_kwargs(model, rng: random.Random) -> dict:
    kind = rng.choice(["gpu", "gpu", "vgpu", "gang"])
    common = {"gpu_model": model, "cpu_milli": 2_000, "memory_mib": 4096, "command": "true"}
    if kind == "vgpu":
        return {
            **common,
            "resource_kind": "vgpu",
            "gpu_count": 1,
            "vgpu_compute_percent": rng.choice([20, 30, 50]),
            "vgpu_memory_mib": 2048,
        }
    if kind == "gang":
        return {
            **common,
            "resource_kind": "gpu",
            "gpu_count": 2,
            "task_mode": "distributed",
            "replicas": 2,
        }
    return {**common, "resource_kind": "gpu", "gpu_count": rng.choice([1, 2, 4])}


def cluster_and_users(*, nodes: int, users: int, quota: int):
    """V100 nodes of 8 cards, and projects of users each with a V100 card quota."""
    v100 = GpuModelFactory(name="V100")
    NodeFactory.create_batch(nodes, gpu_model=v100, gpu_count=8)
    projects = [ProjectFactory(owner=UserFactory(username=f"user{i}")) for i in range(users)]
    for project in projects:
        Quota.objects.create(
            user=project.owner, resource=Quota.Resource.GPU, gpu_model=v100, limit=quota
        )
    return v100, projects


def test_passes_submissions_and_releases_at_once_never_over_allocate(transactional_db):
    v100, projects = cluster_and_users(nodes=4, users=3, quota=10)
    errors: list = []
    submitted = threading.Event()

    def submit(seed: int) -> None:
        rng = random.Random(seed)
        for number in range(40):
            project = projects[number % len(projects)]
            job = Job.objects.create(
                owner=project.owner,
                project=project,
                name=f"s{seed}-{number}",
                **job_kwargs(v100, rng),
            )
            if rng.random() < 0.2:
                JobPort.objects.create(job=job, port=8888)

    def schedule() -> None:
        while not submitted.is_set():
            run_pass()
            with consistent_snapshot():
                assert_invariants()

    def finish(seed: int) -> None:
        rng = random.Random(seed)
        while not submitted.is_set():
            active = list(Job.objects.filter(state__in=Job.ACTIVE_STATES).order_by("?")[:2])
            for job in active:
                if job.state == Job.State.STARTING:
                    run_job(job)
                elif rng.random() < 0.5:
                    end_job(job)
            time.sleep(0.01)

    workers = [in_thread(lambda s=s: submit(s), errors) for s in range(3)]
    others = [in_thread(schedule, errors) for _ in range(3)] + [
        in_thread(lambda: finish(7), errors)
    ]
    for thread in workers:
        thread.join()
    submitted.set()
    for thread in others:
        thread.join()

    assert not errors, errors
    assert Job.objects.count() == 120
    run_pass()
    assert_invariants()
    assert Job.objects.filter(state__in=Job.ACTIVE_STATES).exists()


@pytest.mark.integration
def test_a_worker_of_several_processes_admits_exactly_the_quota(start_celery_worker, tmp_path):
    v100, projects = cluster_and_users(nodes=5, users=4, quota=8)
    start_celery_worker(queues="celery", concurrency=3)
    log = tmp_path / "worker-0.log"

    for number in range(100):
        project = projects[number % len(projects)]
        Job.objects.create(
            owner=project.owner,
            project=project,
            name=f"j{number}",
            gpu_model=v100,
            resource_kind="gpu",
            gpu_count=1,
            cpu_milli=1_000,
            memory_mib=1024,
            command="true",
        )
        schedule_soon()  # outside a transaction: sent at once, as after a submit commits
        if number % 10 == 0:
            schedule_pass.delay()

    def settled() -> bool:
        starting = Job.objects.filter(state=Job.State.STARTING).count()
        explained = Job.objects.filter(state=Job.State.QUOTA_WAIT).exclude(state_reason="")
        return starting == 32 and explained.count() == 68

    wait_until(settled, what="32 started and 68 told why they wait", logs=log.read_text)
    schedule_pass.delay()
    wait_until(lambda: celery_idle(log, ["celery"]), what="a later pass", logs=log.read_text)
    assert Job.objects.filter(state=Job.State.STARTING).count() == 32
    assert Job.objects.filter(state=Job.State.QUOTA_WAIT).count() == 68
    assert_invariants()
