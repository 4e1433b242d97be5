"""Removing ended Slurm jobs' checkpoints: no agent polls a Slurm node, so the tracking
pass sends a task for it every 30 s (``track.CLEAN_SECONDS``).

The marks and the folders lie under the node root the platform shares with the Slurm
nodes, so the platform removes them itself, with the agent's own cleanup
(``checkpoint_cleanup.py``: no link followed, kept checkpoints left). The folders belong
to the jobs' uids: that takes root, as submitting as root does (README); a platform that
submits through sudo leaves them, and says so in its log once a run.
"""

from __future__ import annotations

import logging
import os

from jobs.execution.checkpoint_cleanup import checkpoints_remove_ended
from jobs.execution.files import SLURM_STORAGE
from jobs.models import ReplicaAttempt

logger = logging.getLogger(__name__)
_warned: list[bool] = []


def slurm_checkpoints_remove_ended() -> None:
    """The ended Slurm jobs' checkpoints, all in the cluster's one folder (one query for
    the jobs still running anywhere, one if it has marks)."""
    if os.geteuid() != 0:
        if not _warned:
            _warned.append(True)
            logger.warning("Slurm jobs' checkpoints stay: removing them needs root")
        return
    unfinished = ReplicaAttempt.objects.exclude(state__in=ReplicaAttempt.FINAL_STATES)
    busy = set(unfinished.values_list("replica__job_id", flat=True))
    checkpoints_remove_ended(SLURM_STORAGE, busy_job_ids=busy)
