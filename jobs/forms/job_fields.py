"""The New job form's fields: what the page asks, in the page's units (seed 002).

``JobForm`` (``job.py``) adds what the form does with them: choices, defaults,
the previews and the submit body.
"""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from jobs.models import Job
from jobs.models.job import (
    MAX_COMMAND_CHARS,
    MAX_PORT,
    MAX_PORTS_PER_JOB,
    MAX_RETRIES,
    MIN_PORT,
)
from resources.models import (
    DEFAULT_STORAGE_GIB,
    MAX_VGPU_COMPUTE_PERCENT,
    MIN_DISTRIBUTED_REPLICAS,
    MIN_STORAGE_GIB,
    MIN_VGPU_COMPUTE_PERCENT,
    ResourceKind,
)
from resources.ratios import (
    CPU_MEMORY_RATIOS,
    DEFAULT_CPU_CORES,
    DEFAULT_CPU_MEMORY_RATIO,
    DEFAULT_VGPU_COMPUTE_PERCENT,
)

from .fields import NameChoiceField, NameMultipleChoiceField, interpolated_lazy, number_input

RATIO, CUSTOM = "ratio", "custom"
# The resource section's fields, whose messages show as they are typed.
LIVE_FIELDS = (
    "task_mode",
    "replicas",
    "config_mode",
    "spec",
    "kind",
    "gpu_model",
    "gpu_count",
    "vgpu_compute_percent",
    "vgpu_memory_gib",
    "cpu_memory_ratio",
    "cpu_cores",
    "memory_gib",
    "storage_gib",
)

# The "Ports and limits" fields, checked the same way by the submit service's input checks.
LIMIT_FIELDS = ("ports", "max_runtime", "max_retries")


