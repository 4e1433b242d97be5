from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from resources.admin_units import UnitFieldsMixin
from resources.models import REPLICA_RESOURCE_COLUMNS

from .models import (
    CodeVersion,
    Dataset,
    EstimatePoint,
    Image,
    Job,
    JobEvent,
    PretrainedModel,
    Project,
    Replica,
    ReplicaAttempt,
    WorkloadTemplate,
)
from .services.stop import job_stop


class DatasetInline(admin.TabularInline):
    model = Dataset
    extra = 0


class PretrainedModelInline(admin.TabularInline):
    model = PretrainedModel
    extra = 0


class CodeVersionInline(admin.TabularInline):
    model = CodeVersion
    extra = 0


class ImageInline(admin.TabularInline):
    """A project's images; each is added and shown on its own page (``image_admin.py``)."""

    model = Image
    extra = 0
    fields = ["name", "is_default", "source", "state", "digest"]
    readonly_fields = ["source", "state", "digest"]
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "created_at"]
    search_fields = ["name", "owner__username"]
    filter_horizontal = ["members"]
    inlines = [DatasetInline, PretrainedModelInline, CodeVersionInline, ImageInline]


class JobEventInline(admin.TabularInline):
    model = JobEvent
    extra = 0
    can_delete = False
    fields = readonly_fields = ["created_at", "from_state", "to_state", "shown_reason", "data"]

    @admin.display(description=_("reason"))
    def shown_reason(self, event: JobEvent) -> str:
        return event.text


class ReplicaInline(admin.TabularInline):
    model = Replica
    extra = 0
    can_delete = False
    readonly_fields = ["index", "node", "card_indices"]


# What the platform writes: shown, never edited (a state changes through job_transition).
JOB_READONLY_FIELDS = [
    "state",
    "shown_reason",
    "queue_position",
    "estimated_start",
    "attempt",
    "started_at",
    "finished_at",
    # The scheduler's: whether the job borrows beyond its owner's quota, and its preemption.
    "borrowed",
    "preempted_for",
    "preempt_requested_at",
]


@admin.register(Job)
class JobAdmin(UnitFieldsMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "name",
        "owner",
        "project",
        "state",
        "resource_kind",
        "gpu_model",
        "gpu_count",
        "replicas",
        "priority",
        "submitted_at",
        "idle_since",
    ]
    list_filter = [
        "state",
        "resource_kind",
        "task_mode",
        "gpu_model",
        "priority",
        "preemptible",
        ("idle_since", admin.EmptyFieldListFilter),
    ]
    search_fields = ["name", "owner__username", "project__name"]
    date_hierarchy = "submitted_at"
    list_select_related = ["owner", "project", "gpu_model"]
    # The reason as the reader reads it; its stored English, code and parameters stay out.
    exclude = ["state_reason", "state_reason_code", "state_reason_params"]
    fields = [
        "owner",
        "project",
        "name",
        "task_mode",
        "replicas",
        "config_mode",
        "spec",
        "template",
        "resource_kind",
        *REPLICA_RESOURCE_COLUMNS,
        "command",
        "augmentation_command",
        "code_version",
        "image",
        "max_runtime_minutes",
        "expected_seconds",
        "max_retries",
        "priority",
        "preemptible",
        "keep_checkpoint",
        "stop_requested_at",
        *JOB_READONLY_FIELDS,
    ]
    readonly_fields = JOB_READONLY_FIELDS
    inlines = [ReplicaInline, JobEventInline]
    actions = ["stop_jobs"]

    @admin.display(description=_("reason"))
    def shown_reason(self, job: Job) -> str:
        return job.reason_text

    @admin.action(description=_("Stop the selected jobs"))
    def stop_jobs(self, request: HttpRequest, queryset) -> None:
        """The app's Stop, for each unfinished one: the stop records who asked."""
        unfinished = [job for job in queryset.order_by("pk") if not job.is_finished]
        for job in unfinished:
            job_stop(job=job, actor=request.user)
        count = len(unfinished)
        self.message_user(
            request,
            ngettext(
                "Stop requested for %(count)d job.", "Stop requested for %(count)d jobs.", count
            )
            % {"count": count},
            messages.SUCCESS,
        )


@admin.register(ReplicaAttempt)
class ReplicaAttemptAdmin(admin.ModelAdmin):
    list_display = [
        "replica",
        "number",
        "node",
        "state",
        "exit_code",
        "platform_fault",
        "started_at",
        "ended_at",
    ]
    list_filter = ["state", "platform_fault", "node"]
    list_select_related = ["replica", "node"]
    exclude = ["reason", "reason_code", "reason_params"]
    readonly_fields = ["shown_reason"]

    @admin.display(description=_("reason"))
    def shown_reason(self, attempt: ReplicaAttempt) -> str:
        return attempt.reason_text


class EstimatePointInline(admin.TabularInline):
    model = EstimatePoint
    extra = 0


@admin.register(WorkloadTemplate)
class WorkloadTemplateAdmin(admin.ModelAdmin):
    list_display = ["name", "task_type", "network", "default_max_runtime_minutes", "enabled"]
    list_filter = ["task_type", "enabled"]
    search_fields = ["name", "network"]
    filter_horizontal = ["forbidden_gpu_models"]
    inlines = [EstimatePointInline]


from . import image_admin  # noqa: F401, E402  (registers ImageAdmin)
