from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.db.models import DurationField, ExpressionWrapper, F, QuerySet
from django.db.models.functions import Coalesce, Now
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext_lazy as _

from .models import Job, Project
from .selectors import jobs_user_may_operate, projects_for_user
from .usage import jobs_with_usage

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
    jobs = jobs_user_may_operate(user=request.user).select_related("project", "gpu_model", "owner")
    chosen = {name: request.GET.get(name, "").strip() for name in FILTERS}
    if chosen["state"] in Job.State.values:
        jobs = jobs.filter(state=chosen["state"])
    else:
        chosen["state"] = ""
    projects = Project.objects.all() if staff else projects_for_user(user=request.user)
    projects = list(projects.order_by("name"))
    if chosen["project"] in {p.name for p in projects}:
        jobs = jobs.filter(project__name=chosen["project"])
    else:
        chosen["project"] = ""
    if not staff:
        chosen["user"] = chosen["node"] = ""
    if chosen["user"]:
        jobs = jobs.filter(owner__username=chosen["user"])
    if chosen["node"]:
        jobs = jobs.filter(replica_set__node__name=chosen["node"]).distinct()
    search = request.GET.get("q", "").strip()[:128]
    if search:
        jobs = jobs.filter(name__icontains=search)
    sort = request.GET.get("sort", DEFAULT_SORT)
    if sort.removeprefix("-") not in SORTS:
        sort = DEFAULT_SORT
    page = Paginator(_sorted(_with_figures(jobs), sort), JOBS_PER_PAGE).get_page(
        request.GET.get("page")
    )
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


def _with_figures(jobs: QuerySet[Job]) -> QuerySet[Job]:
    """How long each job ran (so far) and what billing recorded, in the list's one query."""
    ran = ExpressionWrapper(
        Coalesce(F("finished_at"), Now()) - F("started_at"), output_field=DurationField()
    )
    return jobs_with_usage(jobs.annotate(run_duration=ran))


def _sorted(jobs: QuerySet[Job], sort: str) -> QuerySet[Job]:
    field = F(SORTS[sort.removeprefix("-")][1])
    order = field.desc(nulls_last=True) if sort.startswith("-") else field.asc(nulls_last=True)
    return jobs.order_by(order, "-pk")


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
