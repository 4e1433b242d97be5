from django.apps import AppConfig


class TrainyardConfig(AppConfig):
    """The project itself as an app, for its project-wide management commands (``seed_demo``):
    they fill every app, so they sit above them all, with the URLs and the API."""

    name = "trainyard"
    verbose_name = "Trainyard"
