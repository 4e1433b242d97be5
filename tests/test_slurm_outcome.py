"""How an ended Slurm job becomes each replica's attempt state: no cluster needed."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from jobs.execution.slurm import cli, outcome
from jobs.models import ReplicaAttempt
from tests.factories import JobFactory, NodeFactory

State = ReplicaAttempt.State
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def slurm_job(state: str, wait_status: int | None = 0) -> cli.SlurmJob:
    return cli.SlurmJob("42", "trainyard-j1-r0-a1", state, "", wait_status, T0, T0, "gpu01")


def record(tmp_path: Path, *, stop=None, exit=None, peer_failed=None) -> outcome.ReplicaRecord:
    log = tmp_path / "output.log"
    log.write_text("line one\nline two\n")
    return outcome.ReplicaRecord(stop=stop, exit=exit, log=log, peer_failed=peer_failed)


@pytest.fixture
def attempt(db):
    job = JobFactory(max_runtime_minutes=5, memory_mib=2048)
    node = NodeFactory(executor="slurm")
    replica = job.replica_set.create(index=0, node=node)
    return ReplicaAttempt.objects.create(replica=replica, number=1, node=node)


@pytest.mark.parametrize(
    ("slurm_state", "wait_status", "state", "exit_code", "platform_fault", "words"),
    [
        ("COMPLETED", 0, State.SUCCEEDED, 0, False, "Exited with code 0."),
        ("FAILED", 3 << 8, State.FAILED, 3, False, "Exited with exit code 3."),
        ("FAILED", 9, State.FAILED, 137, False, "exit code 137 (SIGKILL)"),
        ("TIMEOUT", 15, State.TIMED_OUT, 143, False, "Max run time of 5 minutes exceeded."),
        ("DEADLINE", 0, State.TIMED_OUT, 0, False, "Max run time of 5 minutes exceeded."),
        ("CANCELLED", 15, State.STOPPED, 143, False, "Cancelled in Slurm."),
        ("NODE_FAIL", None, State.LOST, None, True, "Slurm lost the job (NODE_FAIL)"),
        ("BOOT_FAIL", None, State.LOST, None, True, "Slurm lost the job (BOOT_FAIL)"),
        ("PREEMPTED", 15, State.LOST, 143, True, "Slurm lost the job (PREEMPTED)"),
        ("OUT_OF_MEMORY", 9, State.FAILED, 137, False, "ran out of its 2048 MiB of memory"),
        (outcome.VANISHED, None, State.LOST, None, True, "Slurm no longer knows the job"),
    ],
)
def test_slurm_end_states_map_to_attempt_states(
    attempt, tmp_path, slurm_state, wait_status, state, exit_code, platform_fault, words
):
    result = outcome.outcome(slurm_job(slurm_state, wait_status), record(tmp_path), attempt=attempt)
    assert (result.state, result.exit_code, result.platform_fault) == (
        state,
        exit_code,
        platform_fault,
    )
    assert result.reason.english.startswith(f"Slurm job 42 ended {slurm_state}.")
    assert words in result.reason.english


def test_failure_reason_carries_the_exit_code_and_the_logs_last_lines(attempt, tmp_path):
    result = outcome.outcome(slurm_job("FAILED", 2 << 8), record(tmp_path), attempt=attempt)
    tail = "Exited with exit code 2. Last lines of the log:\nline one\nline two"
    assert tail in result.reason.english


def test_a_stop_trainyard_asked_for_decides_whatever_slurm_saw(attempt, tmp_path):
    stop = {"kind": State.TIMED_OUT, "reason": "Max run time of 5 minutes exceeded."}
    result = outcome.outcome(
        slurm_job("FAILED", 15 << 8), record(tmp_path, stop=stop), attempt=attempt
    )
    assert (result.state, result.reason.english) == (State.TIMED_OUT, stop["reason"])


def test_replicas_own_exit_code_wins_over_the_slurm_jobs(attempt, tmp_path):
    exit = {"exit_code": 0, "summary": "exit code 0", "ended_at": T0.isoformat()}
    result = outcome.outcome(
        slurm_job("FAILED", 1 << 8), record(tmp_path, exit=exit), attempt=attempt
    )
    assert (result.state, result.exit_code) == (State.FAILED, 0)
    done = outcome.outcome(slurm_job("COMPLETED"), record(tmp_path, exit=exit), attempt=attempt)
    assert done.state == State.SUCCEEDED


def test_replica_killed_because_a_peer_failed_ends_stopped(attempt, tmp_path):
    result = outcome.outcome(
        slurm_job("FAILED", 1 << 8), record(tmp_path, peer_failed=1), attempt=attempt
    )
    assert result.state == State.STOPPED
    assert "after replica 1 failed" in result.reason.english


def test_replica_ends_stopped_when_its_failed_peer_was_reported_before_the_slurm_job_ended(
    db, settings, tmp_path
):
    """The race CI saw: replica 1's exit.json was reported first (a report task), and squeue
    showed the Slurm job ended before the stop for replica 0 was written: replica 0 was killed
    by Slurm because its peer failed, so it ends stopped, not failed."""
    from django.utils import timezone

    from jobs.execution.replica.folder import AttemptFolder
    from jobs.execution.slurm import replica_reports

    settings.TRAINYARD_NODE_ROOT = tmp_path
    job = JobFactory(task_mode="distributed", replicas=2, attempt=1, state="running")
    attempts = []
    for index in range(2):
        node = NodeFactory(executor="slurm")
        replica = job.replica_set.create(index=index, node=node)
        attempts.append(
            ReplicaAttempt.objects.create(
                replica=replica,
                number=1,
                node=node,
                external_id="42",
                state=State.RUNNING,
                started_at=T0,
            )
        )
    waiting, failing = attempts
    exit = {"exit_code": 1, "summary": "exit code 1", "ended_at": T0.isoformat()}
    AttemptFolder.of(failing).path.mkdir(parents=True)
    AttemptFolder.of(failing).write("exit", exit)
    replica_reports.report_from_files([("42", [failing.pk])])
    assert ReplicaAttempt.objects.get(pk=failing.pk).state == State.FAILED

    replica_reports.report_ends([waiting], slurm_job("FAILED", 1 << 8), timezone.now())
    waiting.refresh_from_db()
    assert waiting.state == State.STOPPED, waiting.reason
    assert "after replica 1 failed" in waiting.reason


def gang_of_two(tmp_path, settings) -> list[ReplicaAttempt]:
    settings.TRAINYARD_NODE_ROOT = tmp_path
    job = JobFactory(task_mode="distributed", replicas=2, attempt=1, state="running")
    attempts = []
    for index in range(2):
        node = NodeFactory(executor="slurm")
        replica = job.replica_set.create(index=index, node=node)
        attempts.append(
            ReplicaAttempt.objects.create(
                replica=replica,
                number=1,
                node=node,
                external_id="42",
                state=State.RUNNING,
                started_at=T0,
            )
        )
    return attempts


def wrote_exit(attempt, code: int, summary: str) -> None:
    from jobs.execution.replica.folder import AttemptFolder

    folder = AttemptFolder.of(attempt)
    folder.path.mkdir(parents=True)
    folder.write("exit", {"exit_code": code, "summary": summary, "ended_at": T0.isoformat()})


def test_a_replica_slurm_terminated_after_its_peer_failed_ends_stopped_not_failed(
    db, settings, tmp_path
):
    """The race CI saw under load: Slurm TERMs replica 0 once replica 1 fails, and replica
    0's keeper writes its own exit (143) before Slurm shows the job ended. A TERM or KILL is
    Slurm's word, not the job's: the files alone do not end the attempt; Slurm's state does."""
    from django.utils import timezone

    from jobs.execution.slurm import replica_reports

    waiting, failing = gang_of_two(tmp_path, settings)
    wrote_exit(failing, 1, "exit code 1")
    wrote_exit(waiting, 143, "exit code 143 (SIGTERM)")
    replica_reports.report_from_files([("42", [failing.pk, waiting.pk])])
    assert ReplicaAttempt.objects.get(pk=failing.pk).state == State.FAILED
    assert ReplicaAttempt.objects.get(pk=waiting.pk).state == State.RUNNING

    replica_reports.report_ends([waiting], slurm_job("FAILED", 1 << 8), timezone.now())
    waiting.refresh_from_db()
    assert waiting.state == State.STOPPED, waiting.reason
    assert "after replica 1 failed" in waiting.reason


