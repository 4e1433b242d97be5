"""Gunicorn's settings for the Procfile's web process (``--config python:trainyard.gunicorn``).

A line per request only with TRAINYARD_VERBOSE=1 (`make run V=1`): the job page alone asks
for its live panel every two seconds. Errors go to stderr either way.
"""

from trainyard.env import env_bool

accesslog = "-" if env_bool("TRAINYARD_VERBOSE", False) else None
