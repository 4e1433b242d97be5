from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = _("Jobs")

    def ready(self) -> None:
        # Imported here, not at the top: these modules import models, which need the app
        # registry ready. Importing event_log and pass_receivers connects their receivers.
        from jobs import idle_cards  # noqa: F401 (its beat task)
        from jobs.execution import launch, settle
        from jobs.lifecycle import event_log  # noqa: F401
        from jobs.scheduler import pass_receivers  # noqa: F401

        # Settling (below launch) says on commit what is to be launched or stopped.
        settle.job_retried.connect(launch.launch_retried, dispatch_uid="launch-job-retried")
        settle.peers_to_stop.connect(launch.stop_peers, dispatch_uid="stop-peers")
