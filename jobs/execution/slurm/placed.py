"""Where Slurm started a replica it placed, from what the replica's Slurm job wrote.

The replica script notes the node (``$SLURMD_NODENAME``) and the cards (``$SLURM_JOB_GPUS``,
the node's own card indices) with its first phase, and the keeper notes its node with a
refusal; ``squeue``'s node list is the last resort. Those files are written by Slurm's
side of the job, never by the job's command (its uid cannot write the attempt folder),
and are still read as untrusted: the node must be one of this cluster's Slurm nodes, and
the cards as many of its real cards as the job asked for, else none are recorded.
"""

from __future__ import annotations

import logging
import re

from jobs.execution.node_name import NODE_NAME
from jobs.execution.replica import keeper
from jobs.execution.replica.folder import AttemptFolder
from jobs.lifecycle.slurm_placed import record_slurm_start
from jobs.models import ReplicaAttempt
from resources.models import Node

logger = logging.getLogger(__name__)
CARD_LIST = re.compile(r"\d{1,3}(,\d{1,3}){0,63}")


def record_where_started(
    attempt: ReplicaAttempt, folder: AttemptFolder, slurm_nodes: str = "", *, holds: bool = True
) -> None:
    """Record the node (and cards) of an attempt Slurm placed, once it is known.

    They count as taken only while it runs: a replica whose exit is known already (a short
    job, seen started and ended at once), or that the caller is ending (``holds=False``),
    gets its node and cards recorded, and holds nothing that its end would give back.
    """
    if attempt.node_id is not None:
        return
    noted = first_phase_note(attempt, folder) or folder.read(keeper.REFUSED) or {}
    if not noted and not slurm_nodes:
        return  # not started, or its keeper is still preparing: its note will say
    name = noted.get("node") or _single(slurm_nodes)
    if not isinstance(name, str) or not NODE_NAME.fullmatch(name):
        return
    node = Node.objects.filter(name=name, executor=Node.Executor.SLURM).first()
    if node is None:
        logger.warning("attempt %s: Slurm names node %r, not one of its nodes", attempt.pk, name)
        return
    cards = _cards(noted.get("gpus"), node, attempt.replica.job.gpu_count)
    holds = holds and folder.read("exit") is None
    record_slurm_start(attempt_id=attempt.pk, node=node, cards=cards, holds=holds)
    attempt.node, attempt.node_id = node, node.pk


def first_phase_note(attempt: ReplicaAttempt, folder: AttemptFolder) -> dict | None:
    """What the replica script noted when its first phase began (the augmentation search
    when the job has one, else training); None before."""
    searching = bool(attempt.replica.job.augmentation_command.strip())
    Phase = ReplicaAttempt.Phase
    note = folder.read(f"phase-{Phase.AUGMENTATION if searching else Phase.TRAINING}")
    return note if isinstance(note, dict) else None


def _single(slurm_nodes: str) -> str:
    """``squeue``'s node list when it names one node (a Slurm-placed job has one)."""
    return slurm_nodes if NODE_NAME.fullmatch(slurm_nodes or "") else ""


def _cards(noted, node: Node, count: int) -> list[int]:
    if not isinstance(noted, str) or not CARD_LIST.fullmatch(noted):
        return []
    cards = sorted({int(index) for index in noted.split(",")})
    if len(cards) != count or cards[-1] >= node.gpu_count:
        return []
    return cards
