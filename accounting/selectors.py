"""Reads of the usage ledger: a statement for one account and month, the admin overview.

Every sum is taken in SQL over the month's ``UsageHour`` rows, which the
accrual keeps equal to the minute ledger (a period never straddles an hour, so
never a day or a month); Python only joins the few result rows with names.
See ``bench/billing.py`` for the figures on a million ledger rows.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from decimal import ROUND_HALF_UP, Decimal

from django.db.models import QuerySet, Sum
from django.db.models.functions import TruncDate

from billing.models import Account, FreeGrant, Price, UsageHour, hours
from billing.months import Month, site_zone
from jobs.models import Job
from resources.models import GpuModel

SUMS = {
    "unit_seconds": Sum("unit_seconds"),
    "free_unit_seconds": Sum("free_unit_seconds"),
    "billable_unit_seconds": Sum("billable_unit_seconds"),
    "amount": Sum("amount"),
}
QUANTUM = {
    "unit_seconds": Decimal("0.001"),
    "free_unit_seconds": Decimal("0.001"),
    "billable_unit_seconds": Decimal("0.001"),
    "amount": Decimal("0.000001"),
}


@dataclass(frozen=True)
class UsageSums:
    unit_seconds: Decimal = Decimal("0.000")
    free_unit_seconds: Decimal = Decimal("0.000")
    billable_unit_seconds: Decimal = Decimal("0.000")
    amount: Decimal = Decimal("0.000000")

    @classmethod
    def of(cls, row: dict) -> UsageSums:
        """From a row of SQL sums, in the ledger's scales (SQLite sums come back as floats)."""
        return cls(
            **{
                name: Decimal(row[name] or 0).quantize(QUANTUM[name], ROUND_HALF_UP)
                for name in SUMS
            }
        )

    def __add__(self, other: UsageSums) -> UsageSums:
        return UsageSums(**{name: getattr(self, name) + getattr(other, name) for name in SUMS})

    @property
    def hours(self) -> Decimal:
        return hours(self.unit_seconds)

    @property
    def free_hours(self) -> Decimal:
        return hours(self.free_unit_seconds)

    @property
    def billable_hours(self) -> Decimal:
        return hours(self.billable_unit_seconds)

    @property
    def unbilled_hours(self) -> Decimal:
        return hours(self.unit_seconds - self.free_unit_seconds - self.billable_unit_seconds)


@dataclass(frozen=True)
class StatementLine:
    job_id: int
    job_name: str
    gpu_model: str | None
    unit: str
    unit_price: Decimal
    sums: UsageSums


@dataclass(frozen=True)
class ModelTotal:
    gpu_model: str | None
    unit: str
    sums: UsageSums


@dataclass(frozen=True)
class DailyUsage:
    day: date
    gpu_model: str | None
    unit: str
    hours: Decimal


@dataclass(frozen=True)
class Statement:
    account: Account
    month: Month
    lines: list[StatementLine]
    grants: list[FreeGrant]
    daily: list[DailyUsage]

    @property
    def by_model(self) -> list[ModelTotal]:
        return totals_by_model((line.gpu_model, line.unit, line.sums) for line in self.lines)

    @property
    def total(self) -> UsageSums:
        return sum((line.sums for line in self.lines), UsageSums())

    @property
    def total_billable_card_hours(self) -> Decimal:
        card = [line.sums for line in self.lines if line.unit == Price.Unit.CARD_HOUR]
        return sum(card, UsageSums()).billable_hours


def month_usage(month: Month) -> QuerySet[UsageHour]:
    return UsageHour.objects.filter(hour__gte=month.start, hour__lt=month.end)


def model_names() -> dict[int, str]:
    return dict(GpuModel.objects.values_list("pk", "name"))


def totals_by_model(items) -> list[ModelTotal]:
    by_key: dict[tuple[str | None, str], UsageSums] = defaultdict(UsageSums)
    for gpu_model, unit, sums in items:
        by_key[(gpu_model, unit)] += sums
    return [
        ModelTotal(gpu_model=model, unit=unit, sums=sums)
        for (model, unit), sums in sorted(by_key.items(), key=lambda kv: (kv[0][1], kv[0][0] or ""))
    ]


