"""The form's estimate panel: the chosen card count, the others to compare, the cost."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from billing.accounts import account_for_user
from jobs.models import WorkloadTemplate
from resources.models import GpuModel

from .cost import Cost, estimate_cost
from .estimate import Estimate, Estimator
from .rules import template_errors

# Seed 000 compares 1, 2 and 6 nodes; 4 is its rough ranges' other count.
COMPARED_CARDS = (1, 2, 4, 6)


@dataclass(frozen=True)
class Option:
    cards: int
    estimate: Estimate


@dataclass(frozen=True)
class EstimatePanel:
    gpu_model: GpuModel | None
    chosen: Option | None
    others: list[Option]
    cost: Cost | None
    # Why there is no estimate (or what limits it), for the person to act on.
    notes: list[str]


def estimate_panel(
    *,
    user: AbstractBaseUser,
    template: WorkloadTemplate | None,
    gpu_model: GpuModel | None,
    cards: int,
    dataset_samples: int,
    with_augmentation: bool,
    command: str,
) -> EstimatePanel:
    """What the form shows beside the choices (a handful of queries, whatever it compares)."""
    if gpu_model is None or cards < 1:
        note = _("Estimates are for jobs on whole GPU cards.")
        return EstimatePanel(gpu_model, None, [], None, [note])
    refused = template_errors(user=user, template=template, gpu_model=gpu_model)
    if refused:
        return EstimatePanel(gpu_model, None, [], None, [m for ms in refused.values() for m in ms])
    estimator = Estimator()
    if template is None:
        estimate = estimator.own_runs(
            owner_id=user.pk, command=command, gpu_model=gpu_model, cards=cards
        )
        note = ngettext(
            "No estimate: you have not run this command on %(cards)s card before.",
            "No estimate: you have not run this command on %(cards)s cards before.",
            cards,
        )
        return _panel(user, gpu_model, cards, estimate, [], note % {"cards": cards})
    if dataset_samples <= 0:
        note = _("No estimate: set the size (samples) of the chosen datasets.")
        return EstimatePanel(gpu_model, None, [], None, [note])

    def at(count: int) -> Estimate | None:
        return estimator.template(
            template=template,
            dataset_samples=dataset_samples,
            gpu_model=gpu_model,
            cards=count,
            with_augmentation=with_augmentation,
        )

    others = [Option(c, e) for c in COMPARED_CARDS if c != cards and (e := at(c)) is not None]
    note = _(
        "No estimate yet: %(template)s has no measured times; its first finished job gives one."
    ) % {"template": template.name}
    return _panel(user, gpu_model, cards, at(cards), others, note)


def _panel(user, gpu_model, cards, estimate, others, missing_note) -> EstimatePanel:
    if estimate is None:
        return EstimatePanel(gpu_model, None, [], None, [missing_note])
    notes = []
    if estimate.augmentation_unknown:
        notes.append(_("Plus the augmentation search, which has no timed runs yet."))
    account = account_for_user(user=user)
    cost = estimate_cost(account=account, gpu_model=gpu_model, cards=cards, estimate=estimate)
    if cost is None:
        notes.append(_("No price is set for %(model)s, so no cost either.") % {"model": gpu_model})
    return EstimatePanel(gpu_model, Option(cards, estimate), others, cost, notes)
