from django.http import HttpRequest
from ninja import Router, Schema

from .models import GpuModel, Spec
from .schemas import ReplicaResourcesOut, replica_resources_out

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


class SpecOut(ReplicaResourcesOut):
    name: str


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
        SpecOut(name=s.name, **replica_resources_out(s, kind=s.kind))
        for s in Spec.objects.filter(enabled=True).select_related("gpu_model")
    ]
