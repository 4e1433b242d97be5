"""GPU models, nodes and their cards, specs, quotas, allocations and snapshots.

Memory is kept in MiB and CPU in millicores (as Kubernetes and the Alibaba
trace do) so that sums and CHECK constraints are exact integers; pages and the
API show GiB and cores.
"""

from decimal import Decimal

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

MIB_PER_GIB = 1024
MILLI_PER_CORE = 1000


def exact_decimal(number: Decimal) -> Decimal:
    """``number`` with every decimal it has, no trailing zero, no exponent (64, not 6.4E+1)."""
    number = number.normalize()
    return number.quantize(Decimal(1)) if number == number.to_integral_value() else number


def exact_gib(mib: int) -> Decimal:
    """MiB as GiB with every decimal it has (a MiB is 2⁻¹⁰ GiB: at most ten decimals)."""
    return exact_decimal(Decimal(mib) / MIB_PER_GIB)


class SiteSettings(models.Model):
    """The site-wide switches an admin sets; a singleton (pk 1)."""

    spec_management_enabled = models.BooleanField(_("spec management enabled"), default=False)
    max_nodes_per_job = models.PositiveSmallIntegerField(_("max nodes per job"), default=6)
    free_grant_card_hours = models.DecimalField(
        _("free grant (card-hours)"), max_digits=10, decimal_places=2, default=100
    )
    port_pool_start = models.PositiveIntegerField(_("first host port of the pool"), default=40000)
    port_pool_size = models.PositiveIntegerField(_("host ports in the pool"), default=19500)
    stop_grace_seconds = models.PositiveIntegerField(_("stop grace period (s)"), default=30)
    heartbeat_timeout_seconds = models.PositiveIntegerField(
        _("node heartbeat timeout (s)"), default=60
    )
    # Kept by the heartbeat check itself (jobs/execution/nodes.py): since when it has been
    # watching without a gap, and when it last looked. Not for admins to set.
    heartbeat_watch_since = models.DateTimeField(null=True, blank=True, editable=False)
    heartbeat_checked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = _("site settings")
        verbose_name_plural = _("site settings")
        constraints = [
            models.CheckConstraint(condition=Q(pk=1), name="site_settings_singleton"),
            models.CheckConstraint(
                condition=Q(max_nodes_per_job__gte=2),
                name="site_settings_max_nodes_gte_2",
                violation_error_message=_("Max nodes per job is at least 2."),
            ),
            models.CheckConstraint(
                condition=Q(port_pool_start__gte=1025)
                & Q(port_pool_size__gte=1)
                & Q(port_pool_start__lte=65536 - F("port_pool_size")),
                name="site_settings_port_pool_in_range",
                violation_error_message=_(
                    "The port pool starts at 1025 or above, holds at least 1 port "
                    "and ends at 65535 or below."
                ),
            ),
        ]

    def __str__(self) -> str:
        return str(_("Site settings"))

    @classmethod
    def load(cls) -> "SiteSettings":
        obj, _created = cls.objects.get_or_create(pk=1)
        return obj