def test_a_replica_terminated_at_slurms_time_limit_ends_timed_out(db, settings, tmp_path):
    """The other race CI saw: the keeper's exit (143, Slurm's TERM at the time limit) was
    reported before squeue showed TIMEOUT, and the attempt ended failed."""
    from django.utils import timezone

    from jobs.execution.slurm import replica_reports

    attempt, _other = gang_of_two(tmp_path, settings)
    wrote_exit(attempt, 143, "exit code 143 (SIGTERM)")
    replica_reports.report_from_files([("42", [attempt.pk])])
    assert ReplicaAttempt.objects.get(pk=attempt.pk).state == State.RUNNING

    replica_reports.report_ends([attempt], slurm_job("TIMEOUT", 15), timezone.now())
    attempt.refresh_from_db()
    assert attempt.state == State.TIMED_OUT, attempt.reason


@pytest.mark.parametrize(
    ("state", "pending", "active", "ended"),
    [
        ("PENDING", True, False, False),
        ("CONFIGURING", True, False, False),
        ("RUNNING", False, True, False),
        ("COMPLETING", False, True, False),
        ("SUSPENDED", False, True, False),
        ("COMPLETED", False, False, True),
        ("OUT_OF_MEMORY", False, False, True),
    ],
)
def test_slurm_states_are_pending_active_or_ended(state, pending, active, ended):
    job = slurm_job(state)
    assert (outcome.is_pending(job), outcome.is_active(job), outcome.has_ended(job)) == (
        pending,
        active,
        ended,
    )
