"""The resources pages: the overview (nodes and the free panel; in jobs, since the panel
shows what the user's jobs hold and which models billing lets them use) and the staff's
utilisation page (cards held against busy, from the jobs' samples)."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from core.staff import staff_only
from resources.free import free_resources_refresh
from resources.selectors import nodes_overview

from .cluster_usage import cluster_day, cluster_now, idle_jobs
from .cluster_usage_chart import day_chart
from .free_panel import free_panel_for_page

FREE_PANEL = "resources/overview.html#free-panel"


def resource_overview(request: HttpRequest) -> HttpResponse:
    context = {"nodes": nodes_overview(), "free": free_panel_for_page(user=request.user)}
    return render(request, "resources/overview.html", context)


@require_POST
def free_refresh(request: HttpRequest) -> HttpResponse:
    """Recompute the free-resource snapshot; htmx re-renders only the panel."""
    panel = free_panel_for_page(user=request.user, snapshot=free_resources_refresh())
    if request.htmx:
        return render(request, FREE_PANEL, {"free": panel})
    next_url = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}):
        return redirect(next_url)
    return redirect("resources:overview")


@require_GET
@staff_only
def utilisation(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    cards = cluster_now(now)
    hours = cluster_day(now)
    context = {
        "cards": cards,
        "hours": hours,
        "chart": day_chart(hours, cards=cards["cluster"].total),
        "idle_jobs": idle_jobs(),
    }
    return render(request, "jobs/utilisation.html", context)
