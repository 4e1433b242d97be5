"""Accounts, prices, free grants and the append-only usage ledger.

Usage is kept exactly, in unit-seconds (card-seconds of a GPU model, or
core-seconds): whole seconds times a quantity with at most three decimals, so
sums never drift; pages and the API show hours. Money is ``Decimal``: each
ledger row's amount is rounded once, ``ROUND_HALF_UP`` to 0.000001 of the
currency (a per-minute row of a 0.20/core-hour price is worth 0.003333, which
cent rounding would turn into nothing); totals are exact sums of the rows and
pages show them to the cent. See ``docs/billing.md``.
"""

from __future__ import annotations

from datetime import datetime
from decimal import ROUND_DOWN, Decimal

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from core.reasons import Reason, reason_text
from resources.models import GpuModel

from .formatting import GrantFigures, grant_figures

SECONDS_PER_HOUR = 3600
HOURS_QUANTUM = Decimal("0.000001")
UNIT_SECONDS_QUANTUM = Decimal("0.001")


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
    # The last time an admin turned billing off again (the events keep every change).
    billing_disabled_at = models.DateTimeField(_("billing disabled at"), null=True, blank=True)
    billing_disabled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("billing disabled by"),
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("account")
        verbose_name_plural = _("accounts")

    def __str__(self) -> str:
        return str(self.user)

    def charges_at(self, moment: datetime) -> bool:
        """Whether usage at ``moment`` is charged: billing is on, or was on then.

        The accrual writes a period a minute or two after it ends, so a period used
        before an admin disabled billing is still charged when written after.
        """
        if self.billing_enabled:
            return True
        enabled, disabled = self.billing_enabled_at, self.billing_disabled_at
        return enabled is not None and disabled is not None and enabled <= moment < disabled


class AccountEvent(models.Model):
    """An audit line: billing enabled or disabled, a grant, a warning."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="events")
    created_at = models.DateTimeField(auto_now_add=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    kind = models.CharField(max_length=32)
    message = models.TextField()  # in English; ``text`` is in the reader's language
    message_code = models.CharField(max_length=32, blank=True)
    message_params = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("account event")
        verbose_name_plural = _("account events")

    @property
    def text(self) -> str:
        """The message in the active language (the stored English for a row without a code)."""
        return reason_text(self.message_code, self.message_params, self.message)

    @classmethod
    def build(cls, *, message: Reason, **fields) -> AccountEvent:
        """An unsaved event with ``message``'s code, parameters and English text."""
        return cls(
            message=message.english,
            message_code=message.code,
            message_params=message.json_params,
            **fields,
        )


class FreeGrant(models.Model):
    """Free card-hours of a GPU model given once to an account."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="grants")
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.PROTECT)
    card_hours = models.DecimalField(max_digits=12, decimal_places=6)
    # Consumed by the accrual (the row is its lock); the ledger's free units add up to it.
    used_card_seconds = models.DecimalField(
        _("used (card-seconds)"), max_digits=18, decimal_places=3, default=0
    )
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("free grant")
        verbose_name_plural = _("free grants")
        constraints = [
            models.UniqueConstraint(fields=["account", "gpu_model"], name="free_grant_once"),
            models.CheckConstraint(condition=Q(card_hours__gte=0), name="free_grant_gte_0"),
            models.CheckConstraint(
                condition=Q(used_card_seconds__gte=0)
                & Q(used_card_seconds__lte=F("card_hours") * SECONDS_PER_HOUR),
                name="free_grant_used_within_grant",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.account}: {self.card_hours} {self.gpu_model} card-hours"

    @property
    def card_seconds(self) -> Decimal:
        return self.card_hours * SECONDS_PER_HOUR

    @property
    def remaining_card_seconds(self) -> Decimal:
        """What is left, down to the ledger's thousandth of a second (never more than the grant)."""
        left = (self.card_seconds - self.used_card_seconds).quantize(
            UNIT_SECONDS_QUANTUM, ROUND_DOWN
        )
        return max(left, Decimal(0))

    @property
    def is_used_up(self) -> bool:
        return not self.remaining_card_seconds

    @property
    def used_card_hours(self) -> Decimal:
        return hours(self.used_card_seconds)

    @property
    def remaining_card_hours(self) -> Decimal:
        return hours(self.remaining_card_seconds)

    @property
    def figures(self) -> GrantFigures:
        """Grant, used and remaining as pages show them: rounded once, adding up."""
        return grant_figures(grant_hours=self.card_hours, used_hours=self.used_card_hours)

    @property
    def used_percent(self) -> Decimal:
        if not self.card_hours:
            return Decimal(100)
        return min(self.used_card_seconds * 100 / self.card_seconds, Decimal(100))


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
    """One accrual period of one replica attempt; rows are only ever added.

    ``unit_seconds`` = ``quantity`` × the period's seconds; of it, ``free_unit_seconds``
    came from a free grant and ``billable_unit_seconds`` is charged at ``unit_price``
    (per unit-hour). What is neither was not charged; ``unbilled_reason`` says why.
    """

    class Phase(models.TextChoices):
        AUGMENTATION = "augmentation", _("Augmentation search")
        TRAINING = "training", _("Training")

    # No single-column indexes on account and attempt: the (account, period_start) index
    # and the unique (attempt, period_start) key lead with them, and every index slows
    # the inserts of an append-only ledger.
    account = models.ForeignKey(
        Account, on_delete=models.PROTECT, related_name="usage", db_index=False
    )
    job = models.ForeignKey("jobs.Job", on_delete=models.PROTECT, related_name="usage")
    attempt = models.ForeignKey(
        "jobs.ReplicaAttempt", on_delete=models.PROTECT, related_name="usage", db_index=False
    )
    phase = models.CharField(max_length=16, choices=Phase.choices, default=Phase.TRAINING)
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.PROTECT, null=True, blank=True)
    unit = models.CharField(max_length=16, choices=Price.Unit.choices)
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    # Cards (a virtual GPU counts its compute share: 2 × 50 % = 1.000) or CPU cores.
    quantity = models.DecimalField(max_digits=10, decimal_places=3)
    unit_seconds = models.DecimalField(max_digits=18, decimal_places=3)
    free_unit_seconds = models.DecimalField(max_digits=18, decimal_places=3, default=0)
    billable_unit_seconds = models.DecimalField(max_digits=18, decimal_places=3)
    unit_price = models.DecimalField(max_digits=12, decimal_places=4)
    amount = models.DecimalField(max_digits=18, decimal_places=6)
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
            models.CheckConstraint(condition=Q(quantity__gt=0), name="usage_quantity_gt_0"),
            models.CheckConstraint(
                condition=Q(unit_seconds__gte=0, free_unit_seconds__gte=0)
                & Q(billable_unit_seconds__gte=0, amount__gte=0),
                name="usage_units_gte_0",
            ),
            models.CheckConstraint(
                condition=Q(unit_seconds__gte=F("free_unit_seconds") + F("billable_unit_seconds")),
                name="usage_free_and_billable_within_units",
            ),
            models.CheckConstraint(
                condition=Q(billed=True) | ~Q(unbilled_reason=""), name="usage_unbilled_has_reason"
            ),
            models.CheckConstraint(
                condition=Q(billed=True) | Q(billable_unit_seconds=0, amount=0),
                name="usage_unbilled_charges_nothing",
            ),
            models.CheckConstraint(
                condition=Q(gpu_model__isnull=False, unit="card_hour")
                | Q(gpu_model__isnull=True, unit="core_hour"),
                name="usage_unit_matches_model",
            ),
        ]

    @property
    def units(self) -> Decimal:
        """Card-hours or core-hours."""
        return hours(self.unit_seconds)


