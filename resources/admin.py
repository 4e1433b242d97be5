from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from .admin_units import (
    QuotaForm,
    UnitFieldsMixin,
    cpu_cores,
    memory_gib,
)
from .models import (
    REPLICA_RESOURCE_COLUMNS,
    FreeResourceSnapshot,
    GpuCard,
    GpuModel,
    Node,
    Quota,
    SiteSettings,
    SlurmGpuType,
    Spec,
    UsageWeight,
    UserShare,
    exact_gib,
)
from .ratios import milli_to_cores
from .services import node_set_state, node_sync_cards


@admin.register(SiteSettings)
class SiteSettingsAdmin(admin.ModelAdmin):
    list_display = [
        "__str__",
        "spec_management_enabled",
        "max_nodes_per_job",
        "free_grant_card_hours",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not SiteSettings.objects.exists()

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(GpuModel)
class GpuModelAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "card_memory_gib",
        "cpu_cores_per_card",
        "memory_gib_per_card",
        "relative_speed",
        "supports_vgpu",
        "free_tier",
    ]
    list_filter = ["supports_vgpu", "free_tier"]
    search_fields = ["name"]
    filter_horizontal = ["members"]


class GpuCardInline(UnitFieldsMixin, admin.TabularInline):
    model = GpuCard
    extra = 0
    readonly_fields = ["compute_allocated", "memory_allocated"]
    # Kept by the scheduler; shown read-only in GiB above.
    exclude = ["memory_allocated_mib", "compute_allocated_percent"]

    @admin.display(description=_("compute allocated (percent)"))
    def compute_allocated(self, card: GpuCard):
        return card.compute_allocated_percent

    @admin.display(description=_("memory allocated (GiB)"))
    def memory_allocated(self, card: GpuCard):
        return exact_gib(card.memory_allocated_mib)


class NodeForm(forms.ModelForm):
    """Makes a node a Slurm node only where Slurm is configured: elsewhere beat sends no Slurm
    task and nothing would track its jobs. A node already on Slurm stays editable."""

    def clean_executor(self) -> str:
        executor = self.cleaned_data["executor"]
        becomes_slurm = executor == Node.Executor.SLURM and (
            self.initial.get("executor") != Node.Executor.SLURM
        )
        if becomes_slurm and not settings.TRAINYARD_SLURM_ENABLED:
            raise forms.ValidationError(
                _(
                    "Slurm is not configured here: start Trainyard with TRAINYARD_SLURM=1 (and the "
                    "TRAINYARD_SLURM_* settings) first, or nothing would track this node's jobs."
                )
            )
        return executor


