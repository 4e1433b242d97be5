"""Removing the checkpoints of ended jobs from a node (and its share of the shared root).

Each replica's preparation notes its checkpoint in the node's marks
(``files.checkpoint_marks_dir``), so a cleanup reads a short list, not every job folder the
node ever had: one query for the states of the jobs noted, then each ended job's
checkpoints go, then their marks. The local agent's poll runs it for its nodes; the Slurm
tracking pass for Slurm's (``slurm/track.py``), whose marks and folders lie on the
filesystem the platform shares with them.
A job that asked to keep its checkpoint (``Job.keep_checkpoint``) loses only its marks:
its checkpoints stay beside its outputs, for as long as they do.
"""

from __future__ import annotations

import contextlib
import logging

from django.conf import settings

from jobs.execution.files import (
    checkpoint_marks_dir,
    node_checkpoint_dir,
    replica_checkpoint_dir,
)
from jobs.execution.replica.checkpoint import checkpoint_marks, checkpoint_remove, checkpoint_unmark
from jobs.models import Job

logger = logging.getLogger(__name__)


def checkpoints_remove_ended(node_name: str, *, busy_job_ids: set[int]) -> None:
    """Remove the checkpoints of this node's jobs that have ended (or are gone), but those
    their jobs keep.

    ``busy_job_ids``: jobs with an attempt still watched here, whose processes may
    still write; they wait for the next poll whatever their state.
    """
    marks_dir = checkpoint_marks_dir(node_name)
    marks = checkpoint_marks(marks_dir)
    if not marks:
        return
    live, kept = _live_and_kept({job_id for job_id, _index in marks})
    for job_id, index in marks:
        if job_id in live or job_id in busy_job_ids:
            continue
        try:
            if job_id not in kept:
                _remove(node_name, job_id, index)
        except OSError:
            logger.exception("Could not remove the checkpoint of job %s replica %s", job_id, index)
            continue
        checkpoint_unmark(marks_dir, job_id=job_id, replica_index=index)


def _live_and_kept(job_ids: set[int]) -> tuple[set[int], set[int]]:
    """Of ``job_ids``: the jobs not ended yet, and the ended ones that keep their checkpoint."""
    live: set[int] = set()
    kept: set[int] = set()
    rows = Job.objects.filter(pk__in=job_ids).values_list("pk", "state", "keep_checkpoint")
    for job_id, state, keep_checkpoint in rows:
        if state not in Job.FINAL_STATES:
            live.add(job_id)
        elif keep_checkpoint:
            kept.add(job_id)
    return live, kept


def _remove(node_name: str, job_id: int, index: int) -> None:
    checkpoint_remove(node_checkpoint_dir(node_name, job_id, index))
    if settings.TRAINYARD_CHECKPOINT_ROOT:
        shared = replica_checkpoint_dir(node_name, job_id, index)
        checkpoint_remove(shared)
        with contextlib.suppress(OSError):  # the job's folder, once all its replicas' are gone
            shared.parent.rmdir()
