"""The columns of one replica's resources, shared by a spec and a job (abstract: no table).

The kind of resource is not here: a spec calls its column ``kind``, a job
``resource_kind``, and renaming either would change the database.
"""

from django.db import models
from django.utils.translation import gettext_lazy as _

from .gpu_models import GpuModel
from .limits import DEFAULT_STORAGE_GIB


class ReplicaResourceColumns(models.Model):
    """GPU model and count, vGPU share, CPU, memory and storage of one replica.

    Inherited fields come before a model's own in ``_meta``, so the admins
    list their fields themselves (``REPLICA_RESOURCE_COLUMNS`` in its place).
    """

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
    storage_gib = models.PositiveIntegerField(
        _("temporary storage (GiB)"), default=DEFAULT_STORAGE_GIB
    )

    class Meta:
        abstract = True


# The columns' names in the order a person reads them (the admins' forms).
REPLICA_RESOURCE_COLUMNS = tuple(field.name for field in ReplicaResourceColumns._meta.fields)
