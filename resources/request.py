"""The resource request of one replica, whatever asked for it (form, API, spec, job row)."""

from __future__ import annotations

from dataclasses import dataclass

from .models import (
    DEFAULT_STORAGE_GIB,
    REPLICA_RESOURCE_COLUMNS,
    GpuModel,
    ReplicaResourceColumns,
    ResourceKind,
)
from .vector import CPU, MEMORY, STORAGE, ResourceVector, gpu_key, vgpu_key


@dataclass(frozen=True)
class ResourceRequest:
    """What one replica needs; ``replicas`` copies run on distinct nodes."""

    kind: str
    cpu_milli: int
    memory_mib: int
    storage_gib: int = DEFAULT_STORAGE_GIB
    gpu_model: GpuModel | None = None
    gpu_count: int = 0
    vgpu_compute_percent: int | None = None
    vgpu_memory_mib: int | None = None
    replicas: int = 1

    @classmethod
    def from_columns(
        cls, row: ReplicaResourceColumns, *, kind: str, replicas: int = 1
    ) -> ResourceRequest:
        """What a spec's or a job's columns ask of each of ``replicas`` replicas."""
        columns = {name: getattr(row, name) for name in REPLICA_RESOURCE_COLUMNS}
        return cls(kind=kind, replicas=replicas, **columns)

    @classmethod
    def from_job(cls, job) -> ResourceRequest:
        return cls.from_columns(job, kind=job.resource_kind, replicas=job.replicas)

    def columns(self) -> dict:
        """The values of a row's ``ReplicaResourceColumns`` that hold this request."""
        return {name: getattr(self, name) for name in REPLICA_RESOURCE_COLUMNS}

    @property
    def is_vgpu(self) -> bool:
        return self.kind == ResourceKind.VGPU

    @property
    def is_gpu(self) -> bool:
        return self.kind == ResourceKind.GPU

    def per_replica(self) -> ResourceVector:
        """The vector of one replica, keyed by the requested (maybe aggregated) model."""
        amounts = {CPU: self.cpu_milli, MEMORY: self.memory_mib, STORAGE: self.storage_gib}
        if self.is_gpu:
            amounts[gpu_key(self.gpu_model.name)] = self.gpu_count
        elif self.is_vgpu:
            amounts[vgpu_key(self.gpu_model.name)] = self.gpu_count * self.vgpu_compute_percent
        return ResourceVector(amounts)

    def total(self) -> ResourceVector:
        """What the whole job holds against quota while it starts or runs."""
        return self.per_replica() * self.replicas

    def quota_vector(self) -> ResourceVector:
        """The quota-relevant part of ``total`` (storage has no quota)."""
        return ResourceVector({k: v for k, v in self.total().items() if k != STORAGE})
