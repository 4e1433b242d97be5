"""Which Slurm nodes a job Slurm places may go to: its GPU model's (the one it asked
for), less those a Trainyard admin closed, which Slurm knows nothing of (``--exclude``)."""

from __future__ import annotations

from jobs.models import ReplicaAttempt
from resources.models import Node

from .inventory import SLURM_REASON_PREFIX
from .scripts import Request


def asked_model_id(attempt: ReplicaAttempt) -> int | None:
    """The GPU model a Slurm job asks for: its node's where Trainyard placed it; else the
    one it was submitted for (a ``*`` model's member), else the job's own."""
    if attempt.node is not None:
        return attempt.node.gpu_model_id
    return attempt.replica.slurm_model_id or attempt.replica.job.gpu_model_id


def avoided_nodes(request: Request, model_id: int | None) -> list[str]:
    """The Slurm nodes a job Slurm places for this GPU model must avoid: those closed by
    a Trainyard admin; with a gres of no type (none or several map to the model), those
    of other models too, which Slurm still knows (a name it does not would fail sbatch)."""
    closed = closed_by_trainyard()
    if request.gres.count(":") > 1:
        return closed
    others = Node.objects.filter(executor=Node.Executor.SLURM).exclude(state=Node.State.DOWN)
    others = others.exclude(gpu_model_id=model_id).values_list("name", flat=True)
    return sorted(set(closed) | set(others))


def model_closed(lead: ReplicaAttempt) -> bool:
    """Whether Trainyard has closed every Slurm node of the model a job Slurm places asks
    for (a pinned job's nodes Slurm does not refuse: it knows nothing of the closing)."""
    if lead.node is not None:
        return False
    serving = Node.objects.filter(executor=Node.Executor.SLURM, gpu_model_id=asked_model_id(lead))
    names = set(serving.values_list("name", flat=True))
    return bool(names) and names <= set(closed_by_trainyard())


def closed_by_trainyard() -> list[str]:
    """Slurm nodes a Trainyard admin drained or downed (Slurm's own states need no word):
    a job Slurm places must not go there."""
    closed = Node.objects.filter(executor=Node.Executor.SLURM).exclude(state=Node.State.READY)
    closed = closed.exclude(state_reason__startswith=SLURM_REASON_PREFIX)
    return sorted(closed.values_list("name", flat=True))
