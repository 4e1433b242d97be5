import os

from celery import Celery
from celery.signals import task_postrun, task_prerun

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
    from django.db import close_old_connections

    close_old_connections()
