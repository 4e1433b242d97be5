"""The central Celery worker, and the node agent, killed with -9 mid-work, then restarted."""

from __future__ import annotations

import json

import pytest

from accounting.services import account_enable_billing
from accounting.tasks import accrue_usage
from billing.accounts import account_for_user
from billing.models import AttemptAccrual, UsageRecord
from jobs.execution.files import attempt_dir
from jobs.models import Job, JobEvent, Replica, ReplicaAttempt
from tests.billing_cast import set_price
from tests.factories import UserFactory
from tests.faults.recovery import (
    UNTIL_LET_END,
    SideSession,
    Site,
    assert_nothing_held,
    assert_recovered,
    let_end,
    marked_job,
    needs_postgresql,
    states_are,
)
from tests.support.processes import celery_idle
from tests.support.waiting import wait_until, within

pytestmark = [pytest.mark.integration, pytest.mark.faults, needs_postgresql]


@pytest.fixture
def site(agent_env, tmp_path):
    site = Site.start(agent_env, tmp_path)
    yield site
    site.stop()


def test_worker_killed_between_a_committed_pass_and_the_launch_starts_the_replica_once(
    site,
):
    """Bound: a job left in ``starting`` with no attempt by a killed worker runs within 30 s
    of the restarted worker being ready (a launch is retried once the job sat 10 s)."""
    worker = site.worker
    side = SideSession()
    try:
        # The pass may commit; the launch then waits to create the job's attempt.
        side.execute("LOCK TABLE jobs_replicaattempt IN SHARE MODE")
        job = marked_job()
        (launch,) = wait_until(
            lambda: side.blocked('INSERT INTO "jobs_replicaattempt"'), what="the launch"
        )
        worker.kill9()
    finally:
        side.release()
    wait_until(lambda: not side.alive(launch), what="the killed launch's session to end")
    side.close()
    job.refresh_from_db()
    assert job.state == Job.State.STARTING
    assert not ReplicaAttempt.objects.filter(replica__job=job).exists()

    worker.start().wait_ready()
    within(30, states_are([job], Job.FINAL_STATES), what="the job to run", logs=worker.logs)
    assert_recovered([job])


def test_worker_killed_in_the_middle_of_a_pass_leaves_nothing_and_the_next_pass_starts_all(site):
    """Bound: jobs a killed pass was starting run within 20 s of the restarted worker being
    ready (beat queues a pass every 5 s); the killed pass's writes are all rolled back."""
    worker, agent = site.worker, site.agent
    node = site.node
    side = SideSession()
    try:
        # Held where the pass has moved its jobs to starting and goes on to the node columns.
        side.execute("SELECT 1 FROM resources_node WHERE id = %s FOR UPDATE", [node.pk])
        jobs = [marked_job("sleep 1") for _ in range(3)]
        (killed_pass,) = wait_until(side.pass_blocked, what="a pass waiting on the node")
        worker.kill9()
    finally:
        side.release()
    wait_until(lambda: not side.alive(killed_pass), what="the killed pass's session to end")
    side.close()
    assert states_are(jobs, Job.WAITING_STATES)()
    assert not Replica.objects.filter(job__in=jobs).exists()
    assert not JobEvent.objects.filter(job__in=jobs, to_state=Job.State.STARTING).exists()
    assert_nothing_held(jobs)

    worker.start().wait_ready()
    started = (Job.State.RUNNING, *Job.FINAL_STATES)
    within(20, states_are(jobs, started), what="the jobs to start", logs=worker.logs)
    wait_until(states_are(jobs, Job.FINAL_STATES), what="the jobs to end", logs=agent.logs)
    assert_recovered(jobs)


