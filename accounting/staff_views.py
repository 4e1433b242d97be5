"""Staff pages: the billing overview of every account, and one account's statement."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.http import require_GET, require_http_methods

from billing.models import Account
from core.staff import staff_only

from .exports import overview_csv, statement_csv
from .selectors import (
    DEFAULT_SORT,
    SORTS,
    account_grants,
    account_recent_events,
    accounts_for_staff,
    overview_for,
    statement_for,
)
from .services import account_disable_billing, account_enable_billing, jobs_needing_billing
from .views import month_from, render_statement_page, statement_context

ACCOUNTS_PER_PAGE = 50
BILLING_FILTERS = {"yes": True, "no": False}
COLUMNS = [
    ("user", gettext_lazy("User")),
    ("billing", gettext_lazy("Billing")),
    ("card_hours", gettext_lazy("Card-hours")),
    ("free_card_hours", gettext_lazy("Free card-hours")),
    ("billable_card_hours", gettext_lazy("Billable card-hours")),
    ("core_hours", gettext_lazy("Core-hours")),
    ("billable_core_hours", gettext_lazy("Billable core-hours")),
    ("amount", gettext_lazy("Amount")),
]


def _overview_of(request: HttpRequest):
    month, error = month_from(request)
    sort = request.GET.get("sort", DEFAULT_SORT)
    if sort.removeprefix("-") not in SORTS:
        sort = DEFAULT_SORT
    search = request.GET.get("q", "").strip()[:150]
    billing = BILLING_FILTERS.get(request.GET.get("billing", ""))
    overview = overview_for(month=month, search=search, billing=billing, sort=sort)
    return overview, error, {"sort": sort, "q": search, "billing": request.GET.get("billing", "")}


@require_GET
@staff_only
def overview(request: HttpRequest) -> HttpResponse:
    overview, error, filters = _overview_of(request)
    page = Paginator(overview.rows, ACCOUNTS_PER_PAGE).get_page(request.GET.get("page"))
    month = overview.month
    return render(
        request,
        "billing/overview.html",
        {
            "overview": overview,
            "page": page,
            "month": month,
            "previous_month": month.previous(),
            "next_month": month.next(),
            "month_error": error,
            "filters": filters,
            "columns": _sort_headers(filters, month),
            "query": urlencode({"month": month, **filters}),
            "currency": settings.TRAINYARD_CURRENCY,
        },
        status=400 if error else 200,
    )


def _sort_headers(filters: dict, month) -> list[dict]:
    """Each column's label, the link that sorts by it, and its ``aria-sort``."""
    current = filters["sort"]
    headers = []
    for key, label in COLUMNS:
        ascending_first = key == "user"
        if current.removeprefix("-") == key:
            next_sort = key if current.startswith("-") else f"-{key}"
            aria = "descending" if current.startswith("-") else "ascending"
        else:
            next_sort, aria = (key if ascending_first else f"-{key}"), "none"
        query = urlencode({**filters, "month": month, "sort": next_sort})
        headers.append({"label": label, "query": query, "aria_sort": aria})
    return headers


@require_GET
@staff_only
def overview_export(request: HttpRequest) -> HttpResponse:
    overview, error, _filters = _overview_of(request)
    if error:
        return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
    return overview_csv(overview)


@require_GET
@staff_only
def account_statement(request: HttpRequest, account_id: int) -> HttpResponse:
    account = get_object_or_404(
        accounts_for_staff(with_switchers=True),
        pk=account_id,
    )
    month, error = month_from(request)
    statement = statement_for(account=account, month=month)
    context = statement_context(statement, request, error) | {
        "account": account,
        "events": account_recent_events(account),
    }
    return render_statement_page(
        request, "billing/account.html", context, status=400 if error else 200
    )


@require_GET
@staff_only
def account_statement_export(request: HttpRequest, account_id: int) -> HttpResponse:
    account = get_object_or_404(accounts_for_staff(), pk=account_id)
    month, error = month_from(request)
    if error:
        return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
    return statement_csv(statement_for(account=account, month=month))


@require_http_methods(["GET", "POST"])
@staff_only
def account_billing_enable(request: HttpRequest, account_id: int) -> HttpResponse:
    """GET asks first (what enabling means); the POST of that page enables."""
    account = get_object_or_404(accounts_for_staff(), pk=account_id)
    if request.method == "GET":
        return _confirm(request, account, enable=True)
    account_enable_billing(account=account, actor=request.user)
    messages.success(
        request, _("Billing enabled for %(user)s.") % {"user": account.user.get_username()}
    )
    return redirect(reverse("billing:account", args=[account.pk]))


@require_http_methods(["GET", "POST"])
@staff_only
def account_billing_disable(request: HttpRequest, account_id: int) -> HttpResponse:
    """GET asks first, naming the jobs it would stop; the POST of that page disables."""
    account = get_object_or_404(accounts_for_staff(), pk=account_id)
    if request.method == "GET":
        return _confirm(request, account, enable=False)
    stopped = account_disable_billing(account=account, actor=request.user)
    messages.success(
        request,
        ngettext(
            "Billing disabled for %(user)s. %(count)s job stopped.",
            "Billing disabled for %(user)s. %(count)s jobs stopped.",
            len(stopped),
        )
        % {"user": account.user.get_username(), "count": len(stopped)},
    )
    return redirect(reverse("billing:account", args=[account.pk]))


def _confirm(request: HttpRequest, account: Account, *, enable: bool) -> HttpResponse:
    """The question before the switch: a plain form, no script (the CSP allows none inline)."""
    context = {
        "account": account,
        "enable": enable,
        "jobs": [] if enable else jobs_needing_billing(account=account),
        "grants": account_grants(account),
    }
    return render(request, "billing/account_confirm.html", context)
