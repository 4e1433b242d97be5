"""GPU models (and the ``*`` models that group them), their Slurm GRES types, and the kinds of
resource a job can ask for."""

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from .units import MIB_PER_GIB


class ResourceKind(models.TextChoices):
    CPU = "cpu", _("CPU")
    GPU = "gpu", _("GPU (physical)")
    VGPU = "vgpu", _("GPU (virtual)")


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
