from django.http import HttpRequest
from ninja import Router, Schema

from .models import GpuModel, Spec

router = Router(tags=["resources"])


class GpuModelOut(Schema):
    name: str
    card_memory_gib: int
    cpu_cores_per_card: int
    memory_gib_per_card: int
    relative_speed: float
    supports_vgpu: bool
    free_tier: bool
    members: list[str]


class SpecOut(Schema):
    name: str
    kind: str
    gpu_model: str | None
    gpu_count: int
    vgpu_compute_percent: int | None
    vgpu_memory_gib: float | None
    cpu_cores: float
    memory_gib: float
    storage_gib: int


@router.get("/gpu-models", response=list[GpuModelOut])
def list_gpu_models(request: HttpRequest):
    return [
        GpuModelOut(
            name=m.name,
            card_memory_gib=m.card_memory_gib,
            cpu_cores_per_card=m.cpu_cores_per_card,
            memory_gib_per_card=m.memory_gib_per_card,
            relative_speed=m.relative_speed,
            supports_vgpu=m.supports_vgpu,
            free_tier=m.free_tier,
            members=[member.name for member in m.members.all()],
        )
        for m in GpuModel.objects.prefetch_related("members")
    ]


@router.get("/specs", response=list[SpecOut])
def list_specs(request: HttpRequest):
    return [
        SpecOut(
            name=s.name,
            kind=s.kind,
            gpu_model=s.gpu_model.name if s.gpu_model_id else None,
            gpu_count=s.gpu_count,
            vgpu_compute_percent=s.vgpu_compute_percent,
            vgpu_memory_gib=s.vgpu_memory_mib / 1024 if s.vgpu_memory_mib else None,
            cpu_cores=s.cpu_milli / 1000,
            memory_gib=s.memory_mib / 1024,
            storage_gib=s.storage_gib,
        )
        for s in Spec.objects.filter(enabled=True).select_related("gpu_model")
    ]
