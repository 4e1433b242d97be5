"""The New job form's template choice and estimate panel.

Choosing a template fills the startup command, the augmentation-search command
and the max run time once (the person may then edit them); ``filled_template``
remembers which template filled them so that a later re-render does not
overwrite an edit. Templates closed to the person (NASNet for an account
without billing) stay listed with the reason, and the submit service refuses
them with the same words.
"""

from __future__ import annotations

from functools import partial

from django import forms
from django.utils.translation import gettext_lazy as _

from jobs.estimates.panel import EstimatePanel, estimate_panel
from jobs.estimates.rules import templates_for_user
from jobs.models import WorkloadTemplate
from jobs.models.job import MAX_COMMAND_CHARS

from .fields import NameChoiceField

NO_TEMPLATE = ""


def add_template_fields(form: forms.Form) -> None:
    """Add the template fields to a bound or unbound ``JobForm``, and fill from a new choice."""
    form.fields["template"] = NameChoiceField(
        label=_("Workload template"),
        required=False,
        help_text=_("A known network fills the commands; any command still runs without one."),
    )
    form.fields["augmentation_command"] = forms.CharField(
        label=_("Augmentation-search command"),
        required=False,
        strip=False,
        help_text=_(
            "Optional. Runs before the startup command in the same replica; billed, but the "
            "max run time counts from the start of training."
        ),
        widget=forms.Textarea(
            attrs={"rows": 2, "spellcheck": "false", "maxlength": MAX_COMMAND_CHARS}
        ),
    )
    form.fields["filled_template"] = forms.CharField(required=False, widget=forms.HiddenInput)
    listed = templates_for_user(user=form.user)
    form.templates = {t.name: (t, reason) for t, reason in listed}
    form.fields["template"].choices = [(NO_TEMPLATE, _("None: my own command"))] + [
        (t.name, _template_label(t, reason)) for t, reason in listed
    ]
    _fill_from_template(form)
    # For the page; the panel is computed only where a template renders it.
    form.template_note = template_note(form)
    form.estimate_panel = partial(form_estimate_panel, form)


def _template_label(template: WorkloadTemplate, closed_reason: str) -> str:
    label = f"{template.name} · {template.get_task_type_display()}"
    forbidden = ", ".join(m.name for m in template.forbidden_gpu_models.all())
    if closed_reason:
        return str(_("%(label)s (not available to your account)") % {"label": label})
    if forbidden:
        return str(_("%(label)s (not on %(models)s)") % {"label": label, "models": forbidden})
    return label


def chosen_template(form: forms.Form) -> WorkloadTemplate | None:
    entry = form.templates.get(form.value("template") or NO_TEMPLATE)
    return entry[0] if entry else None


def template_note(form: forms.Form) -> str:
    """The chosen template's restriction, shown under the choice before submitting."""
    entry = form.templates.get(form.value("template") or NO_TEMPLATE)
    if entry is None:
        return ""
    template, closed_reason = entry
    if closed_reason:
        return closed_reason
    forbidden = ", ".join(m.name for m in template.forbidden_gpu_models.all())
    if forbidden:
        return str(
            _("%(template)s may not run on %(models)s.")
            % {"template": template.name, "models": forbidden}
        )
    return ""


def _fill_from_template(form: forms.Form) -> None:
    template = chosen_template(form)
    name = template.name if template else NO_TEMPLATE
    if (form.value("filled_template") or NO_TEMPLATE) == name:
        return
    form._set_value("filled_template", name)
    if template is None:
        return
    form._set_value("command", template.command_template)
    form._set_value("augmentation_command", template.augmentation_command)
    if template.default_max_runtime_minutes:
        form._set_value("max_runtime", str(template.default_max_runtime_minutes))
        form._set_value("max_runtime_unit", "minutes")


def template_submit_data(form: forms.Form) -> dict:
    """The template part of the API body."""
    return {
        "template": form.value("template") or None,
        "augmentation_command": form.value("augmentation_command") or "",
    }


def form_estimate_panel(form: forms.Form) -> EstimatePanel:
    """The estimate for the form's current choices (no estimate while they are invalid)."""
    request = form.preview
    sizes = {d.name: d.size_samples for d in (form.project.datasets.all() if form.project else [])}
    chosen = form.value("datasets") or []
    return estimate_panel(
        user=form.user,
        template=chosen_template(form),
        gpu_model=request.gpu_model if request else None,
        cards=request.replicas * request.gpu_count if request and request.is_gpu else 0,
        dataset_samples=sum(sizes.get(name, 0) for name in chosen),
        with_augmentation=bool((form.value("augmentation_command") or "").strip()),
        command=(form.value("command") or "").replace("\r\n", "\n").strip("\n"),
    )
