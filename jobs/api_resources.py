"""API: the free-resource hint and the feasibility check (``/api/v1/resources/...``).

In jobs, not resources: both answer with what the user's jobs hold and what
billing lets them use, and feasibility is submit's own admission check."""

from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest
from ninja import Field, Router, Schema
from pydantic import ConfigDict

from resources.free import free_resources_refresh
from resources.models import (
    DEFAULT_STORAGE_GIB,
    MAX_VGPU_COMPUTE_PERCENT,
    MIN_DISTRIBUTED_REPLICAS,
    MIN_STORAGE_GIB,
    MIN_VGPU_COMPUTE_PERCENT,
)
from resources.ratios import CPU_MEMORY_RATIOS

from .free_panel import free_panel
from .services.admission import request_admission
from .services.resources_input import job_resources_resolve

router = Router(tags=["resources"])


class ResourcesIn(Schema):
    """One replica's resources; omitted fields take the form's defaults (ratios)."""

    # A misspelt field (``gpu_cont``) is an error, not a silent default.
    model_config = ConfigDict(extra="forbid")
    kind: str | None = Field(None, description="cpu, gpu or vgpu")
    gpu_model: str | None = None
    gpu_count: int | None = None
    vgpu_compute_percent: int | None = Field(
        None,
        description=f"{MIN_VGPU_COMPUTE_PERCENT}–{MAX_VGPU_COMPUTE_PERCENT}, per virtual GPU",
    )
    vgpu_memory_gib: float | None = Field(None, description="Default: compute % × card memory")
    cpu_cores: float | None = Field(None, description="Default: the model's per-card ratio")
    memory_gib: float | None = Field(None, description="Default: per-card ratio, or 4 GiB/core")
    storage_gib: int | None = Field(
        None, description=f"Default {DEFAULT_STORAGE_GIB}, at least {MIN_STORAGE_GIB}"
    )
    cpu_memory_ratio: int | None = Field(
        None, description=f"CPU jobs: GiB per core, {', '.join(map(str, CPU_MEMORY_RATIOS))}"
    )


class ResourcePartIn(Schema):
    """The resource part of a job: task mode, nodes, and parameters or a spec."""

    model_config = ConfigDict(extra="forbid")

    task_mode: str | None = Field(None, description="single (default) or distributed")
    replicas: int | None = Field(
        None,
        description=f"Distributed: {MIN_DISTRIBUTED_REPLICAS}..max nodes "
        f"(default {MIN_DISTRIBUTED_REPLICAS})",
    )
    config_mode: str | None = Field(None, description="parameter (default) or spec")
    spec: str | None = None
    resources: ResourcesIn | None = None


class FeasibilityIn(ResourcePartIn):
    """The resource part, and whether the job is preemptible: one may borrow beyond the quota."""

    preemptible: bool | None = Field(
        None,
        description="true: may start beyond your quota on idle cards, and be stopped (TERM, "
        "KILL after the site's grace) and requeued when a job within its quota needs them. "
        "Default false",
    )


class GpuModelFreeOut(Schema):
    name: str
    free_cards: int
    total_cards: int
    largest_free_on_one_node: int
    nodes: int
    aggregated: bool
    supports_vgpu: bool
    free_vgpu_compute_percent: int
    held_outside_cards: int = Field(
        0,
        description="Cards that Slurm gave to jobs outside Trainyard (counted as taken, "
        "not free), at the last sync",
    )
    available_to_you: bool = Field(..., description="Whether your account may use this model")
    not_available_reason: str | None = Field(
        None, description="Why not (the reason submit gives); null when it may"
    )


class CpuFreeOut(Schema):
    nodes: int
    free_cores: float
    total_cores: float
    largest_free_cores_on_one_node: float
    held_outside_cores: float = Field(
        0, description="CPU cores held by Slurm jobs outside Trainyard (not free)"
    )
    free_memory_gib: float
    total_memory_gib: float
    largest_free_memory_gib_on_one_node: float
    held_outside_memory_gib: float = Field(
        0, description="Memory held by Slurm jobs outside Trainyard (not free)"
    )


class QuotaEntryOut(Schema):
    limit: float | None = Field(..., description="null: no limit")
    used: float
    free: float | None


class ModelQuotaOut(QuotaEntryOut):
    model: str


class QuotaOut(Schema):
    cpu_cores: QuotaEntryOut
    memory_gib: QuotaEntryOut
    gpu: list[ModelQuotaOut]
    vgpu_compute_percent: list[ModelQuotaOut]


class FreeOut(Schema):
    as_of: datetime
    gpu_models: list[GpuModelFreeOut]
    cpu: CpuFreeOut
    quota: QuotaOut


class FeasibilityOut(Schema):
    feasible: bool
    reasons: list[str]


# The OpenAPI operation ids stay those published before these endpoints moved from
# ``resources.api_free``: generated clients name their methods after them.
@router.get("/resources/free", response=FreeOut, operation_id="resources_api_free_free_resources")
def free_resources(request: HttpRequest):
    """The newest free-resource snapshot (not live) and your own free quota."""
    return free_panel(user=request.user)


@router.post(
    "/resources/free/refresh",
    response=FreeOut,
    operation_id="resources_api_free_free_resources_refresh_now",
)
def free_resources_refresh_now(request: HttpRequest):
    """Recompute the snapshot now, then answer as ``GET /resources/free``."""
    return free_panel(user=request.user, snapshot=free_resources_refresh())


@router.post(
    "/resources/feasibility",
    response=FeasibilityOut,
    operation_id="resources_api_free_feasibility",
)
def feasibility(request: HttpRequest, payload: FeasibilityIn):
    """Could this request ever run: may your account use it, is there a node big enough,
    is it within your quota? The same rules as submitting it."""
    resource_request = job_resources_resolve(
        user=request.user, data=payload.model_dump(exclude_unset=True)
    )
    admission = request_admission(
        user=request.user, request=resource_request, preemptible=bool(payload.preemptible)
    )
    result = admission.as_feasibility()
    return {"feasible": result.feasible, "reasons": result.reasons}
