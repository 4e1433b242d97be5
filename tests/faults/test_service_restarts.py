"""Redis and PostgreSQL go away under a working platform and come back."""

from __future__ import annotations

import time

import pytest

from jobs.models import Job, ReplicaAttempt
from tests.faults.recovery import (
    UNTIL_LET_END,
    DatabaseOutage,
    PrivateRedis,
    SideSession,
    Site,
    assert_recovered,
    let_end,
    marked_job,
    needs_postgresql,
    states_are,
)
from tests.support.waiting import wait_until, within

pytestmark = [pytest.mark.integration, pytest.mark.faults, needs_postgresql]
RUNNING_OR_DONE = (Job.State.RUNNING, *Job.FINAL_STATES)


@pytest.fixture
def redis(tmp_path):
    server = PrivateRedis(tmp_path).start()
    yield server
    server.stop()


def test_redis_restarted_empty_loses_queued_work_and_the_platform_catches_up(
    agent_env, tmp_path, redis
):
    """Redis crashes while a pass is placing a job, and comes back empty 10 s later.

    Bounds, from Redis answering again: an exit that happened meanwhile is reported and a job
    submitted meanwhile starts within 20 s; the job whose start message could not be sent
    (the pass committed while Redis was down) is started by its node's agent within 40 s
    (the agent starts a pending attempt it never heard of once it is 30 s old).
    """
    site = Site.start(agent_env, tmp_path, env={"REDIS_URL": redis.url})
    try:
        exits_meanwhile = marked_job(UNTIL_LET_END)
        wait_until(states_are([exits_meanwhile], [Job.State.RUNNING]), what="it to run")
        side = SideSession()
        try:
            side.execute("SELECT 1 FROM resources_node WHERE id = %s FOR UPDATE", [site.node.pk])
            caught = marked_job()
            wait_until(side.pass_blocked, what="a pass placing the job")
            redis.kill9()
            down_at = time.monotonic()
        finally:
            side.release()
            side.close()
        # The pass commits, creates the attempt, and cannot send it to the agent.
        wait_until(
            lambda: f"launching job {caught.pk} failed" in site.worker.logs(),
            what="the launch to fail",
            logs=site.logs,
        )
        submitted_meanwhile = marked_job()
        time.sleep(1)  # polls the agent had taken before the crash are done
        let_end(exits_meanwhile)
        time.sleep(max(2.0, 10 - (time.monotonic() - down_at)))
        assert states_are([exits_meanwhile], [Job.State.RUNNING])()  # nobody could poll
        assert ReplicaAttempt.objects.get(replica__job=caught).state == "pending"
        redis.start()

        within(20, states_are([exits_meanwhile], Job.FINAL_STATES), what="the exit", logs=site.logs)
        within(
            20, states_are([submitted_meanwhile], RUNNING_OR_DONE), what="the start", logs=site.logs
        )
        within(40, states_are([caught], RUNNING_OR_DONE), what="the lost start", logs=site.logs)
        jobs = [exits_meanwhile, caught, submitted_meanwhile]
        wait_until(states_are(jobs, Job.FINAL_STATES), what="every job to end", logs=site.logs)
        assert_recovered(jobs)
    finally:
        site.stop()


def test_database_gone_for_10_seconds_then_back_loses_nothing_and_bills_once(agent_env, tmp_path):
    """PostgreSQL cuts every connection (one in the middle of a pass) and refuses new ones
    for 10 s, as a restart does.

    Bounds, from the database taking connections again: a replica that exited meanwhile is
    reported within 15 s (with its own end time: billing stops there), and the job whose
    pass was cut starts within 20 s (beat queues a pass every 5 s).
    """
    site = Site.start(agent_env, tmp_path)
    try:
        exits_meanwhile = marked_job(UNTIL_LET_END)
        wait_until(states_are([exits_meanwhile], [Job.State.RUNNING]), what="it to run")
        side = SideSession()  # its lock holds a pass mid-way; the outage cuts both sessions
        side.execute("SELECT 1 FROM resources_node WHERE id = %s FOR UPDATE", [site.node.pk])
        caught = marked_job()
        wait_until(side.pass_blocked, what="a pass placing the job")
        outage = DatabaseOutage()
        try:
            assert (
                outage.begin() >= 2
            )  # the pass and the lock holder, with the platform's idle ones
            down_at = time.monotonic()
            let_end(exits_meanwhile)
            time.sleep(max(0.0, 10 - (time.monotonic() - down_at)))
        finally:
            outage.end()
        assert states_are([exits_meanwhile], [Job.State.RUNNING])()  # nobody could report it
        assert states_are([caught], Job.WAITING_STATES)()  # the cut pass wrote nothing

        within(15, states_are([exits_meanwhile], Job.FINAL_STATES), what="the exit", logs=site.logs)
        within(20, states_are([caught], RUNNING_OR_DONE), what="the cut pass's job", logs=site.logs)
        jobs = [exits_meanwhile, caught]
        wait_until(states_are(jobs, Job.FINAL_STATES), what="every job to end", logs=site.logs)
        assert_recovered(jobs)
    finally:
        site.stop()