@admin.register(Node)
class NodeAdmin(UnitFieldsMixin, admin.ModelAdmin):
    form = NodeForm
    list_display = [
        "name",
        "executor",
        "gpu_model",
        "gpu_count",
        "gpu_allocated",
        cpu_cores,
        memory_gib,
        "state",
        "from_slurm",
        "slurm_partitions",
        "sandboxed",
        "last_heartbeat",
    ]
    list_filter = ["state", "executor", "gpu_model", "from_slurm"]
    search_fields = ["name", "address"]
    readonly_fields = [
        "gpu_allocated",
        "cpu_allocated",
        "memory_allocated",
        "storage_allocated_gib",
        "gpu_held_outside",
        "cpu_held_outside",
        "memory_held_outside",
        "last_heartbeat",
        "from_slurm",
        "sandboxed",
    ]
    inlines = [GpuCardInline]
    actions = ["drain", "mark_ready"]

    @admin.action(description=_("Drain the selected nodes (no new work)"))
    def drain(self, request: HttpRequest, queryset: QuerySet[Node]) -> None:

        for node in queryset:
            node_set_state(node=node, state=Node.State.DRAINING, reason=_("Drained by an admin"))
        count = queryset.count()
        self.message_user(request, ngettext("%d node drained.", "%d nodes drained.", count) % count)

    @admin.action(description=_("Mark the selected nodes ready"))
    def mark_ready(self, request: HttpRequest, queryset: QuerySet[Node]) -> None:

        for node in queryset:
            node_set_state(node=node, state=Node.State.READY, reason="")
        self.message_user(request, _("Nodes marked ready."), messages.SUCCESS)

    def save_model(self, request: HttpRequest, obj: Node, form, change: bool) -> None:

        super().save_model(request, obj, form, change)
        node_sync_cards(node=obj)

    @admin.display(description=_("CPU allocated (cores)"))
    def cpu_allocated(self, node: Node):
        return milli_to_cores(node.cpu_allocated_milli)

    @admin.display(description=_("memory allocated (GiB)"))
    def memory_allocated(self, node: Node):
        return exact_gib(node.memory_allocated_mib)

    @admin.display(description=_("CPU held outside Trainyard (cores)"))
    def cpu_held_outside(self, node: Node):
        return milli_to_cores(node.cpu_held_outside_milli)

    @admin.display(description=_("memory held outside Trainyard (GiB)"))
    def memory_held_outside(self, node: Node):
        return exact_gib(node.memory_held_outside_mib)

    def get_readonly_fields(self, request: HttpRequest, obj: Node | None = None) -> list:
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.from_slurm:
            # Synced from Slurm (jobs.execution.slurm.inventory): an edit here would not last.
            fields += ["executor", "address", "gpu_model", "gpu_count", cpu_cores, memory_gib]
            fields += ["slurm_partitions"]
        return fields

    def get_exclude(self, request: HttpRequest, obj: Node | None = None) -> list[str]:
        # What is allocated is the scheduler's, and what is held outside Trainyard the Slurm
        # sync's, shown read-only in cores and GiB; so are a Slurm node's CPU and memory.
        excluded = ["cpu_allocated_milli", "memory_allocated_mib"]
        excluded += ["cpu_held_outside_milli", "memory_held_outside_mib"]
        if obj is not None and obj.from_slurm:
            excluded += ["cpu_milli", "memory_mib"]
        return excluded

    def change_view(self, request: HttpRequest, object_id: str, form_url="", extra_context=None):
        node = self.get_object(request, object_id)
        if node is not None and node.from_slurm:
            messages.info(
                request,
                _(
                    "This node comes from Slurm: its resources and partitions follow Slurm's at "
                    "every sync, and draining it in Slurm drains it here. A drain set here stays "
                    "until you mark it ready."
                ),
            )
        if node is not None and node.sandboxed is False:
            messages.warning(
                request,
                _(
                    "The agent cannot isolate jobs on this node (no bubblewrap, job network or "
                    "root): it starts no replica there, unless TRAINYARD_UNSAFE_PLAIN_PROCESSES "
                    "asks for plain processes that can reach the platform."
                ),
            )
        return super().change_view(request, object_id, form_url, extra_context)


@admin.register(Spec)
class SpecAdmin(UnitFieldsMixin, admin.ModelAdmin):
    list_display = [
        "name",
        "kind",
        "gpu_model",
        "gpu_count",
        "vgpu_compute_percent",
        cpu_cores,
        memory_gib,
        "enabled",
        "order",
    ]
    fields = ["name", "kind", *REPLICA_RESOURCE_COLUMNS, "enabled", "order"]
    list_filter = ["kind", "enabled", "gpu_model"]
    list_editable = ["enabled", "order"]
    search_fields = ["name"]


@admin.register(Quota)
class QuotaAdmin(admin.ModelAdmin):
    form = QuotaForm
    list_display = ["user", "resource", "gpu_model", "limit_shown", "borrow_limit_shown"]
    list_filter = ["resource", "gpu_model"]
    search_fields = ["user__username"]
    autocomplete_fields = ["user"]

    @admin.display(description=_("limit"), ordering="limit")
    def limit_shown(self, quota: Quota):
        return quota.limit_shown

    @admin.display(description=_("borrow limit"), ordering="borrow_limit", empty_value="—")
    def borrow_limit_shown(self, quota: Quota):
        return quota.borrow_limit_shown


@admin.register(UserShare)
class UserShareAdmin(admin.ModelAdmin):
    """Users' shares in the queue's fair share; a user without a row has 1."""

    list_display = ["user", "shares"]
    search_fields = ["user__username"]
    autocomplete_fields = ["user"]


@admin.register(UsageWeight)
class UsageWeightAdmin(admin.ModelAdmin):
    """What an hour counts in the fair share; a model without a row counts its list price."""

    list_display = ["gpu_model", "weight"]


@admin.register(SlurmGpuType)
class SlurmGpuTypeAdmin(admin.ModelAdmin):
    list_display = ["slurm_type", "gpu_model"]
    search_fields = ["slurm_type", "gpu_model__name"]


@admin.register(FreeResourceSnapshot)
class FreeResourceSnapshotAdmin(admin.ModelAdmin):
    list_display = ["as_of"]
    date_hierarchy = "as_of"
