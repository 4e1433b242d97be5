"""What the fair share weighs (``billing/fair_share.py``): users' shares and usage's weights.

A user without a row has one share, as every other user by default. A GPU model
(or, with no model, the CPU core-hour) without a weight counts its list price per
unit-hour, so that a V100 hour weighs more than a P4 hour (Slurm's
``TRESBillingWeights``).
"""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class UserShare(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="fair_share",
        verbose_name=_("user"),
    )
    shares = models.PositiveIntegerField(
        _("shares"), default=1, help_text=_("Against every other user's (1 by default).")
    )

    class Meta:
        verbose_name = _("fair share")
        verbose_name_plural = _("fair shares")
        constraints = [
            models.CheckConstraint(
                condition=Q(shares__gte=1),
                name="user_share_at_least_1",
                violation_error_message=_("A user has at least 1 share."),
            )
        ]

    def __str__(self) -> str:
        return f"{self.user}: {self.shares}"


class UsageWeight(models.Model):
    gpu_model = models.OneToOneField(
        "resources.GpuModel",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        verbose_name=_("GPU model"),
        help_text=_("Empty: the CPU core-hour."),
    )
    weight = models.DecimalField(
        _("weight per unit-hour"),
        max_digits=12,
        decimal_places=4,
        help_text=_("How much an hour of it counts in the fair share (default: its list price)."),
    )

    class Meta:
        verbose_name = _("usage weight")
        verbose_name_plural = _("usage weights")
        constraints = [
            models.CheckConstraint(
                condition=Q(weight__gte=0),
                name="usage_weight_gte_0",
                violation_error_message=_("A weight is 0 or more."),
            ),
            models.UniqueConstraint(
                fields=["gpu_model"],
                condition=Q(gpu_model__isnull=True),
                name="usage_weight_one_for_cpu",
                violation_error_message=_("The CPU core-hour has one weight."),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.gpu_model or 'CPU'}: {self.weight}"
