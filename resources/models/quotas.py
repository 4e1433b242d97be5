"""Quotas: a user's (or the site default) limit on one resource."""

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from .gpu_models import GpuModel
from .units import MILLI_PER_CORE, exact_decimal, exact_gib


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
    # Kueue's borrowingLimit: how much more a preemptible job may borrow while cards are idle.
    borrow_limit = models.PositiveBigIntegerField(
        _("borrow limit"),
        null=True,
        blank=True,
        help_text=_(
            "How much beyond the limit this user's preemptible jobs may borrow while it is idle. "
            "Empty: no cap."
        ),
    )

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
        return self.shown(self.limit)

    @property
    def borrow_limit_shown(self) -> Decimal | int | None:
        """The borrow limit in the limit's unit; None: no cap."""
        return None if self.borrow_limit is None else self.shown(self.borrow_limit)

    def shown(self, amount: int) -> Decimal | int:
        """An amount of this quota's resource in the unit people read."""
        if self.resource == self.Resource.CPU:
            return exact_decimal(Decimal(amount) / MILLI_PER_CORE)
        if self.resource == self.Resource.MEMORY:
            return exact_gib(amount)
        return amount

    @property
    def key(self) -> str:
        """The resource-vector key this quota limits (see ``resources.vector``)."""
        return f"{self.resource}:{self.gpu_model.name}" if self.gpu_model_id else self.resource
