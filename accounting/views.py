"""The user's billing page ("My billing") and its CSV; staff pages live in ``staff_views``."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from billing.accounts import account_for_user
from billing.months import Month
from jobs.cluster_usage import average_card_use

from .charts import daily_charts
from .exports import statement_csv
from .selectors import Statement, statement_for

LINES_PER_PAGE = 100


def month_from(request: HttpRequest) -> tuple[Month, str]:
    """The month asked for, or this month and the reason the one asked for was refused."""
    try:
        return Month.parse(request.GET.get("month")), ""
    except ValidationError as error:
        return Month.current(), error.message_dict["month"][0]


def statement_context(statement: Statement, request: HttpRequest, month_error: str = "") -> dict:
    month = statement.month
    lines = Paginator(statement.lines, LINES_PER_PAGE).get_page(request.GET.get("page"))
    # Beside each card line, its job's average GPU use (where the agent sampled it).
    use = average_card_use([line.job_id for line in lines if line.gpu_model])
    return {
        "statement": statement,
        "lines": lines,
        "line_rows": [(line, use.get(line.job_id) if line.gpu_model else None) for line in lines],
        "charts": daily_charts(month=month, daily=statement.daily),
        "month": month,
        "previous_month": month.previous(),
        "next_month": month.next() if month < Month.current() else None,
        "month_error": month_error,
        "currency": settings.TRAINYARD_CURRENCY,
    }


def render_statement_page(
    request: HttpRequest, template: str, context: dict, *, status: int = 200
) -> HttpResponse:
    """The whole page, or only its statement panel for an htmx month change."""
    if request.htmx and not request.htmx.boosted:
        template += "#statement"
    return render(request, template, context, status=status)


@require_GET
def my_billing(request: HttpRequest) -> HttpResponse:
    month, error = month_from(request)
    account = account_for_user(user=request.user)
    statement = statement_for(account=account, month=month)
    return render_statement_page(
        request,
        "billing/my_billing.html",
        statement_context(statement, request, error),
        status=400 if error else 200,
    )


@require_GET
def my_billing_csv(request: HttpRequest) -> HttpResponse:
    month, error = month_from(request)
    if error:
        return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
    account = account_for_user(user=request.user)
    return statement_csv(statement_for(account=account, month=month))