class GpuModel(models.Model):
    """A GPU model, or an aggregated model (name starting with ``*``) of several."""

    name = models.CharField(_("name"), max_length=64, unique=True)
    card_memory_gib = models.PositiveIntegerField(_("card memory (GiB)"))
    cpu_cores_per_card = models.PositiveIntegerField(_("CPU cores per card"))
    memory_gib_per_card = models.PositiveIntegerField(_("memory per card (GiB)"))
    relative_speed = models.FloatField(
        _("relative speed"), default=1.0, help_text=_("Throughput relative to a P4 (P4 = 1).")
    )
    supports_vgpu = models.BooleanField(_("supports virtual GPUs"), default=False)
    free_tier = models.BooleanField(
        _("free tier"), default=False, help_text=_("Accounts without billing may use it.")
    )
    members = models.ManyToManyField(
        "self",
        symmetrical=False,
        blank=True,
        related_name="aggregates",
        verbose_name=_("members"),
        help_text=_("For an aggregated model (name starts with *): the models it stands for."),
    )

    class Meta:
        ordering = ["name"]
        verbose_name = _("GPU model")
        verbose_name_plural = _("GPU models")
        constraints = [
            models.CheckConstraint(
                condition=Q(card_memory_gib__gt=0),
                name="gpu_model_memory_gt_0",
                violation_error_message=_("Card memory (GiB) must be more than 0."),
            ),
            models.CheckConstraint(
                condition=Q(relative_speed__gt=0),
                name="gpu_model_speed_gt_0",
                violation_error_message=_("Relative speed must be more than 0."),
            ),
            models.CheckConstraint(condition=~Q(name=""), name="gpu_model_name_not_empty"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_aggregated(self) -> bool:
        return self.name.startswith("*")

    @property
    def card_memory_mib(self) -> int:
        return self.card_memory_gib * MIB_PER_GIB

    def supports(self, kind: str) -> bool:
        """Whether a job of resource ``kind`` (gpu, vgpu) may ask for this model."""
        if kind == ResourceKind.VGPU:
            return self.supports_vgpu
        return kind == ResourceKind.GPU


class SlurmGpuType(models.Model):
    """Maps a Slurm gres GPU type (``gpu:v100:8``) to a Trainyard GPU model."""

    slurm_type = models.CharField(_("Slurm GPU type"), max_length=64, unique=True)
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.CASCADE, verbose_name=_("GPU model"))

    class Meta:
        verbose_name = _("Slurm GPU type")
        verbose_name_plural = _("Slurm GPU types")

    def __str__(self) -> str:
        return f"{self.slurm_type} → {self.gpu_model}"


class Node(models.Model):
    """A compute node: capacity columns beside allocated columns, kept honest by CHECKs."""

    class Executor(models.TextChoices):
        LOCAL = "local", _("Local agent")
        SLURM = "slurm", _("Slurm")

    class State(models.TextChoices):
        READY = "ready", _("Ready")
        DRAINING = "draining", _("Draining")
        DOWN = "down", _("Down")

    name = models.CharField(
        _("name"),
        max_length=128,
        unique=True,
        validators=[
            RegexValidator(
                r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
                _("Letters, digits, dots, dashes and underscores, from a letter or digit."),
            )
        ],
    )
    executor = models.CharField(
        _("executor"), max_length=16, choices=Executor.choices, default=Executor.LOCAL
    )
    address = models.CharField(
        _("address"), max_length=255, default="127.0.0.1", help_text=_("Host other nodes reach.")
    )
    gpu_model = models.ForeignKey(
        GpuModel,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="nodes",
        verbose_name=_("GPU model"),
    )
    gpu_count = models.PositiveIntegerField(_("GPU cards"), default=0)
    cpu_milli = models.PositiveIntegerField(_("CPU (millicores)"))
    memory_mib = models.PositiveBigIntegerField(_("memory (MiB)"))
    storage_gib = models.PositiveIntegerField(_("temporary storage (GiB)"), default=500)
    gpu_allocated = models.PositiveIntegerField(_("GPU cards allocated"), default=0)
    cpu_allocated_milli = models.PositiveIntegerField(_("CPU allocated (millicores)"), default=0)
    memory_allocated_mib = models.PositiveBigIntegerField(_("memory allocated (MiB)"), default=0)
    storage_allocated_gib = models.PositiveIntegerField(_("storage allocated (GiB)"), default=0)
    state = models.CharField(_("state"), max_length=16, choices=State.choices, default=State.READY)
    state_reason = models.CharField(_("state reason"), max_length=255, blank=True)
    last_heartbeat = models.DateTimeField(_("last heartbeat"), null=True, blank=True)
    sandboxed = models.BooleanField(
        _("sandboxed"), null=True, blank=True, help_text=_("Whether the agent found bubblewrap.")
    )
    from_slurm = models.BooleanField(_("from Slurm"), default=False)
    slurm_partitions = models.CharField(_("Slurm partitions"), max_length=255, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("node")
        verbose_name_plural = _("nodes")
        indexes = [models.Index(fields=["state", "gpu_model"], name="node_state_model_idx")]
        constraints = [
            models.CheckConstraint(
                condition=Q(gpu_allocated__lte=F("gpu_count")),
                name="node_gpu_not_overcommitted",
                violation_error_message=_(
                    "GPU cards cannot be fewer than the cards allocated on this node now."
                ),
            ),
            models.CheckConstraint(
                condition=Q(cpu_allocated_milli__lte=F("cpu_milli")),
                name="node_cpu_not_overcommitted",
                violation_error_message=_(
                    "CPU (cores) cannot be less than the CPU allocated on this node now."
                ),
            ),
            models.CheckConstraint(
                condition=Q(memory_allocated_mib__lte=F("memory_mib")),
                name="node_memory_not_overcommitted",
                violation_error_message=_(
                    "Memory (GiB) cannot be less than the memory allocated on this node now."
                ),
            ),
            models.CheckConstraint(
                condition=Q(storage_allocated_gib__lte=F("storage_gib")),
                name="node_storage_not_overcommitted",
                violation_error_message=_(
                    "Temporary storage (GiB) cannot be less than the storage allocated "
                    "on this node now."
                ),
            ),
            models.CheckConstraint(
                condition=Q(gpu_model__isnull=False) | Q(gpu_count=0),
                name="node_gpus_need_a_model",
                violation_error_message=_("A node with GPU cards needs a GPU model."),
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def queue_name(self) -> str:
        return f"node.{self.name}"

    @property
    def gpu_free(self) -> int:
        return self.gpu_count - self.gpu_allocated

    @property
    def cpu_cores(self) -> float:
        return self.cpu_milli / MILLI_PER_CORE

    @property
    def cpu_free_cores(self) -> float:
        return (self.cpu_milli - self.cpu_allocated_milli) / MILLI_PER_CORE

    @property
    def memory_gib(self) -> float:
        return self.memory_mib / MIB_PER_GIB

    @property
    def memory_free_gib(self) -> float:
        return (self.memory_mib - self.memory_allocated_mib) / MIB_PER_GIB


class GpuCard(models.Model):
    """One physical card of a node; vGPU shares add up on it, never beyond 100 %."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="cards")
    index = models.PositiveSmallIntegerField(_("index"))
    memory_mib = models.PositiveIntegerField(_("memory (MiB)"))
    compute_allocated_percent = models.PositiveSmallIntegerField(default=0)
    memory_allocated_mib = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["node", "index"]
        verbose_name = _("GPU card")
        verbose_name_plural = _("GPU cards")
        constraints = [
            models.UniqueConstraint(fields=["node", "index"], name="gpu_card_unique_index"),
            models.CheckConstraint(
                condition=Q(compute_allocated_percent__lte=100), name="gpu_card_compute_lte_100"
            ),
            models.CheckConstraint(
                condition=Q(memory_allocated_mib__lte=F("memory_mib")),
                name="gpu_card_memory_not_overcommitted",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.node.name}/gpu{self.index}"


class ResourceKind(models.TextChoices):
    CPU = "cpu", _("CPU")
    GPU = "gpu", _("GPU (physical)")
    VGPU = "vgpu", _("GPU (virtual)")


class Spec(models.Model):
    """An admin-made bundle of resources users pick in spec mode."""

    name = models.CharField(_("name"), max_length=128, unique=True)
    kind = models.CharField(_("kind"), max_length=8, choices=ResourceKind.choices)
    gpu_model = models.ForeignKey(
        GpuModel, on_delete=models.PROTECT, null=True, blank=True, verbose_name=_("GPU model")
    )
    gpu_count = models.PositiveSmallIntegerField(_("GPU count"), default=0)
    vgpu_compute_percent = models.PositiveSmallIntegerField(
        _("compute % per GPU"), null=True, blank=True
    )
    vgpu_memory_mib = models.PositiveIntegerField(
        _("GPU memory per GPU (MiB)"), null=True, blank=True
    )
    cpu_milli = models.PositiveIntegerField(_("CPU (millicores)"))
    memory_mib = models.PositiveBigIntegerField(_("memory (MiB)"))
    storage_gib = models.PositiveIntegerField(_("temporary storage (GiB)"), default=10)
    enabled = models.BooleanField(_("enabled"), default=True)
    order = models.PositiveSmallIntegerField(_("order"), default=0)

    class Meta:
        ordering = ["order", "name"]
        verbose_name = _("spec")
        verbose_name_plural = _("specs")
        constraints = [
            models.CheckConstraint(
                condition=Q(kind="cpu", gpu_model__isnull=True, gpu_count=0)
                | Q(kind__in=["gpu", "vgpu"], gpu_model__isnull=False, gpu_count__gte=1),
                name="spec_gpu_fields_match_kind",
                violation_error_message=_(
                    "A CPU spec has no GPU model and a GPU count of 0; a GPU or virtual-GPU spec "
                    "needs a GPU model and a GPU count of at least 1."
                ),
            ),
            models.CheckConstraint(
                condition=Q(kind="vgpu", vgpu_compute_percent__gte=1, vgpu_compute_percent__lte=100)
                | (~Q(kind="vgpu") & Q(vgpu_compute_percent__isnull=True)),
                name="spec_vgpu_compute_1_100",
                violation_error_message=_(
                    "Compute per GPU is between 1 and 100 percent for a virtual-GPU spec, "
                    "and empty for the other kinds."
                ),
            ),
            models.CheckConstraint(
                condition=Q(storage_gib__gte=2),
                name="spec_storage_gte_2",
                violation_error_message=_("Temporary storage is at least 2 GiB."),
            ),
            models.CheckConstraint(
                condition=Q(cpu_milli__gt=0),
                name="spec_cpu_gt_0",
                violation_error_message=_("CPU (cores) must be more than 0."),
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Quota(models.Model):
    """A limit on one resource for one user; a row without a user is the site default.

    A resource with no row at all (neither the user's nor a default) is unlimited.
    """

    class Resource(models.TextChoices):
        CPU = "cpu_milli", _("CPU (cores)")
        MEMORY = "memory_mib", _("Memory (GiB)")
        GPU = "gpu", _("GPU cards of a model")
        VGPU_COMPUTE = "vgpu_compute_percent", _("Virtual-GPU compute (percent of a card)")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="quotas",
        verbose_name=_("user"),
        help_text=_("Empty: the default for every user without a row of their own."),
    )
    resource = models.CharField(_("resource"), max_length=32, choices=Resource.choices)
    gpu_model = models.ForeignKey(
        GpuModel, on_delete=models.CASCADE, null=True, blank=True, verbose_name=_("GPU model")
    )
    limit = models.PositiveBigIntegerField(_("limit"))

    class Meta:
        verbose_name = _("quota")
        verbose_name_plural = _("quotas")
        constraints = [
            models.CheckConstraint(
                condition=Q(resource__in=["gpu", "vgpu_compute_percent"], gpu_model__isnull=False)
                | Q(resource__in=["cpu_milli", "memory_mib"], gpu_model__isnull=True),
                name="quota_model_matches_resource",
                violation_error_message=_(
                    "A GPU or virtual-GPU quota needs a GPU model; a CPU or memory quota has none."
                ),
            ),
            models.UniqueConstraint(
                fields=["user", "resource", "gpu_model"],
                condition=Q(user__isnull=False, gpu_model__isnull=False),
                name="quota_unique_user_model",
                violation_error_message=_(
                    "This user already has a quota for this resource and GPU model: "
                    "change that one instead."
                ),
            ),
            models.UniqueConstraint(
                fields=["user", "resource"],
                condition=Q(user__isnull=False, gpu_model__isnull=True),
                name="quota_unique_user_resource",
                violation_error_message=_(
                    "This user already has a quota for this resource: change that one instead."
                ),
            ),
            models.UniqueConstraint(
                fields=["resource", "gpu_model"],
                condition=Q(user__isnull=True, gpu_model__isnull=False),
                name="quota_unique_default_model",
                violation_error_message=_(
                    "A default quota (no user) for this resource and GPU model already exists: "
                    "change that one instead."
                ),
            ),
            models.UniqueConstraint(
                fields=["resource"],
                condition=Q(user__isnull=True, gpu_model__isnull=True),
                name="quota_unique_default_resource",
                violation_error_message=_(
                    "A default quota (no user) for this resource already exists: "
                    "change that one instead."
                ),
            ),
        ]

    def __str__(self) -> str:
        who = self.user or _("default")
        model = f" · {self.gpu_model}" if self.gpu_model_id else ""
        return f"{who} · {self.get_resource_display()}{model} ≤ {self.limit_shown}"

    @property
    def limit_shown(self) -> Decimal | int:
        """The limit in the unit people read: cores, GiB, cards or percent of a card."""
        if self.resource == self.Resource.CPU:
            return exact_decimal(Decimal(self.limit) / MILLI_PER_CORE)
        if self.resource == self.Resource.MEMORY:
            return exact_gib(self.limit)
        return self.limit

    @property
    def key(self) -> str:
        """The resource-vector key this quota limits (see ``resources.vector``)."""
        return f"{self.resource}:{self.gpu_model.name}" if self.gpu_model_id else self.resource


class Allocation(models.Model):
    """What one replica attempt holds on one node; released by deleting the row."""

    replica = models.OneToOneField(
        "jobs.Replica", on_delete=models.CASCADE, related_name="allocation"
    )
    node = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="allocations")
    gpu_count = models.PositiveIntegerField(default=0)
    cpu_milli = models.PositiveIntegerField()
    memory_mib = models.PositiveBigIntegerField()
    storage_gib = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("allocation")
        verbose_name_plural = _("allocations")

    def __str__(self) -> str:
        return f"{self.replica} on {self.node}"


class CardAllocation(models.Model):
    """One card (or a share of it, for a vGPU) given to an allocation."""

    allocation = models.ForeignKey(Allocation, on_delete=models.CASCADE, related_name="cards")
    card = models.ForeignKey(GpuCard, on_delete=models.PROTECT, related_name="allocations")
    compute_percent = models.PositiveSmallIntegerField()
    memory_mib = models.PositiveIntegerField()

    class Meta:
        verbose_name = _("card allocation")
        verbose_name_plural = _("card allocations")
        constraints = [
            models.CheckConstraint(
                condition=Q(compute_percent__gte=1, compute_percent__lte=100),
                name="card_allocation_compute_1_100",
            ),
            models.UniqueConstraint(
                fields=["allocation", "card"], name="card_allocation_unique_card"
            ),
        ]


class FreeResourceSnapshot(models.Model):
    """The free-resource hint as computed at one moment; the panel shows the newest."""

    as_of = models.DateTimeField(db_index=True)
    data = models.JSONField()

    class Meta:
        get_latest_by = "as_of"
        verbose_name = _("free-resource snapshot")
        verbose_name_plural = _("free-resource snapshots")
