"""API: workload templates and training-time estimates (``/api/v1/templates``, ``/estimates``).

The same functions as the New job form's panel, so the CLI sees what the page shows.
"""

from __future__ import annotations

from dataclasses import asdict
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from core.lookups import row_named
from jobs.models import WorkloadTemplate
from resources.models import GpuModel

from .estimate import Estimate
from .panel import estimate_panel
from .rules import templates_for_user

router = Router(tags=["estimates"])


class TemplateOut(Schema):
    name: str
    task_type: str
    network: str
    command_template: str
    augmentation_command: str
    forbidden_gpu_models: list[str]
    default_max_runtime_minutes: int | None
    available: bool
    unavailable_reason: str


class EstimateQuery(Schema):
    gpu_model: str
    cards: int = Field(1, ge=1, description="Cards in all: nodes × cards per node")
    template: str | None = Field(None, description="Without one: your earlier runs of command")
    dataset_samples: int = Field(0, ge=0, description="Samples in the datasets (templates)")
    augmentation: bool = Field(False, description="Whether the augmentation search runs first")
    command: str = ""


class EstimateOut(Schema):
    seconds: float
    low_seconds: float
    high_seconds: float
    training_seconds: float
    augmentation_seconds: float | None
    basis: str
    runs: int


class OptionOut(Schema):
    cards: int
    estimate: EstimateOut


class CostOut(Schema):
    expected: Decimal
    low: Decimal
    high: Decimal
    currency: str
    free_card_hours: Decimal


class EstimatePanelOut(Schema):
    estimate: EstimateOut | None
    compared: list[OptionOut]
    cost: CostOut | None
    notes: list[str]


def _estimate_out(estimate: Estimate) -> dict:
    return {
        "seconds": estimate.seconds,
        "low_seconds": estimate.low_seconds,
        "high_seconds": estimate.high_seconds,
        "training_seconds": estimate.training_seconds,
        "augmentation_seconds": estimate.augmentation_seconds,
        "basis": estimate.basis,
        "runs": estimate.runs,
    }


@router.get("/templates", response=list[TemplateOut])
def list_templates(request: HttpRequest):
    """Enabled workload templates, each saying whether your account may use it."""
    return [
        {
            "name": t.name,
            "task_type": t.task_type,
            "network": t.network,
            "command_template": t.command_template,
            "augmentation_command": t.augmentation_command,
            "forbidden_gpu_models": [m.name for m in t.forbidden_gpu_models.all()],
            "default_max_runtime_minutes": t.default_max_runtime_minutes,
            "available": not reason,
            "unavailable_reason": reason,
        }
        for t, reason in templates_for_user(user=request.user)
    ]


@router.get("/estimates", response=EstimatePanelOut)
def get_estimate(request: HttpRequest, query: Query[EstimateQuery]):
    """Expected duration with a range, other card counts to compare, and the cost for you."""
    gpu_model, missing = row_named(GpuModel.objects.all(), query.gpu_model)
    if gpu_model is None:
        raise ValidationError({"gpu_model": [missing]})
    template = None
    if query.template:
        template, missing = row_named(WorkloadTemplate.objects.all(), query.template)
        if template is None:
            raise ValidationError({"template": [missing]})
    panel = estimate_panel(
        user=request.user,
        template=template,
        gpu_model=gpu_model,
        cards=query.cards,
        dataset_samples=query.dataset_samples,
        with_augmentation=query.augmentation,
        command=query.command,
    )
    return {
        "estimate": _estimate_out(panel.chosen.estimate) if panel.chosen else None,
        "compared": [
            {"cards": o.cards, "estimate": _estimate_out(o.estimate)} for o in panel.others
        ],
        "cost": asdict(panel.cost) if panel.cost else None,
        "notes": panel.notes,
    }
