"""The estimate panel of the New job form, re-rendered by htmx as the choices change."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from .forms import JobForm
from .forms.template_choice import form_estimate_panel


@require_POST
def estimate_panel_view(request: HttpRequest) -> HttpResponse:
    """The panel for the posted form; the page itself renders it too, for no-JS use."""
    form = JobForm(request.POST, user=request.user)
    return render(request, "jobs/_estimate_panel.html", {"panel": form_estimate_panel(form)})
