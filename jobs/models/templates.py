"""Workload templates with their measured times."""

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from resources.models import GpuModel


class WorkloadTemplate(models.Model):
    """A known network (e.g. ResNet50 image classification) with its command and limits."""

    class TaskType(models.TextChoices):
        IMAGE_CLASSIFICATION = "image_classification", _("Image classification")
        OBJECT_DETECTION = "object_detection", _("Object detection")
        OTHER = "other", _("Other")

    name = models.CharField(_("name"), max_length=128, unique=True)
    task_type = models.CharField(_("task type"), max_length=32, choices=TaskType.choices)
    network = models.CharField(_("network"), max_length=128)
    command_template = models.TextField(_("startup command template"))
    augmentation_command = models.TextField(_("augmentation-search command"), blank=True)
    forbidden_gpu_models = models.ManyToManyField(
        GpuModel, blank=True, related_name="+", verbose_name=_("GPU models it may not use")
    )
    default_max_runtime_minutes = models.PositiveIntegerField(
        _("default max run time (minutes)"), null=True, blank=True
    )
    enabled = models.BooleanField(_("enabled"), default=True)

    class Meta:
        ordering = ["task_type", "name"]
        verbose_name = _("workload template")
        verbose_name_plural = _("workload templates")

    def __str__(self) -> str:
        return self.name


class EstimatePoint(models.Model):
    """A training time: template, data size, GPU model, node count → seconds.

    A measured point is an anchor: with no history the estimate there is exactly
    its time. A rough point (a range "from experience") only shapes the curve.
    """

    class Kind(models.TextChoices):
        MEASURED = "measured", _("Measured run")
        ROUGH = "rough", _("Rough range from experience")

    template = models.ForeignKey(
        WorkloadTemplate, on_delete=models.CASCADE, related_name="estimate_points"
    )
    dataset_samples = models.PositiveIntegerField(_("dataset size (samples)"))
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.CASCADE, verbose_name=_("GPU model"))
    nodes = models.PositiveSmallIntegerField(_("nodes"))
    seconds = models.FloatField(_("training time (s)"))
    source = models.CharField(_("source"), max_length=255)
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices, default=Kind.MEASURED)

    class Meta:
        verbose_name = _("measured training time")
        verbose_name_plural = _("measured training times")
        constraints = [
            models.CheckConstraint(condition=Q(seconds__gt=0), name="estimate_seconds_gt_0"),
            models.CheckConstraint(condition=Q(nodes__gte=1), name="estimate_nodes_gte_1"),
            models.UniqueConstraint(
                fields=["template", "dataset_samples", "gpu_model", "nodes"],
                name="estimate_point_unique",
            ),
        ]
