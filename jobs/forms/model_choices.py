"""The GPU models and specs New job offers: those of the chosen kind, usable ones first.

Which models an account may use is billing's rule (``billing.rules``); this
module only lays the lists out: the usable models as plain options, the others
in a group named for why the account may not use them, never as if usable.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from billing.models import model_is_free_tier
from billing.rules import ModelRefusal
from resources.models import GpuModel, ResourceKind


def offered_models(models: list[GpuModel], kind: str) -> list[GpuModel]:
    """The models a job of ``kind`` may ask for: a vGPU job only those with virtual GPUs."""
    if kind == ResourceKind.CPU:
        return models
    return [m for m in models if m.supports(kind)]


def default_model(models: list[GpuModel], refusals: dict[str, ModelRefusal]) -> GpuModel | None:
    """The first usable free-tier model (billing's rule), else the first usable one, else the
    first; ``models`` have their members loaded."""
    usable = [m for m in models if m.name not in refusals]
    free = (m for m in usable if model_is_free_tier(m))
    return next(free, next(iter(usable), next(iter(models), None)))


def grouped_choices(
    items: list[tuple[str, str, str | None]], refusals: dict[str, ModelRefusal]
) -> list:
    """``(value, label, model name)`` as choices: usable ones, then a group per refusal."""
    usable = [(value, label) for value, label, model in items if model not in refusals]
    groups: dict[str, list] = {}
    for value, label, model in items:
        if model in refusals:
            groups.setdefault(refusals[model].label, []).append((value, label))
    return usable + [
        (_("Not available to your account: %(why)s") % {"why": why}, options)
        for why, options in groups.items()
    ]


def gpu_model_label(model: GpuModel) -> str:
    return _("%(name)s — %(memory)s GiB card; %(cores)s cores, %(ram)s GiB per card") % {
        "name": model.name,
        "memory": model.card_memory_gib,
        "cores": model.cpu_cores_per_card,
        "ram": model.memory_gib_per_card,
    }
