"""Nodes and their GPU cards, with what is allocated on each."""

from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from .gpu_models import GpuModel
from .units import MIB_PER_GIB, MILLI_PER_CORE


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
    # What Slurm has given on this node to jobs that did not come through Trainyard (someone's
    # own sbatch), as of the last inventory sync: Slurm's allocation less what Trainyard's own
    # Slurm jobs hold there. Counted as taken wherever free capacity is counted; 0 off Slurm.
    gpu_held_outside = models.PositiveIntegerField(
        _("GPU cards held outside Trainyard"),
        default=0,
        help_text=_("By Slurm jobs that did not come through Trainyard, at the last sync."),
    )
    cpu_held_outside_milli = models.PositiveIntegerField(
        _("CPU held outside Trainyard (millicores)"), default=0
    )
    memory_held_outside_mib = models.PositiveBigIntegerField(
        _("memory held outside Trainyard (MiB)"), default=0
    )
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
    def cpu_cores(self) -> float:
        return self.cpu_milli / MILLI_PER_CORE

    @property
    def cpu_free_cores(self) -> float:
        free = self.cpu_milli - self.cpu_allocated_milli - self.cpu_held_outside_milli
        return max(0, free) / MILLI_PER_CORE

    @property
    def memory_gib(self) -> float:
        return self.memory_mib / MIB_PER_GIB

    @property
    def memory_free_gib(self) -> float:
        free = self.memory_mib - self.memory_allocated_mib - self.memory_held_outside_mib
        return max(0, free) / MIB_PER_GIB

    @property
    def held_outside(self) -> bool:
        """Whether jobs outside Trainyard hold any of this node (Slurm's, at the last sync)."""
        return bool(
            self.gpu_held_outside or self.cpu_held_outside_milli or self.memory_held_outside_mib
        )

    @property
    def cpu_held_outside_cores(self) -> float:
        return self.cpu_held_outside_milli / MILLI_PER_CORE

    @property
    def memory_held_outside_gib(self) -> float:
        return self.memory_held_outside_mib / MIB_PER_GIB


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


def node_queue(node_name: str) -> str:
    """The Celery queue of the agent serving a local node: the local executor sends there."""
    return f"node.{node_name}"
