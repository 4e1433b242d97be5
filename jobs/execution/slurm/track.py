"""The tracking pass: what Slurm did, reported through the executor-neutral services.

Each pass (Celery beat, every second or so) looks at the unfinished attempts
on Slurm nodes and:

- reads what the replica scripts wrote (phase started, exit) and has a task
  report attempts running and ended from that alone (one task for up to
  REPORT_BATCH Slurm jobs with news): no controller round trip, so a finished
  replica frees its resources within a pass;
- has the ones Slurm does not have yet submitted (the controller was down);
- every few seconds reads every job of ours from ``squeue`` once, for what
  only Slurm knows: pending reasons, and jobs Slurm ended itself (time
  limit, cancel, node failure, out of memory, preemption);
- sends the KILL of a stop whose grace has passed, and enforces the max run
  time itself where Slurm's limit cannot (an augmentation search first);
- reconciles a job Slurm no longer knows: from the replica's own ``exit.json``,
  else from accounting, else the attempt is lost (never left running);
- cancels Slurm jobs of ours that no unfinished attempt owns.

When the controller does not answer, the pass changes nothing and the next
one carries on: jobs keep running under ``slurmd`` meanwhile.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from core.batches import batched
from core.reasons import Reason
from core.task_names import send_task
from jobs.execution.replica import keeper
from jobs.execution.replica.folder import AttemptFolder, parse_time
from jobs.execution.report import (
    job_start_waits,
)
from jobs.models import Job, ReplicaAttempt
from resources.models import SiteSettings

from . import cli
from .outcome import (
    VANISHED,
    has_ended,
    is_pending,
    max_runtime_reason,
)
from .pending import pending_positions, pending_reason
from .replica_reports import (
    exit_known,
    first_phase_start,
    report_ends,
    report_progress,
    unfinished_attempts,
)
from .submit import parse_job_name, remember_stop, send_stop

State = ReplicaAttempt.State
Phase = ReplicaAttempt.Phase
# One pass at a time saves work; two at once would still be correct (every step is
# idempotent), so a pass killed mid-way blocks the next ones for this long at most.
LOCK_SECONDS = 30
REPORT_KEY = "trainyard:slurm-report"
REPORT_MARK_SECONDS = 10
REPORT_BATCH = 16
RESUBMIT_AFTER = timedelta(seconds=5)
RESUBMIT_KEY = "trainyard:slurm-resubmit"
RESUBMIT_MARK_SECONDS = 5
# The tasks of ``jobs.execution.slurm.tasks`` this module sends (by name: they import it).
SUBMIT_TASK = "jobs.slurm.submit"
REPORT_TASK = "jobs.slurm.reports"
CLEAN_TASK = "jobs.slurm.clean_checkpoints"
CLEAN_KEY = "trainyard:slurm-clean"
CLEAN_SECONDS = 30


@dataclass
class PassReport:
    submitted: int = 0
    observed: int = 0
    reconciled: int = 0
    orphans_cancelled: int = 0
    unavailable: bool = False


def track_pass(*, now: datetime | None = None) -> PassReport:
    """One pass; skipped (empty report) while another pass holds the lock."""
    lock = f"trainyard:slurm-track:{_prefix()}"
    if not cache.add(lock, 1, LOCK_SECONDS):
        return PassReport()
    try:
        with batched():  # what its reports notify goes to the worker as one task
            return _track(now or timezone.now())
    finally:
        cache.delete(lock)


def _track(now: datetime) -> PassReport:
    report = PassReport()
    attempts = list(unfinished_attempts())
    groups: dict[str, list[ReplicaAttempt]] = {}
    for attempt in attempts:
        if attempt.external_id:
            groups.setdefault(attempt.external_id, []).append(attempt)
    news: dict[str, str] = {}
    attempt_ids: dict[str, list[int]] = {}
    for slurm_id, group in list(groups.items()):
        what, all_exited = _file_news(group)
        if what:
            news[slurm_id], attempt_ids[slurm_id] = what, [a.pk for a in group]
        if all_exited:
            del groups[slurm_id]  # the report task ends them; Slurm has nothing to add
    report.observed += len(news)
    _dispatch_reports([(slurm_id, attempt_ids[slurm_id]) for slurm_id in _news_unsent(news)])
    # The executor's own task submits new attempts; these are the ones it could not.
    unsubmitted = [
        a.pk for a in attempts if not a.external_id and now - a.created_at >= RESUBMIT_AFTER
    ]
    if unsubmitted and cache.add(f"{RESUBMIT_KEY}:{_prefix()}", 1, RESUBMIT_MARK_SECONDS):
        # In a task: sbatch may wait for a controller that does not answer; this pass may not.
        send_task(SUBMIT_TASK, args=[unsubmitted])
        report.submitted = len(unsubmitted)
    if cache.add(f"{CLEAN_KEY}:{_prefix()}", 1, CLEAN_SECONDS):
        send_task(CLEAN_TASK)  # ended jobs' checkpoints (``checkpoints.py``)
    if not _query_due(now):
        return report
    try:
        everyone = cli.queue()
    except cli.SlurmUnavailable as error:
        cli.log_unavailable("tracking", error)
        report.unavailable = True
        return report
    known = {pk: job for pk, job in everyone.items() if job.name.startswith(f"{_prefix()}-j")}
    positions = pending_positions(everyone.values(), partition=settings.TRAINYARD_SLURM_PARTITION)
    grace = timedelta(seconds=SiteSettings.load().stop_grace_seconds)
    for slurm_id, group in groups.items():
        slurm_job = known.get(slurm_id)
        if slurm_job is None:
            slurm_job = _forgotten(slurm_id, group)
            report.reconciled += 1
        _observe(group, slurm_job, now, grace, positions.get(slurm_id))
        report.observed += 1
    report.orphans_cancelled = _cancel_orphans(known)
    return report


def _query_due(now: datetime) -> bool:
    """Whether this pass asks ``squeue`` (at most every TRAINYARD_SLURM_QUERY_SECONDS)."""
    key = f"trainyard:slurm-query:{_prefix()}"
    last = cache.get(key)
    if last is not None and now.timestamp() - last < settings.TRAINYARD_SLURM_QUERY_SECONDS:
        return False
    cache.set(key, now.timestamp(), timeout=3600)
    return True


def _file_news(group: list[ReplicaAttempt]) -> tuple[str, bool]:
    """(what there is to report, "" for nothing; every replica exited), from files alone."""
    started = training = exited = placed = 0
    for attempt in group:
        folder = AttemptFolder.of(attempt)
        if exit_known(folder) is not None:
            exited += 1
            continue
        if attempt.state == State.PENDING:
            started += first_phase_start(attempt, folder) is not None
        elif attempt.training_started_at is None:
            training += folder.exists(f"phase-{Phase.TRAINING}")
        if attempt.state == State.RUNNING and attempt.address is None:
            placed += folder.exists(keeper.ADDRESS)
    counts = (started, training, exited, placed)
    return ("-".join(map(str, counts)) if any(counts) else ""), exited == len(group)


def _news_unsent(news: dict[str, str]) -> list[str]:
    """The Slurm jobs (of ``news``: Slurm id → what there is to report) whose news is to be
    sent, marked sent: the same news is sent once (until its mark expires, in case its
    task was lost); new news at once. Two cache round trips for them all, the marks read
    and then written: no other pass writes them meanwhile (the pass's lock)."""
    marks = {slurm_id: f"{REPORT_KEY}:{slurm_id}:{what}" for slurm_id, what in news.items()}
    if not marks:
        return []
    sent = cache.get_many(list(marks.values()))
    unsent = [slurm_id for slurm_id, mark in marks.items() if mark not in sent]
    if unsent:
        cache.set_many({marks[slurm_id]: 1 for slurm_id in unsent}, REPORT_MARK_SECONDS)
    return unsent


def _dispatch_reports(reports: list[tuple[str, list[int]]]) -> None:
    """Report the pass's news in tasks of up to REPORT_BATCH Slurm jobs: a task's cost is
    mostly its own (the broker, reading the attempts), not its jobs'; and many replicas
    ending at once still go to several of the worker's processes."""
    for start in range(0, len(reports), REPORT_BATCH):
        send_task(REPORT_TASK, args=[reports[start : start + REPORT_BATCH]])


def _prefix() -> str:
    return settings.TRAINYARD_SLURM_JOB_PREFIX


def _observe(
    group: list[ReplicaAttempt],
    slurm_job: cli.SlurmJob,
    now: datetime,
    grace: timedelta,
    position: int | None = None,
) -> None:
    job = group[0].replica.job
    if is_pending(slurm_job):
        if any(AttemptFolder.of(a).exists("stop") for a in group):
            send_stop([slurm_job.job_id])  # nothing runs yet: no grace
        else:
            _note_pending(job, slurm_job, position)
        return
    if slurm_job.start_time is not None:
        for attempt in group:
            folder = AttemptFolder.of(attempt)
            first = first_phase_start(attempt, folder)
            if first is None and attempt.node_id is None:
                continue  # Slurm placed it; its note (due soon) names the node and cards
            report_progress(attempt, folder, slurm_job.job_id, first or slurm_job.start_time)
    if has_ended(slurm_job):
        report_ends(group, slurm_job, now)
    else:
        _enforce_stops(group, slurm_job, now, grace)


def _note_pending(job: Job, slurm_job: cli.SlurmJob, position: int | None) -> None:
    """Slurm's reason, in words; Slurm's own estimate of the start (``StartTime`` of a
    pending job: its backfill's plan), kept as the job's expected start; and its place
    among everyone's pending jobs in the partition, as its queue position."""
    why = pending_reason(slurm_job.reason, slurm_id=slurm_job.job_id)
    reason = Reason("slurm.queued", {"id": slurm_job.job_id, "reason": why})
    if job.state == Job.State.STARTING and job.state_reason != reason.english:
        job_start_waits(job=job, reason=reason)
    expected = slurm_job.start_time
    if expected is not None and expected < timezone.now():
        expected = None  # Slurm's past "start" of a job it has not started: no estimate
    if (expected, position) != (job.estimated_start, job.queue_position):
        Job.objects.filter(pk=job.pk, state=Job.State.STARTING).update(
            estimated_start=expected, queue_position=position
        )


def _enforce_stops(
    group: list[ReplicaAttempt], slurm_job: cli.SlurmJob, now: datetime, grace: timedelta
) -> None:
    """KILL after the grace, and Trainyard's own deadline."""
    stops = []
    for attempt in group:
        folder = AttemptFolder.of(attempt)
        stop = folder.read("stop")
        if stop is None and _past_own_deadline(attempt, now):
            minutes = attempt.replica.job.max_runtime_minutes
            stop = remember_stop(
                attempt, kind=State.TIMED_OUT, reason=max_runtime_reason(minutes), grace=grace
            )
        if stop is not None:
            stops.append((folder, stop))
    if not stops:
        return
    # The TERM is each keeper's, from the stop mark (``keeper.watch_stop``); the KILL ours.
    if any(now >= parse_time(stop["kill_at"]) for _folder, stop in stops):
        send_stop([slurm_job.job_id])


def _past_own_deadline(attempt: ReplicaAttempt, now: datetime) -> bool:
    """Deadlines Slurm does not enforce: those after an augmentation search."""
    if not attempt.replica.job.augmentation_command.strip():
        return False
    attempt.refresh_from_db(fields=["deadline", "state"])
    return attempt.deadline is not None and now >= attempt.deadline


def _forgotten(slurm_id: str, group: list[ReplicaAttempt]) -> cli.SlurmJob:
    """A job ``squeue`` no longer lists and whose replicas did not all exit: accounting, or lost.

    (Replicas that all wrote their exit were reported from their files already.)
    """
    with contextlib.suppress(cli.SlurmUnavailable):
        accounted = cli.finished_job(slurm_id)
        if accounted is not None:
            return accounted
    return cli.SlurmJob(
        job_id=slurm_id,
        name="",
        state=VANISHED,
        reason="",
        wait_status=None,
        start_time=None,
        end_time=None,
        nodes="",
    )


def _cancel_orphans(known: dict[str, cli.SlurmJob]) -> int:
    """Our Slurm jobs that nothing in Trainyard waits for (superseded, or given up on)."""
    active = {sid: job for sid, job in known.items() if not has_ended(job)}
    if not active:
        return 0
    owned = set(
        ReplicaAttempt.objects.filter(external_id__in=list(active))
        .exclude(state__in=ReplicaAttempt.FINAL_STATES)
        .values_list("external_id", flat=True)
    )
    orphans = []
    for slurm_id, slurm_job in active.items():
        parsed = parse_job_name(slurm_job.name)
        if slurm_id in owned or parsed is None or _still_submitting(*parsed):
            continue
        orphans.append(slurm_id)
    if orphans:
        send_stop(orphans)
    return len(orphans)


def _still_submitting(job_id: int, attempt_number: int) -> bool:
    """An unfinished attempt without a recorded id: its ``sbatch`` may have just answered."""
    return (
        ReplicaAttempt.objects.filter(replica__job_id=job_id, number=attempt_number, external_id="")
        .exclude(state__in=ReplicaAttempt.FINAL_STATES)
        .exists()
    )
