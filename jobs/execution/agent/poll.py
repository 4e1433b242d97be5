"""The agent's periodic pass over its node: heartbeat, exits, deadlines, kills, log offsets.

Everything it needs is in the state folder and the database, so an agent
restarted (even after ``kill -9``) picks up where the last one stopped: it
reports the exits that happened meanwhile (with the runner's own end time),
enforces deadlines that passed meanwhile, and kills replicas the platform has
given up on (their node was declared lost), so nothing runs twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import signal
from datetime import datetime, timedelta

from celery import current_app
from django.utils import timezone

from core.reasons import Reason
from jobs.execution.checkpoint_cleanup import checkpoints_remove_ended
from jobs.execution.files import node_root
from jobs.execution.nodes import node_heartbeat
from jobs.execution.replica.failure import failure_reason, storage_reason
from jobs.execution.replica.folder import AttemptFolder, active_attempt_ids, parse_time
from jobs.execution.replica.sandbox import isolation_problem
from jobs.execution.report import attempt_ended, attempt_phase_started
from jobs.models import ReplicaAttempt
from resources.models import SiteSettings, node_queue

from .attempt_start import report_started
from .isolation import refresh_gangs, release, unsafe
from .usage import usage_due, usage_record

State = ReplicaAttempt.State
VANISHED_AFTER = timedelta(seconds=30)


def poll_node(node_name: str) -> bool:
    """One pass; False if another pass of this node is still running.

    The heartbeat comes first and waits on nothing a job controls: a pass
    still busy, or an attempt whose start or stop holds its lock, is passed
    over until the next poll, never waited for.
    """
    root = node_root(node_name)
    root.mkdir(parents=True, exist_ok=True)
    node_heartbeat(node_name=node_name, isolation_problem=isolation_problem(), unsafe=unsafe())
    with (root / "poll.lock").open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        busy_job_ids = _watch_all(node_name)
        checkpoints_remove_ended(node_name, busy_job_ids=busy_job_ids)
    return True


def _watch_all(node_name: str) -> set[int]:
    """Watch every attempt of the node; the jobs that had one running at the start."""
    ids = active_attempt_ids(node_name)
    attempts = ReplicaAttempt.objects.select_related("replica__job", "node").in_bulk(ids)
    grace = timedelta(seconds=SiteSettings.load().stop_grace_seconds)
    for attempt_id in ids:
        folder = AttemptFolder(node_name, attempt_id)
        attempt = attempts.get(attempt_id)
        if attempt is None:  # deleted with its job
            folder.signal(signal.SIGKILL)
            release(folder.read("spec") or {})
            folder.mark_done()
            continue
        with folder.try_lock() as locked:
            if locked:
                _watch(folder, attempt, grace)
    watched = [(AttemptFolder(node_name, i), attempts[i]) for i in ids if i in attempts]
    refresh_gangs(watched)
    if usage_due(node_name):
        usage_record(watched)
    _reconcile(node_name, set(ids))
    return {attempt.replica.job_id for attempt in attempts.values()}


def _watch(folder: AttemptFolder, attempt: ReplicaAttempt, grace: timedelta) -> None:
    exit_info = folder.read("exit")
    if exit_info is None and not folder.runner_alive():
        exit_info = folder.read("exit")  # it may have ended between the two looks
        if exit_info is None:
            _runner_vanished(folder, attempt)
            return
    if exit_info is None and attempt.state in ReplicaAttempt.FINAL_STATES:
        folder.signal(signal.SIGKILL)  # given up on (node declared lost): must not run on
        return
    _report_progress(folder, attempt)
    if exit_info is not None:
        _report_exit(folder, attempt, exit_info)
        return
    now = timezone.now()
    _enforce_deadline(folder, attempt, now, grace)
    stop = folder.read("stop")
    if stop and now >= parse_time(stop["kill_at"]):
        folder.signal(signal.SIGKILL)
    _ship_log_offset(folder, attempt)


def _report_progress(folder: AttemptFolder, attempt: ReplicaAttempt) -> None:
    if attempt.state == State.PENDING and folder.exists("started"):
        report_started(folder, attempt, wait_seconds=0)
        attempt.refresh_from_db()
    training = folder.read(f"phase-{ReplicaAttempt.Phase.TRAINING}")
    if training and attempt.training_started_at is None and attempt.state == State.RUNNING:
        attempt_phase_started(
            attempt_id=attempt.pk,
            phase=ReplicaAttempt.Phase.TRAINING,
            at=parse_time(training["started_at"]),
        )
        attempt.refresh_from_db()  # the deadline starts with training


def _enforce_deadline(folder, attempt: ReplicaAttempt, now: datetime, grace: timedelta) -> None:
    deadline = attempt.deadline
    if deadline is None or now < deadline or folder.exists("stop"):
        return
    minutes = attempt.replica.job.max_runtime_minutes or 0
    reason = Reason("timeout", {"minutes": minutes})
    request_stop(folder, kind=State.TIMED_OUT, reason=reason, now=now, grace=grace)


def request_stop(folder: AttemptFolder, *, kind: str, reason: Reason, now, grace) -> None:
    """TERM now, KILL once ``grace`` has passed (the poll sends it); once per attempt.

    The reason is kept as its code and parameters (``Reason.of`` reads either back).
    """
    if folder.exists("stop"):
        return  # a stop (or the deadline) is already under way: its KILL time stands
    folder.write(
        "stop",
        {
            "kind": kind,
            "reason": Reason.of(reason).as_json(),
            "requested_at": now.isoformat(),
            "kill_at": (now + grace).isoformat(),
        },
    )
    folder.signal(signal.SIGTERM)


def _report_exit(folder: AttemptFolder, attempt: ReplicaAttempt, exit_info: dict) -> None:
    ended_at = parse_time(exit_info["ended_at"])
    exit_code = exit_info["exit_code"]
    stop = folder.read("stop")
    if stop and parse_time(stop["requested_at"]) <= ended_at:
        state, reason = stop["kind"], Reason.of(stop["reason"])
    elif storage := folder.read("storage"):
        state, reason = State.FAILED, storage_reason(storage)
    elif exit_code == 0:
        state, reason = State.SUCCEEDED, Reason("exit.ok")
    else:
        state, reason = State.FAILED, failure_reason(folder, attempt, exit_info)
    _ship_log_offset(folder, attempt)
    attempt_ended(
        attempt_id=attempt.pk, state=state, ended_at=ended_at, exit_code=exit_code, reason=reason
    )
    release(folder.read("spec") or {})
    folder.mark_done()


def _runner_vanished(folder: AttemptFolder, attempt: ReplicaAttempt) -> None:
    """The runner died without writing an exit (killed, host rebooted): the attempt is lost."""
    spec_written = (folder.path / "spec.json").stat().st_mtime
    recent = timezone.now().timestamp() - spec_written < VANISHED_AFTER.total_seconds()
    if not folder.exists("started") and recent:
        return  # still launching
    folder.signal(signal.SIGKILL)
    attempt_ended(
        attempt_id=attempt.pk,
        state=State.LOST,
        ended_at=timezone.now(),
        reason=Reason("supervisor_gone", {"node": folder.node_name}),
        platform_fault=True,
    )
    release(folder.read("spec") or {})
    folder.mark_done()


def _ship_log_offset(folder: AttemptFolder, attempt: ReplicaAttempt) -> None:
    with contextlib.suppress(FileNotFoundError):
        size = folder.log.stat().st_size
        if size != attempt.log_offset:
            ReplicaAttempt.objects.filter(pk=attempt.pk).update(log_offset=size)


def _reconcile(node_name: str, tracked: set[int]) -> None:
    """Attempts the database puts here that the state folder does not know.

    A pending one whose start message went missing (a broker that lost it, an
    agent killed while holding it) is started now; starting is idempotent. A
    running one the folder has no record of (a wiped folder) is lost. Either
    way its job does not stay starting or running forever.
    """
    cutoff = timezone.now() - VANISHED_AFTER
    here = ReplicaAttempt.objects.filter(node__name=node_name).exclude(pk__in=tracked)
    for attempt_id in here.filter(state=State.PENDING, created_at__lt=cutoff).values_list(
        "pk", flat=True
    ):
        if not AttemptFolder(node_name, attempt_id).exists("spec"):
            # As a task of its own: preparing it must not hold up this pass.
            current_app.send_task(
                "jobs.agent.start_attempt", args=[attempt_id], queue=node_queue(node_name)
            )
    orphans = here.filter(state=State.RUNNING, started_at__lt=cutoff)
    for attempt_id in orphans.values_list("pk", flat=True):
        if AttemptFolder(node_name, attempt_id).exists("exit"):
            continue
        attempt_ended(
            attempt_id=attempt_id,
            state=State.LOST,
            ended_at=timezone.now(),
            reason=Reason("no_record", {"node": node_name}),
            platform_fault=True,
        )
