"""Logging pieces named in ``settings.LOGGING``."""

import logging


class OneLineRefusals(logging.Filter):
    """A refused request (4xx) is one line: Django logs a PermissionDenied (403) with its whole
    traceback, which says nothing a person needs. Server errors (5xx) keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "django.request" and getattr(record, "status_code", 500) < 500:
            record.exc_info = None
            record.exc_text = None
        return True
