"""CSV exports of a statement and of the admin overview (full precision, no rounding)."""

from __future__ import annotations

import csv

from django.conf import settings
from django.http import HttpResponse

from .selectors import Overview, Statement

# A cell a spreadsheet would run as a formula (CSV injection) is quoted as text.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell(value) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_response(filename: str, header: list[str], rows) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response)
    writer.writerow(header)
    writer.writerows([cell(value) for value in row] for row in rows)
    return response


def statement_csv(statement: Statement) -> HttpResponse:
    username = statement.account.user.get_username()
    return csv_response(
        f"trainyard-billing-{username}-{statement.month}.csv",
        [
            "month",
            "job_id",
            "job",
            "gpu_model",
            "unit",
            "unit_price",
            "hours",
            "free_hours",
            "billable_hours",
            "unbilled_hours",
            "amount",
            "currency",
        ],
        (
            [
                statement.month,
                line.job_id,
                line.job_name,
                line.gpu_model or "",
                line.unit,
                line.unit_price,
                line.sums.hours,
                line.sums.free_hours,
                line.sums.billable_hours,
                line.sums.unbilled_hours,
                line.sums.amount,
                settings.TRAINYARD_CURRENCY,
            ]
            for line in statement.lines
        ),
    )


def overview_csv(overview: Overview) -> HttpResponse:
    return csv_response(
        f"trainyard-billing-overview-{overview.month}.csv",
        [
            "month",
            "account_id",
            "user",
            "billing_enabled",
            "card_hours",
            "free_card_hours",
            "billable_card_hours",
            "core_hours",
            "billable_core_hours",
            "amount",
            "currency",
        ],
        (
            [
                overview.month,
                row.account_id,
                row.username,
                row.billing_enabled,
                row.card.hours,
                row.card.free_hours,
                row.card.billable_hours,
                row.core.hours,
                row.core.billable_hours,
                row.sums.amount,
                settings.TRAINYARD_CURRENCY,
            ]
            for row in overview.rows
        ),
    )
