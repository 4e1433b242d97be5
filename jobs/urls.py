from django.urls import path

from . import detail_views, form_views, views

app_name = "jobs"
urlpatterns = [
    path("", views.job_list, name="list"),
    path("new/", form_views.job_new, name="new"),
    path("<int:pk>/", detail_views.job_detail, name="detail"),
    path("<int:pk>/stop/", detail_views.job_stop_view, name="stop"),
    path("<int:pk>/ports/", detail_views.job_ports_view, name="ports"),
]
