"""The resources pages (``/resources/``, namespace ``resources``): ``jobs.resource_views``."""

from django.urls import path

from . import resource_views as views

app_name = "resources"
urlpatterns = [
    path("", views.resource_overview, name="overview"),
    path("free/refresh/", views.free_refresh, name="free_refresh"),
    path("utilisation/", views.utilisation, name="utilisation"),
]
