"""What the job attempts of one submission task share, each read once for them all.

A scheduling pass hands every job it started to Slurm in one task (``launch``): their
plans need the site's stop grace, their users' fair share (``--nice``), each GPU
model's Slurm type and the nodes its jobs must avoid, and for a gang Slurm places the
nodes' addresses. Read per job, these were most of a submission's queries.
"""

from __future__ import annotations

from functools import cached_property

from jobs.execution.replica import network
from jobs.models import Job
from resources.models import Node, SiteSettings, SlurmGpuType

from .eligible import avoided_nodes
from .priority import slurm_nices
from .scripts import Request


class SubmitBatch:
    def __init__(self, jobs: list[Job]) -> None:
        self._jobs = {job.pk: job for job in jobs}
        self._slurm_types: dict[int | None, list[str]] = {}
        self._avoided: dict[tuple[str, int | None], list[str]] = {}

    @cached_property
    def stop_grace_seconds(self) -> int:
        return SiteSettings.load().stop_grace_seconds

    def nice(self, job: Job) -> int:
        """Its ``--nice``; the nices of all the batch's jobs come from one read."""
        return self._nices[job.pk]

    @cached_property
    def _nices(self) -> dict[int, int]:
        return slurm_nices(list(self._jobs.values()))

    def slurm_types(self, model_id: int | None) -> list[str]:
        """The Slurm GPU types that map to this GPU model."""
        if model_id not in self._slurm_types:
            types = SlurmGpuType.objects.filter(gpu_model_id=model_id)
            self._slurm_types[model_id] = list(types.values_list("slurm_type", flat=True))
        return self._slurm_types[model_id]

    def avoided_nodes(self, request: Request, model_id: int | None) -> list[str]:
        key = (request.gres, model_id)
        if key not in self._avoided:
            self._avoided[key] = avoided_nodes(request, model_id)
        return self._avoided[key]

    @cached_property
    def master_addresses(self) -> dict[str, str]:
        """Each Slurm node's address as a replica reaches it: a gang Slurm places learns
        which is replica 0's only when it starts."""
        nodes = Node.objects.filter(executor=Node.Executor.SLURM).values_list("name", "address")
        return {name: network.reachable_address(address) for name, address in nodes if address}
