from django.urls import path

from . import views

app_name = "resources"
urlpatterns = [
    path("", views.resource_overview, name="overview"),
    path("free/refresh/", views.free_refresh, name="free_refresh"),
]
