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
