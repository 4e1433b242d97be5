"""The New job form (seed 002): a front for ``job_submit`` that also previews the request.

The form parses only what HTML sends as text (the port list, run time units)
and turns the page's ratio choices into the API's body; every domain rule
lives in the submit service, so the form and the API say the same things.
It works without JavaScript: the Apply, Check feasibility and View
environment variables buttons are plain submit buttons that htmx, where it
runs, turns into requests that re-render one panel.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db.models import prefetch_related_objects
from django.utils.functional import cached_property
from django.utils.translation import gettext_lazy as _

from billing.rules import gpu_model_refusals
from jobs.environment import EnvironmentInput, job_environment, shown_environment
from jobs.models import Job, Project
from jobs.selectors import projects_for_user
from jobs.services.admission import request_admission, request_billing_errors
from jobs.services.job_input import job_input_errors
from jobs.services.resources_input import FieldErrors, job_resources_resolve, resources_resolve
from resources.describe import describe_request
from resources.feasibility import Feasibility
from resources.models import GpuModel, ResourceKind, SiteSettings, Spec
from resources.ratios import mib_to_gib, milli_to_cores
from resources.request import ResourceRequest

from .job_fields import CUSTOM, LIMIT_FIELDS, LIVE_FIELDS, JobFields
from .model_choices import default_model, gpu_model_label, grouped_choices, offered_models
from .prefill import form_initial
from .template_choice import add_template_fields, template_submit_data

MULTI_FIELDS = ("datasets", "pretrained_models")
# Service field → form field, where they differ.
SERVICE_TO_FORM = {"max_runtime_minutes": "max_runtime"}


class JobForm(JobFields):
    """The fields of ``JobFields`` with their choices, defaults, previews and submit body."""

    def __init__(
        self,
        *args,
        user: AbstractBaseUser,
        project_name: str = "",
        body: dict | None = None,
        submitting: bool = False,
        **kwargs,
    ) -> None:
        """``body``: a submit body to fill an unbound form with (Run again, a template).

        ``submitting``: the values are submitted as they are, never fitted to the mode;
        the service says what is wrong with them.
        """
        super().__init__(*args, **kwargs)
        self.user = user
        self.submitting = submitting
        self.site = SiteSettings.load()
        self.projects = list(projects_for_user(user=user).order_by("name"))
        self.gpu_models = list(GpuModel.objects.prefetch_related("members").order_by("name"))
        # Why the account may not use a model (billing's rule); absent: it may.
        self.refusals = gpu_model_refusals(user=user, gpu_models=self.gpu_models)
        if body and not self.is_bound:
            self.initial.update(form_initial(body, self.gpu_models))
        if self.is_bound:
            self.data = self.data.copy()
        else:
            self._set_initial(project_name)
        if not submitting:
            self._fit_model_to_kind()
        self.project = next((p for p in self.projects if p.name == self.value("project")), None)
        if self.project is not None:
            prefetch_related_objects(
                [self.project], "datasets", "pretrained_models", "code_versions", "images"
            )
        self._set_choices()
        self._follow_project()
        add_template_fields(self)
        self.preview = self._preview_request()
        self._show_derived_values()

    # Choices and defaults -------------------------------------------------------------------

    def _set_choices(self) -> None:
        self.fields["project"].choices = [(p.name, p.name) for p in self.projects]
        models = [(m.name, gpu_model_label(m), m.name) for m in self.offered_models]
        self.fields["gpu_model"].choices = grouped_choices(models, self.refusals)
        specs = Spec.objects.filter(enabled=True).select_related("gpu_model")
        self.fields["spec"].choices = [("", "—")] + grouped_choices(
            [(s.name, s.name, s.gpu_model.name if s.gpu_model else None) for s in specs],
            self.refusals,
        )
        if not self.user.is_staff:
            priority = self.fields["priority"]
            priority.choices = priority.choices[:1]
            priority.help_text = _("High priority is for staff.")
        project = self.project
        fields = self.fields
        fields["datasets"].choices = [(d.name, d.name) for d in _all(project, "datasets")]
        fields["pretrained_models"].choices = [
            (m.name, m.name) for m in _all(project, "pretrained_models")
        ]
        fields["code_version"].choices = [("", "—")] + [
            (c.name, c.name) for c in _all(project, "code_versions")
        ]
        fields["image"].choices = [("", _("No image (the node's own system)"))] + [
            (i.name, image_label(i)) for i in _all(project, "images")
        ]

    def _set_initial(self, project_name: str) -> None:
        names = [p.name for p in self.projects]
        chosen = project_name if project_name in names else next(iter(names), "")
        self.initial.setdefault("project", chosen)
        default = default_model(self.gpu_models, self.refusals)
        self.initial.setdefault("gpu_model", default.name if default else "")

    @property
    def offered_models(self) -> list[GpuModel]:
        offered = offered_models(self.gpu_models, self.current_kind)
        chosen = self.value("gpu_model")
        if self.submitting and chosen not in {m.name for m in offered}:
            # A refused submit shows the model it was refused for, as typed.
            offered += [m for m in self.gpu_models if m.name == chosen]
        return offered

    def _fit_model_to_kind(self) -> None:
        """A mode's model is one it offers: switching to vGPU leaves P4 for a model with vGPUs."""
        offered = self.offered_models
        if self.value("gpu_model") in {m.name for m in offered}:
            return
        default = default_model(offered, self.refusals)
        if default is not None:
            self._set_value("gpu_model", default.name)

    def _follow_project(self) -> None:
        """A new project selects all of its data, its newest code and default image (seed 002)."""
        project = self.project
        if project is None or self.value("items_project") == project.name:
            return
        defaults = {
            "items_project": project.name,
            "datasets": [d.name for d in _all(project, "datasets")],
            "pretrained_models": [m.name for m in _all(project, "pretrained_models")],
            "code_version": next((c.name for c in _all(project, "code_versions")), ""),
            "image": next((i.name for i in _all(project, "images") if i.is_default), ""),
        }
        for name, value in defaults.items():
            self._set_value(name, value)

    # Reading and writing the current values, bound or not ----------------------------------

    def value(self, name: str):
        if self.is_bound:
            return self.data.getlist(name) if name in MULTI_FIELDS else self.data.get(name)
        return self.initial.get(name, self.fields[name].initial)

    def _set_value(self, name: str, value) -> None:
        if not self.is_bound:
            self.initial[name] = value
        elif isinstance(value, list):
            self.data.setlist(name, value)
        else:
            self.data[name] = value

    @property
    def current_kind(self) -> str:
        return self.value("kind") or ResourceKind.GPU

    @property
    def spec_mode(self) -> bool:
        return self.site.spec_management_enabled and self.value("config_mode") == "spec"

    @property
    def distributed(self) -> bool:
        return self.value("task_mode") == Job.TaskMode.DISTRIBUTED

    @property
    def gpu_ratio_custom(self) -> bool:
        return self.value("gpu_ratio") == CUSTOM

    @property
    def cpu_ratio_custom(self) -> bool:
        return self.value("cpu_memory_ratio") == CUSTOM

    @property
    def vgpu_unlocked(self) -> bool:
        return self._ticked("vgpu_memory_unlocked")

    def _ticked(self, name: str) -> bool:
        """A checkbox's value: True unbound, "on" as a browser posts it."""
        return self.value(name) in (True, "on", "true", "1")

    # The API body ---------------------------------------------------------------------------

    def submit_data(self) -> dict:
        """The ``POST /api/v1/jobs`` body this form stands for."""
        return {
            "project": self.value("project") or "",
            "name": self.value("name") or "",
            "task_mode": self.value("task_mode") or Job.TaskMode.SINGLE,
            "replicas": self.value("replicas") if self.distributed else None,
            "config_mode": "spec" if self.spec_mode else "parameter",
            "spec": self.value("spec") if self.spec_mode else None,
            "resources": self._resources_data(),
            "command": self.value("command") or "",
            "datasets": list(self.value("datasets") or []),
            "pretrained_models": list(self.value("pretrained_models") or []),
            "code_version": self.value("code_version") or "",
            "image": self.value("image") or "",
            "ports": parse_ports(self.value("ports") or ""),
            "max_runtime_minutes": self._max_runtime_minutes(),
            "max_retries": self.value("max_retries"),
            "priority": self.value("priority") or "normal",
            "preemptible": self._ticked("preemptible"),
            "keep_checkpoint": self._ticked("keep_checkpoint"),
            **template_submit_data(self),
        }

    def _resources_data(self) -> dict:
        kind = self.current_kind
        data = {"kind": kind, "storage_gib": self.value("storage_gib")}
        if kind == ResourceKind.CPU:
            data["cpu_cores"] = self.value("cpu_cores")
            if self.cpu_ratio_custom:
                data["memory_gib"] = self.value("memory_gib")
            else:
                data["cpu_memory_ratio"] = self.value("cpu_memory_ratio")
            return data
        data.update(gpu_model=self.value("gpu_model"), gpu_count=self.value("gpu_count"))
        if kind == ResourceKind.VGPU:
            data["vgpu_compute_percent"] = self.value("vgpu_compute_percent")
            if self.vgpu_unlocked:
                data["vgpu_memory_gib"] = self.value("vgpu_memory_gib")
        if self.gpu_ratio_custom:
            data.update(cpu_cores=self.value("cpu_cores"), memory_gib=self.value("memory_gib"))
        return data

    def _max_runtime_minutes(self):
        value = (self.value("max_runtime") or "").strip()
        if not value or self.value("max_runtime_unit") != "hours":
            return value or None
        try:
            minutes = Decimal(value) * 60
        except InvalidOperation:
            return value  # the service names the field and what is wrong
        return int(minutes.to_integral_value(ROUND_HALF_UP))

    # Previews ------------------------------------------------------------------------------

    def _preview_request(self) -> ResourceRequest | None:
        """The request the current values make; what is wrong with them goes to ``live_errors``."""
        errors = FieldErrors()
        request = resources_resolve(user=self.user, data=self.submit_data(), errors=errors)
        if request is not None:
            # What the account may not use, as submit says it (a spec answers for its model).
            rename = {"gpu_model": "spec"} if self.spec_mode else {}
            errors.merge(request_billing_errors(user=self.user, request=request), rename)
        # Shown next to their fields as they are typed, before any submit.
        self._resource_errors = {
            name: messages for name, messages in errors.items() if name in self.fields
        }
        return request

    def live_errors(self, name: str) -> list[str]:
        """What is wrong with field ``name`` as typed (the resource and limit fields)."""
        if name in LIMIT_FIELDS:
            return self._limit_errors.get(name, [])
        return self._resource_errors.get(name, [])

    @cached_property
    def _limit_errors(self) -> dict[str, list[str]]:
        errors = job_input_errors(user=self.user, data=self.submit_data())
        named = {SERVICE_TO_FORM.get(field, field): messages for field, messages in errors.items()}
        return {name: named[name] for name in LIMIT_FIELDS if name in named}

    def limit_fields(self) -> list:
        return [self[name] for name in LIMIT_FIELDS]

    def live_fields(self) -> list:
        """The fields whose live messages a check re-renders (the resource section's)."""
        spec_fields = () if self.site.spec_management_enabled else ("config_mode", "spec")
        return [self[name] for name in LIVE_FIELDS if name not in spec_fields]

    def live_error_list(self) -> list[str]:
        return [message for name in LIVE_FIELDS for message in self._resource_errors.get(name, [])]

    def _show_derived_values(self) -> None:
        """Show what the ratios give in the fields the user did not set (read-only there)."""
        request = self.preview
        if request is None or self.spec_mode:
            return
        derived = {}
        if request.gpu_model is not None and not self.gpu_ratio_custom:
            derived["cpu_cores"] = milli_to_cores(request.cpu_milli)
            derived["memory_gib"] = mib_to_gib(request.memory_mib)
        if request.gpu_model is None and not self.cpu_ratio_custom:
            derived["memory_gib"] = mib_to_gib(request.memory_mib)
        if request.is_vgpu and not self.vgpu_unlocked:
            derived["vgpu_memory_gib"] = mib_to_gib(request.vgpu_memory_mib)
        for name, value in derived.items():
            self._set_value(name, str(value))
            self.fields[name].widget.attrs["readonly"] = True

    def preview_summary(self) -> str:
        return describe_request(self.preview) if self.preview else ""

    def vgpu_totals(self) -> dict | None:
        request = self.preview
        if request is None or not request.is_vgpu:
            return None
        return {
            "compute_percent": request.gpu_count * request.vgpu_compute_percent,
            "memory_gib": mib_to_gib(request.gpu_count * request.vgpu_memory_mib),
        }

    def environment(self) -> dict[str, str] | None:
        """Every variable the job would get with the current choices."""
        request = self.preview
        if request is None:
            return None
        ports = tuple(p for p in parse_ports(self.value("ports") or "") if isinstance(p, int))
        env = job_environment(
            EnvironmentInput(
                job_id=None,
                replicas=request.replicas,
                distributed=self.distributed,
                kind=request.kind,
                gpu_count=request.gpu_count,
                card_memory_mib=request.gpu_model.card_memory_mib if request.gpu_model else None,
                vgpu_compute_percent=request.vgpu_compute_percent,
                vgpu_memory_mib=request.vgpu_memory_mib,
                dataset_count=len(self.value("datasets") or []),
                pretrained_count=len(self.value("pretrained_models") or []),
                ports=tuple(sorted(set(ports))),
                preempt_grace_seconds=(
                    SiteSettings.load().preempt_grace_seconds
                    if self._ticked("preemptible")
                    else None
                ),
            )
        )
        return shown_environment(env)

    def feasibility(self) -> Feasibility:
        """The feasibility check; input errors come back as reasons to fix first."""
        try:
            request = job_resources_resolve(user=self.user, data=self.submit_data())
        except ValidationError as error:
            return Feasibility(error.message_dict)
        admission = request_admission(
            user=self.user, request=request, preemptible=self._ticked("preemptible")
        )
        return admission.as_feasibility()

    @property
    def error_count(self) -> int:
        return sum(len(messages) for messages in self.errors.values())

    def add_service_errors(self, error: ValidationError) -> None:
        """Show the submit service's errors next to the fields they name."""
        for field, messages in error.message_dict.items():
            name = SERVICE_TO_FORM.get(field, field)
            for message in messages:
                self.add_error(name if name in self.fields else None, message)


def parse_ports(text: str) -> list:
    """Numbers from "8080, 6006"; anything else is kept for the service to name."""
    ports: list = []
    for token in re.split(r"[\s,;]+", text.strip()):
        if token:
            ports.append(int(token) if token.isdigit() else token)
    return ports


def image_label(image) -> str:
    """An image as the form lists it: its name, and what it holds or why it cannot be used."""
    if image.state != image.State.READY:
        return f"{image.name} ({image.get_state_display()})"
    found = [str(_("the node's own system"))] if image.is_host_system else image.contents
    return f"{image.name} ({', '.join(found)})" if found else image.name


def _all(project: Project | None, relation: str) -> list:
    return list(getattr(project, relation).all()) if project is not None else []
