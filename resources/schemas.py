"""The API's one shape of a replica's resources: a spec's and a job's, in cores and GiB."""

from __future__ import annotations

from ninja import Schema

from .models import ReplicaResourceColumns
from .ratios import mib_to_gib, milli_to_cores


class ReplicaResourcesOut(Schema):
    kind: str
    gpu_model: str | None
    gpu_count: int
    vgpu_compute_percent: int | None
    vgpu_memory_gib: float | None
    cpu_cores: float
    memory_gib: float
    storage_gib: int


def replica_resources_out(row: ReplicaResourceColumns, *, kind: str) -> dict:
    """``row``'s columns (a spec or a job, its GPU model loaded) as ``ReplicaResourcesOut``."""
    return {
        "kind": kind,
        "gpu_model": row.gpu_model.name if row.gpu_model_id else None,
        "gpu_count": row.gpu_count,
        "vgpu_compute_percent": row.vgpu_compute_percent,
        "vgpu_memory_gib": mib_to_gib(row.vgpu_memory_mib) if row.vgpu_memory_mib else None,
        "cpu_cores": milli_to_cores(row.cpu_milli),
        "memory_gib": mib_to_gib(row.memory_mib),
        "storage_gib": row.storage_gib,
    }