def statement_for(*, account: Account, month: Month) -> Statement:
    """The account's month: lines by job, model and price, its grants, and its days.

    One pass over the month's hours, grouped by day as well; lines and the daily
    series are both folded from that.
    """
    groups = list(
        month_usage(month)
        .filter(account=account)
        .annotate(day=TruncDate("hour", tzinfo=site_zone()))
        .values("job_id", "gpu_model_id", "unit", "unit_price", "day")
        .annotate(**SUMS)
        .order_by()
    )
    names = model_names()
    job_names = dict(
        Job.objects.filter(pk__in={g["job_id"] for g in groups}).values_list("pk", "name")
    )
    line_sums: dict[tuple, UsageSums] = defaultdict(UsageSums)
    day_seconds: dict[tuple, Decimal] = defaultdict(Decimal)
    for group in groups:
        sums = UsageSums.of(group)
        line_sums[(group["job_id"], group["gpu_model_id"], group["unit"], group["unit_price"])] += (
            sums
        )
        day_seconds[(group["day"], group["gpu_model_id"], group["unit"])] += sums.unit_seconds
    lines = [
        StatementLine(
            job_id=job_id,
            job_name=job_names.get(job_id, ""),
            gpu_model=names.get(model_id),
            unit=unit,
            unit_price=unit_price,
            sums=sums,
        )
        for (job_id, model_id, unit, unit_price), sums in sorted(
            line_sums.items(), key=lambda item: (item[0][0], item[0][1] or 0, *item[0][2:])
        )
    ]
    daily = [
        DailyUsage(day=day, gpu_model=names.get(model_id), unit=unit, hours=hours(seconds))
        for (day, model_id, unit), seconds in sorted(
            day_seconds.items(), key=lambda item: (item[0][0], item[0][1] or 0, item[0][2])
        )
    ]
    grants = list(account.grants.select_related("gpu_model").order_by("gpu_model__name"))
    return Statement(account=account, month=month, lines=lines, grants=grants, daily=daily)


@dataclass
class AccountRow:
    """One account's month, card-hours and core-hours kept apart (never added together)."""

    account_id: int
    username: str
    billing_enabled: bool
    card: UsageSums = field(default_factory=UsageSums)
    core: UsageSums = field(default_factory=UsageSums)

    @property
    def sums(self) -> UsageSums:
        """Both units together: only their amounts add up to anything."""
        return self.card + self.core

    @property
    def card_hours(self) -> Decimal:
        return self.card.hours

    @property
    def core_hours(self) -> Decimal:
        return self.core.hours


SORTS = {
    "user": lambda row: row.username.lower(),
    "billing": lambda row: row.billing_enabled,
    "card_hours": lambda row: row.card.unit_seconds,
    "free_card_hours": lambda row: row.card.free_unit_seconds,
    "billable_card_hours": lambda row: row.card.billable_unit_seconds,
    "core_hours": lambda row: row.core.unit_seconds,
    "billable_core_hours": lambda row: row.core.billable_unit_seconds,
    "amount": lambda row: row.sums.amount,
}
DEFAULT_SORT = "-amount"
TOP_USERS = 5


@dataclass(frozen=True)
class Overview:
    month: Month
    rows: list[AccountRow]
    by_model: list[ModelTotal]
    top: list[AccountRow]

    @property
    def total(self) -> AccountRow:
        """The rows shown, summed unit by unit; its ``billing_enabled`` counts the paid ones."""
        return AccountRow(
            account_id=0,
            username="",
            billing_enabled=sum(row.billing_enabled for row in self.rows),
            card=sum((row.card for row in self.rows), UsageSums()),
            core=sum((row.core for row in self.rows), UsageSums()),
        )


def overview_for(
    *, month: Month, search: str = "", billing: bool | None = None, sort: str = DEFAULT_SORT
) -> Overview:
    """Every account's month (those without usage too), filtered and sorted; totals by model."""
    accounts = Account.objects.order_by("pk")
    rows = {
        pk: AccountRow(account_id=pk, username=username, billing_enabled=enabled)
        for pk, username, enabled in accounts.values_list("pk", "user__username", "billing_enabled")
    }
    names = model_names()
    usage = list(
        month_usage(month).values("account_id", "gpu_model_id", "unit").annotate(**SUMS).order_by()
    )
    for item in usage:
        row, sums = rows[item["account_id"]], UsageSums.of(item)
        if item["unit"] == Price.Unit.CARD_HOUR:
            row.card += sums
        else:
            row.core += sums
    everyone = list(rows.values())
    # By what they were charged, then by cards and cores used (free accounts pay nothing).
    top = sorted(
        (row for row in everyone if row.sums.unit_seconds),
        key=lambda row: (row.sums.amount, row.card.unit_seconds, row.core.unit_seconds),
        reverse=True,
    )[:TOP_USERS]
    shown = [
        row
        for row in everyone
        if search.lower() in row.username.lower()
        and (billing is None or row.billing_enabled == billing)
    ]
    key = sort.removeprefix("-")
    shown.sort(key=SORTS.get(key, SORTS["amount"]), reverse=sort.startswith("-"))
    by_model = totals_by_model(
        (names.get(item["gpu_model_id"]), item["unit"], UsageSums.of(item)) for item in usage
    )
    return Overview(month=month, rows=shown, by_model=by_model, top=top)


def accounts_for_staff(*, with_switchers: bool = False) -> QuerySet[Account]:
    """Accounts with their user (and who last enabled or disabled billing, for its page)."""
    related = ["user", "billing_enabled_by", "billing_disabled_by"] if with_switchers else ["user"]
    return Account.objects.select_related(*related)


def account_recent_events(account: Account, *, limit: int = 20) -> QuerySet:
    return account.events.select_related("actor")[:limit]


def account_grants(account: Account) -> QuerySet[FreeGrant]:
    """The account's free grants, by GPU model name."""
    return account.grants.select_related("gpu_model").order_by("gpu_model__name")
