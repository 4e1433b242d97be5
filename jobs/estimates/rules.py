"""Which workload template a person may use with which GPU model.

The submit service (form, API and CLI alike) calls ``template_errors``; the form
also lists each template with ``template_unavailable_reason`` so a person sees
the restriction before choosing.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.utils.translation import gettext as _

from billing.accounts import account_for_user
from billing.rules import free_tier_models
from jobs.models import WorkloadTemplate
from resources.models import GpuModel


def _names(models) -> str:
    return ", ".join(sorted(m.name for m in models)) or "—"


def _free_models_if_unbilled(user: AbstractBaseUser) -> list[GpuModel] | None:
    """The models an account without billing may use (billing's rule); None when billing is on."""
    if account_for_user(user=user).billing_enabled:
        return None
    return free_tier_models()


def _forbidden_landing(gpu_model: GpuModel, forbidden: set[int]) -> list[GpuModel]:
    """The models a job for ``gpu_model`` may be placed on that are in ``forbidden`` (pks)."""
    if gpu_model.pk in forbidden:
        return [gpu_model]
    if gpu_model.is_aggregated:
        return [m for m in gpu_model.members.all() if m.pk in forbidden]
    return []


def _closed_reason(template: WorkloadTemplate, free_models: list[GpuModel] | None) -> str:
    if not template.enabled:
        return _("The workload template %(template)s is disabled; choose another.") % {
            "template": template.name
        }
    if free_models is None:
        return ""
    forbidden = {m.pk for m in template.forbidden_gpu_models.all()}
    if free_models and all(_forbidden_landing(m, forbidden) for m in free_models):
        return _(
            "Accounts without billing may use only %(free)s, and %(template)s may not run "
            "there, so it is not available to your account. Choose another network, or ask "
            "an admin to enable billing."
        ) % {"free": _names(free_models), "template": template.name}
    return ""


def template_unavailable_reason(*, user: AbstractBaseUser, template: WorkloadTemplate) -> str:
    """Why this person cannot use the template with any GPU model at all; '' when they can.

    An account without billing may use only free-tier models; a template that
    may run on none of them (NASNet: not on P4) is closed to it altogether.
    """
    return _closed_reason(template, _free_models_if_unbilled(user))


def template_errors(
    *, user: AbstractBaseUser, template: WorkloadTemplate | None, gpu_model: GpuModel | None
) -> dict[str, list[str]]:
    """Errors keyed by request field (``template``, ``gpu_model``); empty when allowed."""
    if template is None:
        return {}
    reason = template_unavailable_reason(user=user, template=template)
    if reason:
        return {"template": [reason]}
    if gpu_model is None:
        return {}
    landing = _forbidden_landing(gpu_model, {m.pk for m in template.forbidden_gpu_models.all()})
    if landing == [gpu_model]:
        message = _("%(template)s may not run on %(model)s; choose another GPU model.") % {
            "template": template.name,
            "model": gpu_model.name,
        }
        return {"gpu_model": [message]}
    if landing:
        message = _(
            "%(template)s may not run on %(members)s, and a job for %(model)s may be placed "
            "there; choose another GPU model."
        ) % {"template": template.name, "members": _names(landing), "model": gpu_model.name}
        return {"gpu_model": [message]}
    return {}


def templates_for_user(*, user: AbstractBaseUser) -> list[tuple[WorkloadTemplate, str]]:
    """Enabled templates with the reason each is closed to this person ('' when open)."""
    free_models = _free_models_if_unbilled(user)
    templates = WorkloadTemplate.objects.filter(enabled=True).prefetch_related(
        "forbidden_gpu_models"
    )
    return [(t, _closed_reason(t, free_models)) for t in templates]
