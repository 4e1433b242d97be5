"""Accounts, prices, free grants and the append-only usage ledger.

Money is ``Decimal``. Each ledger row is rounded once, to the currency's cent
(``ROUND_HALF_UP``); totals are sums of rounded rows, so a statement always adds up.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from resources.models import GpuModel


class Account(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="billing_account"
    )
    billing_enabled = models.BooleanField(_("billing enabled"), default=False)
    billing_enabled_at = models.DateTimeField(_("billing enabled at"), null=True, blank=True)
    billing_enabled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("billing enabled by"),
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("account")
        verbose_name_plural = _("accounts")

    def __str__(self) -> str:
        return str(self.user)


class AccountEvent(models.Model):
    """An audit line: billing enabled or disabled, a grant, a warning."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="events")
    created_at = models.DateTimeField(auto_now_add=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    kind = models.CharField(max_length=32)
    message = models.TextField()

    class Meta:
        ordering = ["-created_at"]


class FreeGrant(models.Model):
    """Free card-hours of a GPU model given once to an account."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="grants")
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.PROTECT)
    card_hours = models.DecimalField(max_digits=12, decimal_places=6)
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("free grant")
        verbose_name_plural = _("free grants")
        constraints = [
            models.UniqueConstraint(fields=["account", "gpu_model"], name="free_grant_once"),
            models.CheckConstraint(condition=Q(card_hours__gte=0), name="free_grant_gte_0"),
        ]

    def __str__(self) -> str:
        return f"{self.account}: {self.card_hours} {self.gpu_model} card-hours"


class Price(models.Model):
    """A price per card-hour of a GPU model, or per core-hour of CPU when the model is empty."""

    class Unit(models.TextChoices):
        CARD_HOUR = "card_hour", _("card-hour")
        CORE_HOUR = "core_hour", _("core-hour")

    gpu_model = models.ForeignKey(
        GpuModel, on_delete=models.PROTECT, null=True, blank=True, verbose_name=_("GPU model")
    )
    unit = models.CharField(_("unit"), max_length=16, choices=Unit.choices)
    amount = models.DecimalField(_("price per unit"), max_digits=12, decimal_places=4)
    currency = models.CharField(_("currency"), max_length=3, default="CNY")
    valid_from = models.DateTimeField(_("valid from"))

    class Meta:
        ordering = ["gpu_model__name", "-valid_from"]
        verbose_name = _("price")
        verbose_name_plural = _("prices")
        constraints = [
            models.CheckConstraint(condition=Q(amount__gte=0), name="price_amount_gte_0"),
            models.CheckConstraint(
                condition=Q(gpu_model__isnull=False, unit="card_hour")
                | Q(gpu_model__isnull=True, unit="core_hour"),
                name="price_unit_matches_model",
            ),
            models.UniqueConstraint(
                fields=["gpu_model", "valid_from"],
                condition=Q(gpu_model__isnull=False),
                name="price_unique_model_from",
            ),
            models.UniqueConstraint(
                fields=["valid_from"],
                condition=Q(gpu_model__isnull=True),
                name="price_unique_cpu_from",
            ),
        ]

    def __str__(self) -> str:
        what = self.gpu_model or _("CPU")
        return f"{what}: {self.amount} {self.currency}/{self.get_unit_display()}"


class UsageRecord(models.Model):
    """One accrual period of one replica attempt; rows are only ever added."""

    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="usage")
    job = models.ForeignKey("jobs.Job", on_delete=models.PROTECT, related_name="usage")
    attempt = models.ForeignKey(
        "jobs.ReplicaAttempt", on_delete=models.PROTECT, related_name="usage"
    )
    phase = models.CharField(max_length=16, default="training")
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.PROTECT, null=True, blank=True)
    unit = models.CharField(max_length=16, choices=Price.Unit.choices)
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    units = models.DecimalField(max_digits=14, decimal_places=6)
    free_units = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    billable_units = models.DecimalField(max_digits=14, decimal_places=6)
    unit_price = models.DecimalField(max_digits=12, decimal_places=4)
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    currency = models.CharField(max_length=3, default="CNY")
    billed = models.BooleanField(default=True)
    unbilled_reason = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["period_start", "pk"]
        verbose_name = _("usage record")
        verbose_name_plural = _("usage records")
        indexes = [
            models.Index(fields=["account", "period_start"], name="usage_account_period_idx"),
            models.Index(fields=["period_start"], name="usage_period_idx"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["attempt", "period_start"], name="usage_once_per_attempt_period"
            ),
            models.CheckConstraint(
                condition=Q(period_end__gt=F("period_start")), name="usage_period_positive"
            ),
            models.CheckConstraint(
                condition=Q(units__gte=0, free_units__gte=0, billable_units__gte=0),
                name="usage_units_gte_0",
            ),
            models.CheckConstraint(
                condition=Q(free_units__lte=F("units")), name="usage_free_lte_units"
            ),
            models.CheckConstraint(
                condition=Q(billed=True) | ~Q(unbilled_reason=""), name="usage_unbilled_has_reason"
            ),
        ]
