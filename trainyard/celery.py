import logging
import os

from celery import Celery
from celery.signals import after_setup_logger, task_postrun, task_prerun
from django.conf import settings

from .broker_compat import install as install_broker_compat

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainyard.settings")

install_broker_compat()
app = Celery("trainyard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def database_connections_as_between_requests(task=None, **_kwargs) -> None:
    """Drop a connection that is broken or older than CONN_MAX_AGE, as Django does around
    each web request; the rest are reused (see ``CELERY_DB_REUSE_MAX``)."""
    if task is not None and getattr(task.request, "is_eager", False):
        return  # inside the caller's transaction (tests)
    # Here, not at the top: this module is imported (trainyard/__init__.py) before Django
    # is set up, and django.db reads the settings when imported.
    from django.db import close_old_connections

    close_old_connections()


@after_setup_logger.connect
def logger_levels_as_in_settings(**_kwargs) -> None:
    """The levels of ``LOGGING["loggers"]`` (quiet routine lines), whether or not Django's own
    logging set-up ran before Celery's in this process (beat's does not run it)."""
    for name, options in settings.LOGGING.get("loggers", {}).items():
        if "level" in options:
            logging.getLogger(name).setLevel(options["level"])
