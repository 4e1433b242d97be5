from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = _("Jobs")

    def ready(self) -> None:
        from jobs import event_log  # noqa: F401  (connects the signal receivers)
        from jobs.scheduler import triggers  # noqa: F401
