"""What a Slurm job's replicas wrote, and what Slurm says of it, reported through
``jobs.execution.report``: attempts running, their training phase, their end.

The tracking pass (``track.py``) finds the news; the report task and the pass call these.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.batches import batched
from jobs.execution.nodes import node_cannot_isolate
from jobs.execution.replica import keeper
from jobs.execution.replica.folder import AttemptFolder, parse_time
from jobs.execution.report import attempt_ended, attempt_phase_started, attempt_running
from jobs.models import ReplicaAttempt
from resources.models import Node

from . import cli
from .outcome import ReplicaRecord, ended_by_slurm, outcome
from .placed import first_phase_note, record_where_started

logger = logging.getLogger(__name__)
State = ReplicaAttempt.State
Phase = ReplicaAttempt.Phase


def unfinished_attempts():
    """Those on Slurm nodes, and those Slurm has yet to place (no node)."""
    return (
        ReplicaAttempt.objects.filter(Q(node__executor=Node.Executor.SLURM) | Q(node__isnull=True))
        .exclude(state__in=ReplicaAttempt.FINAL_STATES)
        .select_related("node", "replica__job")
        .order_by("replica__job_id", "number", "replica__index")
    )


def report_from_files(reports: list[tuple[str, list[int]]]) -> None:
    """The report task: what the replicas of these Slurm jobs (``[slurm id, attempt ids]``
    each, from one tracking pass) wrote, through the services.

    Their attempts are read at once; each Slurm job is then reported on its own, in one
    transaction (its start and end, often seen at once, are several transitions), and one
    that fails is logged, leaves nothing of its report written, and does not hold back the
    others (its news is sent again once the tracking pass's mark for it expires). One
    scheduling pass follows them all.
    """
    loaded = unfinished_attempts().in_bulk([pk for _slurm_id, pks in reports for pk in pks])
    now = timezone.now()
    # The cards they took and freed, read by one pass at the end; their notifications, one task.
    with batched():
        for slurm_id, attempt_ids in reports:
            group = [loaded[pk] for pk in attempt_ids if pk in loaded]
            group = [attempt for attempt in group if attempt.external_id == slurm_id]
            if not group:
                continue
            try:
                with transaction.atomic():
                    report_files(slurm_id, group, now)
            except Exception:
                logger.exception(
                    "reporting Slurm job %s failed; the next pass sends it again", slurm_id
                )


def report_files(slurm_id: str, group: list[ReplicaAttempt], now: datetime) -> None:
    folders = [AttemptFolder.of(a) for a in group]
    for attempt, folder in zip(group, folders, strict=True):
        started = first_phase_start(attempt, folder)
        if started is not None:
            report_progress(attempt, folder, slurm_id, started)
    for attempt, folder in zip(group, folders, strict=True):
        # At once, even while peers run: a failed replica gets the others stopped.
        if (exit := exit_known(folder)) is not None:
            report_ends([attempt], slurm_job_from_exits(slurm_id, [exit]), now)


def exit_known(folder: AttemptFolder) -> dict | None:
    """The replica's exit when its files alone say why it ended. An exit by TERM or KILL
    may be Slurm's doing (its time limit, a failed peer, a cancel): that one waits for
    Slurm's state (the tracking pass asks), unless Trainyard ended it itself (a stop it
    asked for, the storage watch), whose files say why."""
    exit = folder.read("exit")
    if exit is None or not ended_by_slurm(exit):
        return exit
    return exit if folder.exists("stop") or folder.exists("storage") else None


def first_phase_start(attempt: ReplicaAttempt, folder: AttemptFolder) -> datetime | None:
    first = first_phase_note(attempt, folder)
    return parse_time(first["started_at"]) if first else None


def report_progress(
    attempt: ReplicaAttempt, folder: AttemptFolder, slurm_id: str, started_at: datetime
) -> None:
    job = attempt.replica.job
    # From the replica's own note only: ``squeue``'s node list names no cards, and the
    # note follows (the keeper prepares first); the end falls back on it.
    record_where_started(attempt, folder)
    if attempt.state == State.PENDING:
        searching = bool(job.augmentation_command.strip())
        deadline = None
        if job.max_runtime_minutes and not searching:
            deadline = started_at + timedelta(minutes=job.max_runtime_minutes)
        reported = attempt_running(
            attempt_id=attempt.pk,
            started_at=started_at,
            external_id=slurm_id,
            deadline=deadline,
            phase=Phase.AUGMENTATION if searching else Phase.TRAINING,
        )
        if reported:
            attempt.state, attempt.started_at = State.RUNNING, started_at
            attempt.training_started_at = None if searching else started_at
        else:
            attempt.refresh_from_db()
    training = folder.read(f"phase-{Phase.TRAINING}")
    if training and attempt.training_started_at is None and attempt.state == State.RUNNING:
        attempt_phase_started(
            attempt_id=attempt.pk, phase=Phase.TRAINING, at=parse_time(training["started_at"])
        )
        attempt.training_started_at = parse_time(training["started_at"])
    noted: dict = {}
    if attempt.address is None and (where := folder.read(keeper.ADDRESS)):
        # Where the keeper put the replica in its node's job network (for the gang and people).
        noted["address"] = where["address"]
    with contextlib.suppress(FileNotFoundError):
        size = folder.log.stat().st_size
        if size != attempt.log_offset:
            noted["log_offset"] = size
    if noted:  # one round trip for both
        ReplicaAttempt.objects.filter(pk=attempt.pk).update(**noted)
        for name, value in noted.items():
            setattr(attempt, name, value)


def report_ends(group: list[ReplicaAttempt], slurm_job: cli.SlurmJob, now: datetime) -> None:
    folders = {a.pk: AttemptFolder.of(a) for a in group}
    exits = {a.pk: folders[a.pk].read("exit") for a in group}
    failed = [
        a
        for a in group
        if exits[a.pk] and exits[a.pk]["exit_code"] and not ended_by_slurm(exits[a.pk])
    ]
    peer_failed = _failed_replica(group, slurm_job.job_id, failed)
    # The replica that failed first, so the job's reason names the real failure.
    for attempt in sorted(group, key=lambda a: a not in failed):
        record_where_started(attempt, folders[attempt.pk], slurm_job.nodes, holds=False)
        record = ReplicaRecord(
            stop=folders[attempt.pk].read("stop"),
            exit=exits[attempt.pk],
            log=folders[attempt.pk].log,
            peer_failed=peer_failed,
            refused=folders[attempt.pk].read(keeper.REFUSED),
            storage=folders[attempt.pk].read("storage"),
        )
        if record.refused and record.refused.get("kind") == "isolation" and attempt.node:
            node_cannot_isolate(node_name=attempt.node.name, problem=record.refused["problem"])
        result = outcome(slurm_job, record, attempt=attempt)
        ended_at = parse_time(record.exit["ended_at"]) if record.exit else slurm_job.end_time or now
        attempt_ended(
            attempt_id=attempt.pk,
            state=result.state,
            ended_at=min(ended_at, now),
            exit_code=result.exit_code,
            reason=result.reason,
            platform_fault=result.platform_fault,
        )


def _failed_replica(
    group: list[ReplicaAttempt], slurm_id: str, failed: list[ReplicaAttempt]
) -> int | None:
    """The index of a replica of this Slurm job that exited non-zero: one of ``group``, or a
    peer already reported from its own exit.json (a report task can end it before squeue shows
    the Slurm job ended, and before the stop it sent the others is written)."""
    if failed:
        return failed[0].replica.index
    if group[0].replica.job.replicas == 1:
        return None  # no peer
    reported = (
        ReplicaAttempt.objects.filter(
            external_id=slurm_id,
            replica__job_id=group[0].replica.job_id,
            number=group[0].number,
            state=State.FAILED,
            platform_fault=False,
        )
        .exclude(pk__in=[a.pk for a in group])
        .order_by("ended_at", "replica__index")
        .values_list("replica__index", flat=True)
    )
    return reported.first()


def slurm_job_from_exits(slurm_id: str, exits: list[dict]) -> cli.SlurmJob:
    """The Slurm job as its replicas' own exits tell it (Slurm says the same a moment later)."""
    worst = max(exit["exit_code"] for exit in exits)
    return cli.SlurmJob(
        job_id=slurm_id,
        name="",
        state="COMPLETED" if worst == 0 else "FAILED",
        reason="",
        wait_status=(worst & 0xFF) << 8,
        start_time=None,
        end_time=max(parse_time(exit["ended_at"]) for exit in exits),
        nodes="",
    )
