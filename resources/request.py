"""The resource request of one replica, whatever asked for it (form, API, spec, job row)."""

from __future__ import annotations

from dataclasses import dataclass

from .models import DEFAULT_STORAGE_GIB, GpuModel, ResourceKind
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
    def from_job(cls, job) -> ResourceRequest:
        return cls(
            kind=job.resource_kind,
            cpu_milli=job.cpu_milli,
            memory_mib=job.memory_mib,
            storage_gib=job.storage_gib,
            gpu_model=job.gpu_model,
            gpu_count=job.gpu_count,
            vgpu_compute_percent=job.vgpu_compute_percent,
            vgpu_memory_mib=job.vgpu_memory_mib,
            replicas=job.replicas,
        )

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
