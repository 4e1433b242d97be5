"""The resources overview page (nodes and the free panel): in jobs, since the panel shows
what the user's jobs hold and which models billing lets them use."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from resources.free import free_resources_refresh
from resources.selectors import nodes_overview

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
