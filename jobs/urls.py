from django.urls import path, register_converter

from . import (
    detail_views,
    estimate_views,
    form_views,
    proxy_views,
    queue_views,
    runtime_views,
    template_views,
    views,
)


class OutputPathConverter:
    """A path a job wrote: any characters (a newline too) but NUL, which no file name holds."""

    regex = "[^\x00]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(OutputPathConverter, "outputpath")

app_name = "jobs"
urlpatterns = [
    path("", views.job_list, name="list"),
    path("new/", form_views.job_new, name="new"),
    path("queue/", queue_views.queue_page, name="queue"),
    path("<int:pk>/move/", queue_views.queue_move, name="queue_move"),
    path("<int:pk>/priority/", queue_views.queue_priority, name="queue_priority"),
    path("new/estimate/", estimate_views.estimate_panel_view, name="estimate"),
    path("<int:pk>/", detail_views.job_detail, name="detail"),
    path("<int:pk>/stop/", detail_views.job_stop_view, name="stop"),
    path("<int:pk>/ports/", detail_views.job_ports_view, name="ports"),
    path("<int:pk>/ports/<int:port>/open/", proxy_views.port_open, name="port_open"),
    path("<int:pk>/save-template/", template_views.job_save_template, name="save_template"),
    path("templates/", template_views.personal_template_list, name="templates"),
    path(
        "templates/<int:pk>/delete/",
        template_views.personal_template_delete,
        name="template_delete",
    ),
    path("<int:pk>/runtime/", runtime_views.job_runtime_panel, name="runtime"),
    path("<int:pk>/usage/", runtime_views.job_usage_panel, name="usage"),
    path(
        "<int:pk>/logs/<int:attempt_id>/download/",
        runtime_views.job_log_download,
        name="log_download",
    ),
    path(
        "<int:pk>/outputs/<int:replica>/<str:storage>/<outputpath:path>",
        runtime_views.job_output_download,
        name="output_download",
    ),
    path(
        "<int:pk>/checkpoint/<int:replica>/<str:storage>/<outputpath:path>",
        runtime_views.job_checkpoint_download,
        name="checkpoint_download",
    ),
]
