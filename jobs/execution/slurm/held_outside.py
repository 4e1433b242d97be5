"""What Slurm has given on each node to jobs that did not come through Trainyard.

Someone's own ``sbatch`` on the same cluster takes CPUs, memory and cards that
Trainyard's nodes would otherwise count as free: the scheduler would place a
job there and Slurm would keep it pending. The inventory sync records, per
node, Slurm's allocation (``sinfo``) less what this Trainyard's own Slurm jobs
hold there, never below zero (``Node.*_held_outside*``).

Trainyard's share is counted from Slurm's side: its jobs that Slurm has started
(by name, ``squeue``), each replica with what its ``sbatch`` asked for on its
node. A Trainyard job that Slurm keeps pending holds nothing in Slurm, so it
never hides the use that keeps it pending.
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from django.conf import settings

from jobs.models import ReplicaAttempt
from resources.models import MILLI_PER_CORE

from . import cli
from .hostlist import expand
from .outcome import is_active
from .scripts import cpus


class Held(NamedTuple):
    """An amount held on one node: CPU (millicores), memory (MiB) and whole cards."""

    cpu_milli: int = 0
    memory_mib: int = 0
    gpus: int = 0


def trainyard_replicas() -> dict[str, list[Held]]:
    """What each replica of this Trainyard's running Slurm jobs asked for, by node name."""
    running = cli.jobs(name_prefix=f"{settings.TRAINYARD_SLURM_JOB_PREFIX}-j")
    slurm_ids = [slurm_id for slurm_id, job in running.items() if is_active(job)]
    if not slurm_ids:
        return {}
    rows = ReplicaAttempt.objects.filter(external_id__in=slurm_ids).values_list(
        "external_id",
        "node__name",
        "replica__job__cpu_milli",
        "replica__job__memory_mib",
        "replica__job__gpu_count",
    )
    replicas: dict[str, list[Held]] = defaultdict(list)
    unrecorded: dict[str, list[Held]] = defaultdict(list)
    recorded: dict[str, list[str]] = defaultdict(list)
    for slurm_id, node_name, cpu_milli, memory_mib, gpu_count in rows:
        # The executor's gres asks Slurm for a whole card per virtual GPU too.
        held = Held(cpu_milli, memory_mib, gpu_count)
        if node_name:
            replicas[node_name].append(held)
            recorded[slurm_id].append(node_name)
        else:
            unrecorded[slurm_id].append(held)
    # Slurm placed them and their start is not recorded yet: where Slurm says they run,
    # one replica on each of its nodes that no recorded replica of theirs is on (all of a
    # job's replicas ask the same).
    for slurm_id, held in unrecorded.items():
        nodes = [n for n in expand(running[slurm_id].nodes) if n not in recorded[slurm_id]]
        for node_name, replica in zip(nodes, held, strict=False):
            replicas[node_name].append(replica)
    return replicas


def held_outside(slurm_node: cli.SlurmNode, ours: list[Held]) -> Held:
    """Slurm's allocation on the node less what Trainyard's replicas there hold in Slurm."""
    # Slurm gives whole CPUs, and whole cores where it allocates by core: round ours up
    # the same way (on a CPU-allocating cluster this counts less outside, never more).
    threads = slurm_node.threads_per_core
    our_cpus = sum(-(-cpus(replica.cpu_milli) // threads) * threads for replica in ours)
    return Held(
        cpu_milli=max(0, slurm_node.cpus_allocated - our_cpus) * MILLI_PER_CORE,
        memory_mib=max(0, slurm_node.memory_allocated_mib - sum(r.memory_mib for r in ours)),
        gpus=max(0, slurm_node.gpus_allocated - sum(r.gpus for r in ours)),
    )