def test_worker_killed_mid_accrual_leaves_no_row_and_the_next_run_bills_each_second_once(
    site, admin_user
):
    """Bound: the first accrual run after the restart (beat sends one every 60 s; here it is
    sent at once) bills every second of every attempt exactly once, within 20 s; the killed
    run's open transaction wrote nothing."""
    worker, agent = site.worker, site.agent
    set_price(None, "3.60")  # per core-hour: 0.001 a core-second
    owners = [UserFactory(username=name) for name in ("first", "second")]
    accounts = [account_for_user(user=owner) for owner in owners]
    for account in accounts:
        account_enable_billing(account=account, actor=admin_user)
    jobs = [marked_job("sleep 2", owner=owner) for owner in owners for _ in range(2)]
    wait_until(states_are(jobs, Job.FINAL_STATES), what="the jobs to run", logs=agent.logs)
    first_jobs, second_jobs = jobs[:2], jobs[2:]

    side = SideSession()
    try:
        # Accounts are accrued in id order, each in its own transaction.
        side.execute("SELECT 1 FROM billing_account WHERE id = %s FOR UPDATE", [accounts[1].pk])
        accrue_usage.delay()
        wait_until(lambda: ledger_of(first_jobs), what="the first account to be accrued")
        (killed_run,) = wait_until(lambda: side.blocked("billing_account"), what="the second")
        worker.kill9()
    finally:
        side.release()
    wait_until(lambda: not side.alive(killed_run), what="the killed run's session to end")
    side.close()
    assert not ledger_of(second_jobs)
    first_rows = ledger_of(first_jobs)

    worker.start().wait_ready()
    accrue_usage.delay()
    within(20, lambda: ledger_of(second_jobs), what="the next run to bill", logs=worker.logs)
    wait_until(lambda: not AttemptAccrual.objects.filter(closed=False).exists(), what="closed")
    assert ledger_of(first_jobs) == first_rows  # nothing of the first account written again
    assert_recovered(jobs, accrued=True)
    rows = UsageRecord.objects.filter(job__in=jobs)
    assert all(row.billed and row.amount == row.unit_seconds / 1000 for row in rows)


def ledger_of(jobs: list[Job]) -> list[tuple]:
    return list(
        UsageRecord.objects.filter(job__in=jobs)
        .order_by("pk")
        .values_list("pk", "attempt_id", "period_start", "period_end")
    )


def exit_of(job: Job) -> dict | None:
    attempt = ReplicaAttempt.objects.select_related("node").get(replica__job=job)
    path = attempt_dir(attempt.node.name, attempt.pk) / "exit.json"
    return json.loads(path.read_text()) if path.exists() else None


def test_agent_killed_during_runs_reports_each_exit_once_at_its_real_time_after_restart(site):
    """Bound: within 10 s of the restarted agent being ready, a replica that exited while the
    agent was down is reported (with its own end time, so billing stops there), one still
    running carries on, and a job placed while the agent was down starts."""
    agent = site.agent
    ends_early, runs_on = marked_job(UNTIL_LET_END), marked_job(UNTIL_LET_END)
    wait_until(states_are([ends_early, runs_on], [Job.State.RUNNING]), what="both to run")
    agent.kill9()

    let_end(ends_early)
    placed_meanwhile = marked_job()
    wait_until(lambda: exit_of(ends_early), what="the first replica to exit on its own")
    wait_until(states_are([placed_meanwhile], [Job.State.STARTING]), what="the pass to place it")
    wait_until(
        lambda: celery_idle(site.worker.log_path, ["celery"]), what="the central worker idle"
    )
    # Nobody watched: the exit is not reported, the start waits in the node's queue.
    assert states_are([ends_early, runs_on], [Job.State.RUNNING])()
    assert not ReplicaAttempt.objects.filter(
        replica__job=placed_meanwhile, state=ReplicaAttempt.State.RUNNING
    ).exists()

    agent.start()
    jobs = [ends_early, runs_on, placed_meanwhile]
    within(10, states_are([ends_early], Job.FINAL_STATES), what="the exit", logs=agent.logs)
    within(
        10,
        states_are([placed_meanwhile], [Job.State.RUNNING, *Job.FINAL_STATES]),
        what="the start",
        logs=agent.logs,
    )
    assert Job.objects.get(pk=runs_on.pk).state == Job.State.RUNNING
    let_end(runs_on)
    wait_until(states_are(jobs, Job.FINAL_STATES), what="every job to end", logs=agent.logs)
    assert_recovered(jobs)
    attempt = ReplicaAttempt.objects.get(replica__job=ends_early)
    assert attempt.ended_at.isoformat() == exit_of(ends_early)["ended_at"]
