"""A real Celery worker runs tasks sent through the configured broker."""

import time

import pytest

from jobs.tasks import schedule_pass

pytestmark = pytest.mark.integration


def test_real_worker_runs_a_scheduling_pass(start_celery_worker, tmp_path):
    start_celery_worker(queues="celery")
    schedule_pass.delay()
    log = tmp_path / "worker-0.log"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "schedule_pass" not in log.read_text():
        time.sleep(0.2)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "succeeded" not in log.read_text():
        time.sleep(0.2)
    assert "succeeded" in log.read_text(), log.read_text()


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
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _count_succeeded(log) < 1:
        time.sleep(0.1)
    time.sleep(0.5)
    first = _worker_backends()
    assert first, "the worker kept no connection after its task"
    for _ in range(4):
        schedule_pass.delay()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _count_succeeded(log) < 5:
        time.sleep(0.1)
    assert _count_succeeded(log) == 5, log.read_text()
    time.sleep(0.5)
    assert _worker_backends().keys() == first.keys()
