"""Reads for a job's page and API: its attempts, their logs and what the replicas wrote."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.core.exceptions import ValidationError
from django.http import Http404
from django.utils.translation import gettext as _

from jobs.models import Job, ReplicaAttempt
from jobs.selectors import jobs_user_may_operate

from .files import (
    LogSearch,
    OutputFile,
    attempt_log_path,
    log_read,
    log_search,
    log_tail,
    output_files,
    replica_checkpoint_dir,
    replica_output_dir,
    storage_name,
)

MAX_TAIL_LINES = 10_000
DEFAULT_TAIL_LINES = 200
# How many lines the job page offers to show (the download is whole).
PAGE_LINE_CHOICES = (DEFAULT_TAIL_LINES, 1000, 5000, MAX_TAIL_LINES)
# What one read from an offset returns at most (a follower asks again for the rest).
LOG_READ_BYTES = 256 * 1024


def job_attempts(job: Job) -> list[ReplicaAttempt]:
    return list(
        ReplicaAttempt.objects.filter(replica__job=job)
        .select_related("replica", "node")
        .order_by("replica__index", "number")
    )


def pick_attempt(
    attempts: list[ReplicaAttempt], *, replica: int, number: int | None
) -> ReplicaAttempt | None:
    """The replica's attempt ``number``, or its latest when ``number`` is None."""
    of_replica = [a for a in attempts if a.replica.index == replica]
    if number is None:
        return of_replica[-1] if of_replica else None
    return next((a for a in of_replica if a.number == number), None)


def attempt_log_file(attempt: ReplicaAttempt) -> Path:
    return attempt_log_path(storage_name(attempt.node), attempt.pk)


def attempt_log(attempt: ReplicaAttempt, *, lines: int = DEFAULT_TAIL_LINES) -> str:
    return log_tail(attempt_log_file(attempt), lines=lines)


def attempt_log_search(attempt: ReplicaAttempt, needle: str, *, lines: int) -> LogSearch:
    return log_search(attempt_log_file(attempt), needle, lines=lines)


@dataclass
class ReplicaOutputs:
    replica: int
    node: str  # the node (or, on Slurm's shared folder, the nodes) it ran on, to read
    storage: str  # where the folder lies (``files.storage_name``): its downloads' address
    files: list[OutputFile] = field(default_factory=list)
    # A job that keeps its checkpoint: what the replica saved in ``/trainyard/checkpoint``
    # there. None: not kept, or listed with another node's outputs (the same shared folder).
    checkpoint: list[OutputFile] | None = None


def job_outputs(job: Job, attempts: list[ReplicaAttempt]) -> list[ReplicaOutputs]:
    """What each replica wrote to ``/trainyard/output``, in every folder it wrote to (one per
    local node it ran on; one for all of Slurm's), and the checkpoints the job keeps: each
    folder once (under a shared root, once per replica)."""
    nodes: dict[tuple[int, str], list[str]] = {}
    for attempt in attempts:
        ran_on = nodes.setdefault((attempt.replica.index, storage_name(attempt.node)), [])
        if attempt.where not in ran_on:
            ran_on.append(attempt.where)
    found = []
    checkpoints_listed: set[Path] = set()
    for (index, storage), names in nodes.items():
        files = output_files(replica_output_dir(storage, job.pk, index))
        outputs = ReplicaOutputs(index, ", ".join(names), storage, files)
        checkpoint = replica_checkpoint_dir(storage, job.pk, index)
        if job.keep_checkpoint and checkpoint not in checkpoints_listed:
            checkpoints_listed.add(checkpoint)
            outputs.checkpoint = output_files(checkpoint)
        found.append(outputs)
    return found


def job_log_tail(
    *, user, job_id: int, replica: int, number: int | None, tail: int, offset: int | None = None
) -> dict:
    """The API's view of a log: 404 for jobs the user may not see or attempts that do not exist.

    Without ``offset``: the last ``tail`` lines. With it: the whole lines from that
    byte on and ``next_offset``, where the next read starts (to follow a log).
    """
    if not 1 <= tail <= MAX_TAIL_LINES:
        raise ValidationError(
            {
                "tail": [
                    _("Tail must be 1 to %(max)d lines; you gave %(n)d")
                    % {"max": MAX_TAIL_LINES, "n": tail}
                ]
            }
        )
    job = jobs_user_may_operate(user=user).filter(pk=job_id).first()
    if job is None:
        raise Http404
    attempt = pick_attempt(job_attempts(job), replica=replica, number=number)
    if attempt is None:
        raise Http404
    path = attempt_log_file(attempt)
    size = path.stat().st_size if path.exists() else 0
    next_offset = None
    if offset is None:
        lines = log_tail(path, lines=tail).splitlines()
    else:
        _check_offset(offset, size)
        # The state is read before the file: a final attempt's log is complete.
        complete = attempt.state in ReplicaAttempt.FINAL_STATES
        lines, next_offset = log_read(
            path, offset=offset, max_bytes=LOG_READ_BYTES, complete=complete
        )
    return {
        "job": job.pk,
        "replica": replica,
        "attempt": attempt.number,
        "node": attempt.where,
        "state": attempt.state,
        "size_bytes": size,
        "lines": lines,
        "next_offset": next_offset,
    }


def _check_offset(offset: int, size: int) -> None:
    if not 0 <= offset <= size:
        raise ValidationError(
            {
                "offset": [
                    _("Offset must be 0 to the log's size, %(size)d bytes; you gave %(offset)d")
                    % {"size": size, "offset": offset}
                ]
            }
        )
