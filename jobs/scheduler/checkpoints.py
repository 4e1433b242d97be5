"""Where a requeued job's checkpoints are, when they stay on the nodes that ran it.

With no shared ``TRAINYARD_CHECKPOINT_ROOT``, each replica's checkpoint folder lives on
the node that ran it (``jobs/execution/files.py``). A job that runs again (preempted,
retried, lost) is placed back on those nodes when they fit it, replica by replica;
otherwise anywhere, and its start reason says that it starts without its checkpoint.
A replica that ran on a Slurm node left its checkpoint in the cluster's shared folder
(``files.SLURM_STORAGE``): it follows the job to any Slurm node, so nothing pins it.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings

from jobs.models import Replica
from resources.models import Node

from .cluster import Cluster, NodeState, ReplicaUse
from .placement import Shape, choose_best
from .queue import WaitingJob


def previous_nodes(jobs: list[WaitingJob]) -> dict[int, list[tuple[int, str]]]:
    """Job id → the node (id, name) of each replica's last attempt, for the waiting jobs
    that ran before on nodes that keep checkpoints to themselves (one query; none when
    checkpoints are shared or no waiting job ran)."""
    if settings.TRAINYARD_CHECKPOINT_ROOT:
        return {}
    ran = [job.pk for job in jobs if job.attempt >= 1]
    if not ran:
        return {}
    nodes: dict[int, list[tuple[int, str]]] = {}
    shared: set[int] = set()  # jobs a replica of which ran on Slurm (a mixed gang: no pin)
    rows = Replica.objects.filter(job_id__in=ran).order_by("job_id", "index")
    fields = ("job_id", "node_id", "node__name", "node__executor")
    for job_id, node_id, name, executor in rows.values_list(*fields):
        if executor == Node.Executor.SLURM:
            shared.add(job_id)
        nodes.setdefault(job_id, []).append((node_id, name))
    return {job_id: ran_on for job_id, ran_on in nodes.items() if job_id not in shared}


def place_where_it_ran(
    cluster: Cluster,
    shape: Shape,
    nodes: list[int],
    view: Callable[[NodeState], NodeState] | None,
) -> tuple[ReplicaUse, ...] | None:
    """Every replica on the node it ran on before, if they all fit there (``view``
    narrows a node as reservations do); else None."""
    if len(set(nodes)) != shape.replicas:
        return None
    candidates = []
    for pk in nodes:
        node = cluster.nodes.get(pk)
        if node is None or not shape.admits(node):
            return None
        candidates.append(node if view is None else view(node))
    uses = choose_best(candidates, shape, cluster.typical)
    if uses is None:
        return None
    index_of = {pk: index for index, pk in enumerate(nodes)}
    return tuple(sorted(uses, key=lambda use: index_of[use.node_pk]))


def away_from_checkpoints(ran_on, uses: tuple[ReplicaUse, ...]) -> tuple[str, ...]:
    """The nodes (names) holding checkpoints of replicas that ``uses`` places elsewhere."""
    return tuple(
        name
        for index, (pk, name) in enumerate(ran_on)
        if index >= len(uses) or uses[index].node_pk != pk
    )
