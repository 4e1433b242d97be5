"""A real Celery worker runs tasks sent through the configured broker."""

import pytest

from jobs.tasks import schedule_pass
from tests.support.processes import celery_idle
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


def test_real_worker_runs_a_scheduling_pass(start_celery_worker, tmp_path):
    start_celery_worker(queues="celery")
    schedule_pass.delay()
    log = tmp_path / "worker-0.log"
    wait_until(
        lambda: "jobs.tasks.schedule_pass" in log.read_text() and _count_succeeded(log) == 1,
        what="the pass to succeed",
        timeout=30,
        logs=log.read_text,
    )


def _worker_backends() -> dict[int, str]:
    """Other sessions on the test database: pid → state."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, state FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return dict(cursor.fetchall())


def _count_succeeded(log) -> int:
    return log.read_text().count("succeeded in")


def test_tasks_reuse_the_workers_database_connection(start_celery_worker, tmp_path):
    """Celery's Django fix-up would close it after every task: a new server process each."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("reads PostgreSQL's pg_stat_activity; CI runs on PostgreSQL")
    start_celery_worker(queues="celery", concurrency=1)
    log = tmp_path / "worker-0.log"
    schedule_pass.delay()
    wait_until(lambda: _count_succeeded(log) == 1, what="the first pass", logs=log.read_text)
    first = _worker_backends()
    assert first, "the worker kept no connection after its task"
    for _ in range(4):
        schedule_pass.delay()
    wait_until(lambda: _count_succeeded(log) == 5, what="four more passes", logs=log.read_text)
    assert celery_idle(log, ["celery"]), log.read_text()
    assert _worker_backends().keys() == first.keys()
