"""What a placed replica holds (an allocation and its cards), and the free-resource snapshot."""

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from .nodes import GpuCard, Node


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
