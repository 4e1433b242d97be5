"""The reporting services and what a job does when its attempts end (no processes here)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.execution import launch
from jobs.execution.nodes import node_heartbeat, nodes_check_heartbeats
from jobs.execution.report import attempt_ended, attempt_running
from jobs.models import Job, JobEvent, PortAllocation, Replica, ReplicaAttempt
from resources.models import Node, SiteSettings
from tests.agent_support import cpu_job, make_node

State = ReplicaAttempt.State
pytestmark = pytest.mark.django_db


def running_job(replicas: int = 1, **fields) -> tuple[Job, list[ReplicaAttempt]]:
    if replicas > 1:
        fields.update(task_mode="distributed", replicas=replicas)
    job = cpu_job("true", state=Job.State.STARTING, attempt=1, **fields)
    attempts = []
    for index in range(replicas):
        node = make_node()
        replica = Replica.objects.create(job=job, index=index, node=node)
        attempts.append(ReplicaAttempt.objects.create(replica=replica, number=1, node=node))
    return job, attempts


def start(*attempts: ReplicaAttempt) -> None:
    for attempt in attempts:
        attempt_running(attempt_id=attempt.pk, started_at=timezone.now(), pid=1)


def end(attempt: ReplicaAttempt, state: str, **fields) -> bool:
    fields.setdefault("exit_code", 0 if state == State.SUCCEEDED else 1)
    return attempt_ended(attempt_id=attempt.pk, state=state, ended_at=timezone.now(), **fields)


def state_of(job: Job) -> Job:
    return Job.objects.get(pk=job.pk)


def test_job_runs_only_when_every_replica_has_started():
    job, (first, second) = running_job(replicas=2)
    start(first)
    assert state_of(job).state == Job.State.STARTING
    start(second)
    job = state_of(job)
    assert job.state == Job.State.RUNNING and job.started_at is not None


def test_reports_are_idempotent():
    job, (attempt,) = running_job()
    start(attempt)
    assert not attempt_running(attempt_id=attempt.pk, started_at=timezone.now())
    assert end(attempt, State.SUCCEEDED)
    events = JobEvent.objects.filter(job=job).count()
    assert not end(attempt, State.FAILED)
    assert ReplicaAttempt.objects.get(pk=attempt.pk).state == State.SUCCEEDED
    assert JobEvent.objects.filter(job=job).count() == events
    assert state_of(job).state == Job.State.SUCCEEDED


def test_end_before_start_keeps_times_in_order():
    job, (attempt,) = running_job()
    started = timezone.now()
    attempt_running(attempt_id=attempt.pk, started_at=started)
    attempt_ended(attempt_id=attempt.pk, state=State.LOST, ended_at=started - timedelta(hours=1))
    assert ReplicaAttempt.objects.get(pk=attempt.pk).ended_at == started


def test_a_failed_replica_stops_its_peers_before_anything_is_decided(
    django_capture_on_commit_callbacks,
):
    job, (first, second) = running_job(replicas=2, max_retries=3)
    start(first, second)
    with django_capture_on_commit_callbacks() as callbacks:
        end(second, State.FAILED)
    assert state_of(job).state == Job.State.RUNNING  # waits for replica 0 to stop
    assert len(callbacks) == 1  # the stop of replica 0
    end(first, State.STOPPED)
    job = state_of(job)
    assert (job.state, job.attempt) == (Job.State.STARTING, 2)
    assert "restarting every replica (retry 1 of 3)" in job.state_reason


def test_retries_count_failed_tries_and_then_the_job_fails(django_capture_on_commit_callbacks):
    job, (attempt,) = running_job(max_retries=1)
    start(attempt)
    with django_capture_on_commit_callbacks() as launches:
        end(attempt, State.FAILED, reason="exit code 1")
    assert len(launches) == 1  # job_launch of attempt 2
    job = state_of(job)
    assert (job.state, job.attempt) == (Job.State.STARTING, 2)
    second = ReplicaAttempt.objects.create(replica=attempt.replica, number=2, node=attempt.node)
    start(second)
    end(second, State.FAILED, reason="exit code 1\nTraceback: boom")
    job = state_of(job)
    assert job.state == Job.State.FAILED
    assert job.state_reason == (
        "Replica 0 failed on attempt 2 (no retries left): exit code 1\nTraceback: boom"
    )


def test_a_lost_replica_is_placed_again_without_using_a_retry():
    job, (attempt,) = running_job(max_retries=0)
    PortAllocation.objects.create(replica=attempt.replica, job_port=8080, host_port=41000)
    start(attempt)
    end(attempt, State.LOST, platform_fault=True, reason="node gone")
    job = state_of(job)
    assert (job.state, job.attempt) == (Job.State.RESOURCE_WAIT, 2)
    assert not PortAllocation.objects.filter(replica__job=job).exists()  # released


def test_a_stop_request_wins_over_a_failure():
    job, (attempt,) = running_job(max_retries=3)
    start(attempt)
    Job.objects.filter(pk=job.pk).update(stop_requested_at=timezone.now())
    end(attempt, State.FAILED)
    assert state_of(job).state == Job.State.STOPPED


def test_a_timed_out_replica_is_not_retried():
    job, (attempt,) = running_job(max_retries=3)
    start(attempt)
    end(attempt, State.TIMED_OUT, reason="Max run time of 5 minutes exceeded.")
    job = state_of(job)
    assert (job.state, job.state_reason) == (
        Job.State.TIMED_OUT,
        "Max run time of 5 minutes exceeded.",
    )


def test_an_attempt_of_an_earlier_try_changes_nothing():
    job, (attempt,) = running_job()
    start(attempt)
    Job.objects.filter(pk=job.pk).update(attempt=2)
    end(attempt, State.FAILED)
    assert state_of(job).state == Job.State.RUNNING


def watched_since(seconds: int) -> None:
    """The heartbeat check has run every few seconds for this long (beat does, every 2 s)."""
    now = timezone.now()
    SiteSettings.objects.update(heartbeat_watch_since=None, heartbeat_checked_at=None)
    for ago in range(seconds, -1, -5):
        nodes_check_heartbeats(now=now - timedelta(seconds=ago))


def test_silent_node_goes_down_and_its_attempts_are_lost():
    SiteSettings.objects.update_or_create(pk=1, defaults={"heartbeat_timeout_seconds": 60})
    job, (attempt,) = running_job()
    attempt_running(attempt_id=attempt.pk, started_at=timezone.now() - timedelta(minutes=10))
    node = attempt.node
    Node.objects.filter(pk=node.pk).update(last_heartbeat=timezone.now() - timedelta(seconds=61))
    never_heard = make_node()  # never had an agent: left alone
    slurm = make_node(executor="slurm", last_heartbeat=timezone.now() - timedelta(days=1))
    watched_since(55)
    assert nodes_check_heartbeats() == []  # silent for 61 s, but watched for 55 s only
    watched_since(65)
    assert Node.objects.get(pk=node.pk).state == Node.State.DOWN
    assert Node.objects.get(pk=node.pk).state == Node.State.DOWN
    assert {n.state for n in Node.objects.filter(pk__in=[never_heard.pk, slurm.pk])} == {"ready"}
    lost = ReplicaAttempt.objects.get(pk=attempt.pk)
    assert (lost.state, lost.platform_fault) == (State.LOST, True)
    assert lost.ended_at == Node.objects.get(pk=node.pk).last_heartbeat
    assert state_of(job).state == Job.State.RESOURCE_WAIT
    assert nodes_check_heartbeats() == []  # already down


def test_after_an_outage_of_the_checker_too_exits_are_reported_before_anything_is_lost():
    """Finding 5: agent and central worker down 71 s; 4 finished jobs were lost and run again.

    Silence the checker did not watch proves nothing: when it comes back it
    gives every agent a whole timeout to report what its runners recorded.
    """
    SiteSettings.objects.update_or_create(pk=1, defaults={"heartbeat_timeout_seconds": 60})
    job, (attempt,) = running_job()
    now = timezone.now()
    attempt_running(attempt_id=attempt.pk, started_at=now - timedelta(minutes=3))
    node = attempt.node
    watched_since(30)  # the checker ran until 71 s ago ...
    Node.objects.filter(pk=node.pk).update(last_heartbeat=now - timedelta(seconds=71))
    later = now + timedelta(seconds=71)  # ... and both come back 71 s later
    assert nodes_check_heartbeats(now=later) == []
    assert ReplicaAttempt.objects.get(pk=attempt.pk).state == State.RUNNING
    # The agent's first poll: its heartbeat, then the exit its runner wrote meanwhile.
    node_heartbeat(node_name=node.name, isolation_problem=None)
    end(attempt, State.SUCCEEDED)
    assert nodes_check_heartbeats(now=later + timedelta(seconds=2)) == []
    assert state_of(job).state == Job.State.SUCCEEDED
    assert ReplicaAttempt.objects.filter(replica__job=job).count() == 1  # never run again


def test_heartbeat_brings_back_a_node_downed_for_silence_but_not_one_an_admin_downed():
    silent = make_node(last_heartbeat=timezone.now() - timedelta(hours=1))
    watched_since(65)
    node_heartbeat(node_name=silent.name, isolation_problem=None)
    silent.refresh_from_db()
    assert (silent.state, silent.state_reason, silent.sandboxed) == ("ready", "", True)

    downed = make_node(state="down", state_reason="Broken fan", last_heartbeat=timezone.now())
    node_heartbeat(node_name=downed.name, isolation_problem=None)
    downed.refresh_from_db()
    assert (downed.state, downed.state_reason) == ("down", "Broken fan")


def test_a_retry_in_place_is_launched_once_committed(
    monkeypatch, django_capture_on_commit_callbacks
):
    launched: list[int] = []
    monkeypatch.setattr(launch, "job_launch", launched.append)
    job, (attempt,) = running_job(max_retries=1)
    start(attempt)
    with django_capture_on_commit_callbacks(execute=True):
        end(attempt, State.FAILED, reason="exit code 1")
    assert launched == [job.pk]  # settle's job_retried, received by launch.py


def test_the_peers_of_a_failed_replica_are_stopped_once_committed(
    monkeypatch, django_capture_on_commit_callbacks
):
    stops: list[tuple[list[int], str]] = []

    class Executor:
        def stop_attempts(self, attempt_ids, *, reason):
            stops.append((list(attempt_ids), reason.code))

    monkeypatch.setattr(launch, "executor_for", lambda name: Executor())
    job, (first, second) = running_job(replicas=2, max_retries=3)
    start(first, second)
    with django_capture_on_commit_callbacks(execute=True):
        end(second, State.FAILED)
    assert stops == [([first.pk], "stopped.peer")]  # settle's peers_to_stop, received by launch.py


def test_a_replicas_start_and_end_are_reported_in_pinned_queries(django_assert_num_queries):
    """Every job's replicas are reported twice: each statement is a round trip on the
    busiest path there is. Started: the job and the attempt locked, the attempt's row, the
    job's transition (row and event); ended: the same, its attempts read to settle, and what
    it held given back. Inside this test's transaction they add no savepoint: they join it,
    as a Slurm report's transaction (9 and 14 with savepoints)."""
    job, (attempt,) = running_job()
    with django_assert_num_queries(5):
        start(attempt)
    assert state_of(job).state == Job.State.RUNNING
    with django_assert_num_queries(8):
        end(attempt, State.SUCCEEDED)
    assert state_of(job).state == Job.State.SUCCEEDED


def test_a_gang_runs_when_its_last_replica_starts_counted_in_one_query(django_assert_num_queries):
    job, (first, second) = running_job(replicas=2)
    with django_assert_num_queries(4):  # locks, the row, one count: not yet
        start(first)
    assert state_of(job).state == Job.State.STARTING
    start(second)
    assert state_of(job).state == Job.State.RUNNING


def test_a_site_without_local_nodes_pays_one_query_a_poll(django_assert_num_queries):
    """Beat dispatches the agents' polls every 2 s; a Slurm-only site has no agent to
    poll and no heartbeat to watch (it watched 6 queries' worth, in a transaction)."""
    from jobs.execution.agent.tasks import dispatch_polls

    make_node(executor="slurm", last_heartbeat=timezone.now() - timedelta(days=1))
    with django_assert_num_queries(1):
        dispatch_polls()
