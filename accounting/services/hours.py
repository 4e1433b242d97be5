"""Keeping ``UsageHour`` equal to the ledger: each accrual adds its rows' sums to their hours.

Called under the account's row lock (the accrual's), so no other writer touches
the account's hours at the same time.
"""

from __future__ import annotations

from datetime import datetime

from billing.models import UsageHour, UsageRecord
from billing.months import site_zone

SUMMED = ("unit_seconds", "free_unit_seconds", "billable_unit_seconds", "amount")


def local_hour(moment: datetime) -> datetime:
    """The start of ``moment``'s hour on the site's clock."""
    return moment.astimezone(site_zone()).replace(minute=0, second=0, microsecond=0)


def hour_key(row) -> tuple:
    return (row.job_id, row.gpu_model_id, row.unit, row.unit_price, row.hour)


def usage_hours_add(*, account_id: int, rows: list[UsageRecord]) -> None:
    """Add the ledger rows to their hours, creating the hours not yet there."""
    if not rows:
        return
    added: dict[tuple, UsageHour] = {}
    for row in rows:
        key = (row.job_id, row.gpu_model_id, row.unit, row.unit_price, local_hour(row.period_start))
        hour = added.get(key)
        if hour is None:
            hour = added[key] = UsageHour(
                account_id=account_id,
                job_id=row.job_id,
                gpu_model_id=row.gpu_model_id,
                unit=row.unit,
                unit_price=row.unit_price,
                hour=key[-1],
                ledger_rows=0,
                **dict.fromkeys(SUMMED, 0),
            )
        for name in SUMMED:
            setattr(hour, name, getattr(hour, name) + getattr(row, name))
        hour.ledger_rows += 1
    existing = {
        hour_key(hour): hour
        for hour in UsageHour.objects.filter(
            account_id=account_id,
            job_id__in={key[0] for key in added},
            hour__in={key[-1] for key in added},
        )
    }
    changed = []
    for key, new in added.items():
        old = existing.get(key)
        if old is None:
            continue
        for name in (*SUMMED, "ledger_rows"):
            setattr(old, name, getattr(old, name) + getattr(new, name))
        changed.append(old)
    UsageHour.objects.bulk_update(changed, [*SUMMED, "ledger_rows"])
    UsageHour.objects.bulk_create(new for key, new in added.items() if key not in existing)
