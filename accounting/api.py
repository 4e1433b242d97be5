"""``/api/v1/billing``: the caller's own statement for a month.

Hours and money are exact decimal strings (hours to the millionth; money is
the exact sum of the ledger rows, each rounded once to 0.000001).
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.http import HttpRequest
from ninja import Router, Schema

from billing.accounts import account_for_user
from billing.models import Price
from billing.months import Month

from .selectors import statement_for

router = Router(tags=["billing"])


class StatementLineOut(Schema):
    job_id: int
    job_name: str
    gpu_model: str | None
    unit: str
    unit_price: Decimal
    hours: Decimal
    free_hours: Decimal
    billable_hours: Decimal
    unbilled_hours: Decimal
    amount: Decimal


class StatementOut(Schema):
    account: str
    billing_enabled: bool
    free_grant_card_hours: Decimal
    free_used_card_hours: Decimal
    free_remaining_card_hours: Decimal
    lines: list[StatementLineOut]
    total_billable_card_hours: Decimal
    total_amount: Decimal
    currency: str


@router.get("/statement", response=StatementOut)
def statement(request: HttpRequest, month: str = ""):
    """The month's lines (by job, model and price), free grant and totals; ``month`` is YYYY-MM."""
    account = account_for_user(user=request.user)
    result = statement_for(account=account, month=Month.parse(month))
    grants = result.grants
    return StatementOut(
        account=request.user.get_username(),
        billing_enabled=account.billing_enabled,
        free_grant_card_hours=sum((g.card_hours for g in grants), Decimal(0)),
        free_used_card_hours=sum((g.used_card_hours for g in grants), Decimal(0)),
        free_remaining_card_hours=sum((g.remaining_card_hours for g in grants), Decimal(0)),
        lines=[
            StatementLineOut(
                job_id=line.job_id,
                job_name=line.job_name,
                gpu_model=line.gpu_model,
                unit=Price.Unit(line.unit).value,
                unit_price=line.unit_price,
                hours=line.sums.hours,
                free_hours=line.sums.free_hours,
                billable_hours=line.sums.billable_hours,
                unbilled_hours=line.sums.unbilled_hours,
                amount=line.sums.amount,
            )
            for line in result.lines
        ],
        total_billable_card_hours=result.total_billable_card_hours,
        total_amount=result.total.amount,
        currency=settings.TRAINYARD_CURRENCY,
    )
