"""Asking for a scheduling pass once a change commits, one pass for a burst of changes.

The pass itself is above this layer: it is queued by its Celery task name, never imported.
"""

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from core.task_names import send_task

# Set while a scheduling pass is queued and has not begun to read: a change that
# commits meanwhile needs no pass of its own. It expires in case that pass is lost.
PASS_QUEUED_KEY = "trainyard:schedule-pass-queued"
PASS_QUEUED_SECONDS = 5
# The Celery task that runs a pass (``jobs.tasks.schedule_pass``), sent by name.
SCHEDULE_PASS_TASK = "jobs.tasks.schedule_pass"
# Inside ``one_pass_after``: whether a change asked for a pass (None outside).
_asked: ContextVar[list[bool] | None] = ContextVar("trainyard_pass_asked", default=None)


def schedule_soon() -> None:
    """Run a scheduling pass once the current transaction commits."""
    transaction.on_commit(request_pass)


@contextlib.contextmanager
def one_pass_after() -> Iterator[None]:
    """The passes that changes committed within ask for become one, asked for at the end:
    a batch of reports (jobs started and ended in Slurm) wants one pass that reads them
    all, not one begun after each, while the rest of the batch is still being written."""
    token = _asked.set([])
    try:
        yield
    finally:
        asked = _asked.get()
        _asked.reset(token)
        if asked:
            request_pass()


def request_pass() -> None:
    """Queue a pass, unless one is queued that will read this change anyway.

    A burst of submissions or exits then costs a pass or two, not one each
    (each pass reads every waiting job, and passes run one at a time). Without
    a shared cache (the embedded setup) every change queues its own pass.
    """
    asked = _asked.get()
    if asked is not None:
        asked.append(True)  # one_pass_after asks once, at its end
        return
    if settings.TRAINYARD_SHARED_CACHE and not cache.add(PASS_QUEUED_KEY, 1, PASS_QUEUED_SECONDS):
        return
    send_task(SCHEDULE_PASS_TASK)


def pass_begins() -> None:
    """Called by a pass before it reads: changes from now on need a pass of their own."""
    cache.delete(PASS_QUEUED_KEY)
