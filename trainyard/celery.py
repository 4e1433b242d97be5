import os

from celery import Celery

from .broker_compat import install as install_broker_compat

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainyard.settings")

install_broker_compat()
app = Celery("trainyard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