class JobFields(forms.Form):
    live_field_names = LIVE_FIELDS + LIMIT_FIELDS

    project = NameChoiceField(label=_("Project"))
    name = forms.CharField(label=_("Name"), required=False)
    task_mode = forms.ChoiceField(
        label=_("Task mode"),
        choices=Job.TaskMode.choices,
        initial=Job.TaskMode.SINGLE,
        widget=forms.RadioSelect,
    )
    replicas = forms.CharField(
        label=_("Nodes"),
        required=False,
        initial=MIN_DISTRIBUTED_REPLICAS,
        widget=number_input(min=MIN_DISTRIBUTED_REPLICAS, step=1),
    )
    config_mode = forms.ChoiceField(
        label=_("Config mode"),
        choices=Job.ConfigMode.choices,
        initial=Job.ConfigMode.PARAMETER,
        required=False,
        widget=forms.RadioSelect,
    )
    spec = NameChoiceField(label=_("Spec"), required=False)
    kind = forms.ChoiceField(
        label=_("Resources"),
        choices=ResourceKind.choices,
        initial=ResourceKind.GPU,
        widget=forms.RadioSelect,
    )
    gpu_model = NameChoiceField(label=_("GPU model"), required=False)
    gpu_count = forms.CharField(
        label=_("GPU count"), required=False, initial=1, widget=number_input(min=1, step=1)
    )
    vgpu_compute_percent = forms.CharField(
        label=_("Compute per GPU (%)"),
        required=False,
        initial=DEFAULT_VGPU_COMPUTE_PERCENT,
        widget=number_input(min=MIN_VGPU_COMPUTE_PERCENT, max=MAX_VGPU_COMPUTE_PERCENT, step=1),
    )
    vgpu_memory_unlocked = forms.BooleanField(
        label=_("Unlock the ratio and set GPU memory per GPU myself"), required=False
    )
    vgpu_memory_gib = forms.CharField(
        label=_("GPU memory per GPU (GiB)"), required=False, widget=number_input(step="any")
    )
    gpu_ratio = forms.ChoiceField(
        label=_("CPU and memory"),
        choices=[(RATIO, _("Follow the model's per-card ratio")), (CUSTOM, _("Custom"))],
        initial=RATIO,
        required=False,
        widget=forms.RadioSelect,
    )
    cpu_memory_ratio = forms.ChoiceField(
        label=_("Memory per core"),
        choices=[(str(r), f"1:{r}") for r in CPU_MEMORY_RATIOS] + [(CUSTOM, _("Custom"))],
        initial=str(DEFAULT_CPU_MEMORY_RATIO),
        required=False,
    )
    cpu_cores = forms.CharField(
        label=_("CPU cores"),
        required=False,
        initial=DEFAULT_CPU_CORES,
        widget=number_input(step="any", min=0),
    )
    memory_gib = forms.CharField(
        label=_("Memory (GiB)"), required=False, widget=number_input(step="any", min=0)
    )
    storage_gib = forms.CharField(
        label=_("Temporary storage (GiB)"),
        required=False,
        initial=DEFAULT_STORAGE_GIB,
        help_text=interpolated_lazy(
            _("At least %(min)s GiB; freed when the job ends."), {"min": MIN_STORAGE_GIB}
        ),
        widget=number_input(min=MIN_STORAGE_GIB, step=1),
    )
    command = forms.CharField(
        label=_("Startup command"),
        required=False,
        strip=False,
        help_text=interpolated_lazy(
            _("Up to %(max)s characters, one command per line, run from /."),
            {"max": f"{MAX_COMMAND_CHARS:,}"},
        ),
        widget=forms.Textarea(
            attrs={"rows": 6, "spellcheck": "false", "maxlength": MAX_COMMAND_CHARS}
        ),
    )
    items_project = forms.CharField(required=False, widget=forms.HiddenInput)
    datasets = NameMultipleChoiceField(
        label=_("Datasets"), required=False, widget=forms.CheckboxSelectMultiple
    )
    pretrained_models = NameMultipleChoiceField(
        label=_("Pretrained models"), required=False, widget=forms.CheckboxSelectMultiple
    )
    code_version = NameChoiceField(label=_("Code version"), required=False)
    image = NameChoiceField(label=_("Image"), required=False)
    ports = forms.CharField(
        label=_("Open ports"),
        required=False,
        help_text=interpolated_lazy(
            _("Up to %(max)s, each %(low)s–%(high)s, separated by commas; can be changed later."),
            {"max": MAX_PORTS_PER_JOB, "low": MIN_PORT, "high": MAX_PORT},
        ),
        widget=forms.TextInput(attrs={"placeholder": "8080, 6006"}),
    )
    max_runtime = forms.CharField(
        label=_("Max run time"),
        required=False,
        help_text=_("Empty: no limit. The job is stopped when it runs longer."),
        widget=number_input(min=1, step="any"),
    )
    max_runtime_unit = forms.ChoiceField(
        label=_("Unit"),
        choices=[("minutes", _("minutes")), ("hours", _("hours"))],
        initial="hours",
        required=False,
    )
    max_retries = forms.CharField(
        label=_("Replica retries"),
        required=False,
        initial=0,
        help_text=interpolated_lazy(
            _("0–%(max)s. A replica that fails is restarted whole."), {"max": MAX_RETRIES}
        ),
        widget=number_input(min=0, max=MAX_RETRIES, step=1),
    )
    priority = NameChoiceField(
        label=_("Priority"),
        choices=[("normal", _("Normal")), ("high", _("High (staff only)"))],
        initial="normal",
        required=False,
    )
    preemptible = forms.BooleanField(
        label=_("Preemptible"),
        required=False,
        help_text=_(
            "May start beyond your quota on idle cards; stopped (TERM, then KILL after the "
            "site's grace) and requeued when a job within its quota needs them. Use "
            "TRAINYARD_CHECKPOINT to resume."
        ),
    )
    keep_checkpoint = forms.BooleanField(
        label=_("Keep the checkpoint as an output"),
        required=False,
        help_text=_(
            "Once the job has ended, what it saved in TRAINYARD_CHECKPOINT stays and downloads "
            "beside its outputs, instead of being removed."
        ),
    )
