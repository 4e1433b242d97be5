from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .selectors import nodes_overview


def resource_overview(request: HttpRequest) -> HttpResponse:
    return render(request, "resources/overview.html", {"nodes": nodes_overview()})