class AttemptAccrual(models.Model):
    """How far an attempt has been accrued; ``closed`` once its end is in the ledger.

    The accrual continues each attempt from ``billed_until`` under the account's
    row lock, so periods are contiguous and never overlap, whenever it runs.
    """

    attempt = models.OneToOneField(
        "jobs.ReplicaAttempt", on_delete=models.PROTECT, primary_key=True, related_name="accrual"
    )
    billed_until = models.DateTimeField()
    closed = models.BooleanField(default=False)

    class Meta:
        verbose_name = _("attempt accrual")
        verbose_name_plural = _("attempt accruals")


def model_is_free_tier(gpu_model: GpuModel) -> bool:
    """An aggregated model is free-tier only when every member is."""
    if gpu_model.is_aggregated:
        members = list(gpu_model.members.all())
        return bool(members) and all(m.free_tier for m in members)
    return gpu_model.free_tier


def hours(unit_seconds: Decimal) -> Decimal:
    """Unit-seconds as hours, to the millionth (for showing; sums stay in seconds)."""
    return (Decimal(unit_seconds) / SECONDS_PER_HOUR).quantize(HOURS_QUANTUM)


class UsageHour(models.Model):
    """The ledger summed by account, job, model, price and hour (in the site's time zone).

    Written by the accrual in the transaction that writes the ledger rows, so it
    always adds up to them; statements and the overview read these hours (about
    sixty times fewer rows than the minute ledger). Local hours line up with the
    site's days and months whatever its time-zone offset.
    """

    account = models.ForeignKey(Account, on_delete=models.PROTECT, db_index=False)
    job = models.ForeignKey("jobs.Job", on_delete=models.PROTECT, related_name="usage_hours")
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.PROTECT, null=True, blank=True)
    unit = models.CharField(max_length=16, choices=Price.Unit.choices)
    unit_price = models.DecimalField(max_digits=12, decimal_places=4)
    hour = models.DateTimeField()
    unit_seconds = models.DecimalField(max_digits=18, decimal_places=3)
    free_unit_seconds = models.DecimalField(max_digits=18, decimal_places=3)
    billable_unit_seconds = models.DecimalField(max_digits=18, decimal_places=3)
    amount = models.DecimalField(max_digits=18, decimal_places=6)
    ledger_rows = models.PositiveIntegerField()

    class Meta:
        verbose_name = _("usage hour")
        verbose_name_plural = _("usage hours")
        indexes = [
            models.Index(fields=["account", "hour"], name="usage_hour_account_idx"),
            models.Index(fields=["hour"], name="usage_hour_hour_idx"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "job", "gpu_model", "unit", "unit_price", "hour"],
                condition=Q(gpu_model__isnull=False),
                name="usage_hour_once_gpu",
            ),
            models.UniqueConstraint(
                fields=["account", "job", "unit", "unit_price", "hour"],
                condition=Q(gpu_model__isnull=True),
                name="usage_hour_once_cpu",
            ),
            models.CheckConstraint(
                condition=Q(unit_seconds__gte=F("free_unit_seconds") + F("billable_unit_seconds"))
                & Q(free_unit_seconds__gte=0, billable_unit_seconds__gte=0, amount__gte=0),
                name="usage_hour_sums_consistent",
            ),
        ]
