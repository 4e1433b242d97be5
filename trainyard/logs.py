"""Logging pieces named in ``settings.LOGGING``."""

import logging

# What nginx asks of Trainyard on each job port's site (jobs/proxy_views.py).
PROXY_PATHS = "/_trainyard/"


class OneLineRefusals(logging.Filter):
    """A refused request (4xx) is one line: Django logs a PermissionDenied (403) with its whole
    traceback, which says nothing a person needs. Server errors (5xx) keep theirs. The
    authenticated proxy's answers are not logged at all: a 401 or a "job not running" page
    is routine there."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        path = getattr(request, "path", "")
        if record.name == "django.request" and path.startswith(PROXY_PATHS) and not record.exc_info:
            return False  # the proxy's routine answers to nginx (401, 403) and its own pages
        if record.name == "django.request" and getattr(record, "status_code", 500) < 500:
            record.exc_info = None
            record.exc_text = None
        return True


def logging_config(*, routine_level: str, root_level: str) -> dict:
    """``settings.LOGGING``: one console; routine lines (``routine_level``) only when asked."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"one_line_refusals": {"()": "trainyard.logs.OneLineRefusals"}},
        "handlers": {
            "console": {"class": "logging.StreamHandler", "filters": ["one_line_refusals"]}
        },
        "root": {"handlers": ["console"], "level": root_level},
        "loggers": {
            # django-axes logs every log-in at INFO; its warnings (failures, lockouts) matter.
            "axes": {"level": "WARNING"},
            # Celery's routine lines: each task received, run, or discarded as expired, each
            # send of beat (the node agent alone ran ~1,300 a minute for 11 idle nodes).
            # trainyard/celery.py applies these again after Celery sets up its own logging.
            "celery.worker.strategy": {"level": routine_level},
            "celery.app.trace": {"level": routine_level},
            "celery.worker.request": {"level": routine_level},
            "celery.beat": {"level": routine_level},
        },
    }
