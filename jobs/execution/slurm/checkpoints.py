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
from jobs.models import ReplicaAttempt
from resources.models import Node

logger = logging.getLogger(__name__)
_warned: list[bool] = []


def slurm_checkpoints_remove_ended() -> None:
    """Every Slurm node's ended jobs' checkpoints (one query for the nodes, one for the
    jobs still running anywhere, one per node with marks)."""
    if os.geteuid() != 0:
        if not _warned:
            _warned.append(True)
            logger.warning("Slurm jobs' checkpoints stay: removing them needs root")
        return
    nodes = Node.objects.filter(executor=Node.Executor.SLURM).values_list("name", flat=True)
    unfinished = ReplicaAttempt.objects.exclude(state__in=ReplicaAttempt.FINAL_STATES)
    busy = set(unfinished.values_list("replica__job_id", flat=True))
    for name in nodes:
        checkpoints_remove_ended(name, busy_job_ids=busy)
