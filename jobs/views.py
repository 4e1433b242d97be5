from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext_lazy as _

from .models import Job
from .selectors import job_list_rows, projects_listed, with_fair_shares

JOBS_PER_PAGE = 25
FILTERS = ("state", "project", "user", "node")
# Sortable columns: the query value, the header, the ordering; name sorts A→Z first.
SORTS = {
    "name": (_("Name"), "name"),
    "submitted": (_("Submitted"), "submitted_at"),
    "duration": (_("Duration"), "run_duration"),
    "card_hours": (_("Card-hours"), "ledger_hours"),
    "cost": (_("Cost"), "ledger_amount"),
}
DEFAULT_SORT = "-submitted"
# How often an open list asks for its rows again (htmx; the page itself never reloads).
REFRESH_SECONDS = 5


def job_list(request: HttpRequest) -> HttpResponse:
    """The user's and their projects' jobs; every job for staff, who may also filter by
    user and node. Sorted by a column, searched by name; htmx polls the table alone."""
    staff = request.user.is_staff
    chosen = {name: request.GET.get(name, "").strip() for name in FILTERS}
    if chosen["state"] not in Job.State.values:
        chosen["state"] = ""
    projects = list(projects_listed(user=request.user))
    if chosen["project"] not in {p.name for p in projects}:
        chosen["project"] = ""
    if not staff:
        chosen["user"] = chosen["node"] = ""
    search = request.GET.get("q", "").strip()[:128]
    sort = request.GET.get("sort", DEFAULT_SORT)
    if sort.removeprefix("-") not in SORTS:
        sort = DEFAULT_SORT
    jobs = job_list_rows(
        user=request.user,
        state=chosen["state"],
        project=chosen["project"],
        owner=chosen["user"],
        node=chosen["node"],
        search=search,
        order_field=SORTS[sort.removeprefix("-")][1],
        descending=sort.startswith("-"),
    )
    page = Paginator(jobs, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    page.object_list = with_fair_shares(list(page.object_list))
    kept = {k: v for k, v in chosen.items() if v}
    listed = {**kept, **({"sort": sort} if sort != DEFAULT_SORT else {}), "q": search}
    listed = {k: v for k, v in listed.items() if v}
    context = {
        "page": page,
        "states": Job.State.choices,
        "current_state": chosen["state"],
        "projects": projects,
        "current_project": chosen["project"],
        "current_user": chosen["user"],
        "current_node": chosen["node"],
        "current_sort": sort if sort != DEFAULT_SORT else "",
        "search": search,
        "staff": staff,
        "columns": _sort_headers(kept, search, sort),
        "filter_query": urlencode(listed),
        "refresh_query": urlencode(
            {**listed, **({"page": page.number} if page.number > 1 else {})}
        ),
        "refresh_seconds": REFRESH_SECONDS,
    }
    if request.htmx:
        return render(request, "jobs/_jobs_table.html", context)
    return render(request, "jobs/job_list.html", context)


def _sort_headers(kept: dict, search: str, current: str) -> list[dict]:
    """Each sortable column's link (the other direction when it is the current sort) and
    its ``aria-sort``, in the order of ``SORTS``."""
    headers = []
    for key, (label, _field) in SORTS.items():
        if current.removeprefix("-") == key:
            next_sort = key if current.startswith("-") else f"-{key}"
            aria = "descending" if current.startswith("-") else "ascending"
        else:
            next_sort, aria = (key if key == "name" else f"-{key}"), "none"
        query = urlencode({**kept, "sort": next_sort, **({"q": search} if search else {})})
        headers.append({"label": label, "query": query, "aria_sort": aria})
    return headers
