"""Specs: named resource shapes that admins offer on the New job form."""

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from .gpu_models import ResourceKind
from .limits import MAX_VGPU_COMPUTE_PERCENT, MIN_STORAGE_GIB, MIN_VGPU_COMPUTE_PERCENT
from .replica_columns import ReplicaResourceColumns


class Spec(ReplicaResourceColumns):
    """An admin-made bundle of resources users pick in spec mode."""

    name = models.CharField(_("name"), max_length=128, unique=True)
    kind = models.CharField(_("kind"), max_length=8, choices=ResourceKind.choices)
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
                condition=Q(
                    kind="vgpu",
                    vgpu_compute_percent__gte=MIN_VGPU_COMPUTE_PERCENT,
                    vgpu_compute_percent__lte=MAX_VGPU_COMPUTE_PERCENT,
                )
                | (~Q(kind="vgpu") & Q(vgpu_compute_percent__isnull=True)),
                name="spec_vgpu_compute_1_100",
                violation_error_message=_(
                    "Compute per GPU is between 1 and 100 percent for a virtual-GPU spec, "
                    "and empty for the other kinds."
                ),
            ),
            models.CheckConstraint(
                condition=Q(storage_gib__gte=MIN_STORAGE_GIB),
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
