"""The accrual task on a real Celery worker: two runs at once, and a worker killed mid-run."""

import os
import re
import signal
from datetime import timedelta
from decimal import Decimal

import psycopg
import pytest
from django.db import connection

from accounting.services import account_enable_billing, usage_accrue
from accounting.tasks import accrue_usage
from billing.accounts import account_for_user
from billing.models import UsageRecord
from tests.billing_cast import (
    T0,
    attempt_of,
    job_on,
    ledger,
    seconds_covered,
    set_price,
    v100_model,
)
from tests.conftest import database_url_for_subprocess
from tests.factories import UserFactory
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


class AccountLock:
    """Another connection that holds an account's row, so a run can be caught in the middle.

    PostgreSQL only: SQLite has no row locks, and holding its whole file would stall
    every other task of the worker. There the runs just meet as they come.
    """

    def __init__(self, account_id: int) -> None:
        self.postgres = connection.vendor == "postgresql"
        if self.postgres:
            self.conn = psycopg.connect(database_url_for_subprocess())
            self.conn.execute(
                "SELECT 1 FROM billing_account WHERE id = %s FOR UPDATE", [account_id]
            )

    def waiting_backends(self) -> int:
        """Sessions of the test database blocked on a lock."""
        # Activity is snapshotted once per transaction, and this one stays open.
        self.conn.execute("SELECT pg_stat_clear_snapshot()")
        return self.conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'"
        ).fetchone()[0]

    def release(self) -> None:
        if self.postgres:
            self.conn.rollback()
            self.conn.close()


def paid_job_of(username: str, admin_user, v100, minutes: int = 10):
    user = UserFactory(username=username)
    account = account_for_user(user=user)
    account_enable_billing(account=account, actor=admin_user)
    job = job_on(v100, owner=user)
    attempt_of(job, started=T0, ended=T0 + timedelta(minutes=minutes))
    return account, job


def accruals_in_log(log, outcome: str) -> int:
    """Lines of the worker log like ``Task accounting.tasks.accrue_usage[<id>] received``."""
    return len(re.findall(rf"accrue_usage\[[0-9a-f-]+\] {outcome}", log.read_text()))


@pytest.fixture
def v100(transactional_db):
    model = v100_model()
    set_price(model, "12.00")
    return model


def test_two_runs_at_once_bill_each_second_once(start_celery_worker, tmp_path, admin_user, v100):
    account, job = paid_job_of("payer", admin_user, v100, minutes=30)
    lock = AccountLock(account.pk)
    try:
        start_celery_worker(queues="celery", concurrency=2)
        accrue_usage.delay()
        accrue_usage.delay()
        log = tmp_path / "worker-0.log"
        wait_until(lambda: accruals_in_log(log, "received") >= 2, what="two tasks received")
        if lock.postgres:
            wait_until(
                lambda: lock.waiting_backends() >= 2, what="both runs waiting on the account"
            )
    finally:
        lock.release()
    wait_until(
        lambda: accruals_in_log(log, "succeeded") >= 2, what="both runs done", logs=log.read_text
    )

    rows = ledger(job=job)
    assert seconds_covered(rows) == 30 * 60
    assert len({row.period_start for row in rows}) == len(rows) == 30
    assert sum(row.amount for row in rows) == Decimal(6)


def test_a_worker_killed_mid_run_leaves_each_second_billed_once_after_the_rerun(
    start_celery_worker, tmp_path, admin_user, v100
):
    first_account, first_job = paid_job_of("first", admin_user, v100)
    second_account, second_job = paid_job_of("second", admin_user, v100)
    assert first_account.pk < second_account.pk  # accrued in account order
    lock = AccountLock(second_account.pk)
    try:
        worker = start_celery_worker(queues="celery", concurrency=1)
        accrue_usage.delay()
        log = tmp_path / "worker-0.log"
        wait_until(lambda: accruals_in_log(log, "received") >= 1, what="task received")
        if lock.postgres:
            # The first account is committed, the second is in progress when the worker dies.
            wait_until(lambda: ledger(job=first_job), what="first account accrued")
            wait_until(lambda: lock.waiting_backends() >= 1, what="second account waiting")
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
    finally:
        lock.release()
    if lock.postgres:
        assert not ledger(job=second_job), "the killed run's open transaction was rolled back"

    usage_accrue()
    usage_accrue()

    for job in (first_job, second_job):
        rows = ledger(job=job)
        assert seconds_covered(rows) == 600
        assert len({row.period_start for row in rows}) == len(rows) == 10
    assert UsageRecord.objects.count() == 20
