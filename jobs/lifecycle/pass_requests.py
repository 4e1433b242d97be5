"""Asking for a scheduling pass once a change commits, one pass for a burst of changes.

The pass itself is above this layer: it is queued by its Celery task name, never imported.
"""

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from core.batches import defer
from core.task_names import send_task

# Set while a scheduling pass is queued and has not begun to read: a change that
# commits meanwhile needs no pass of its own. It expires in case that pass is lost.
PASS_QUEUED_KEY = "trainyard:schedule-pass-queued"
PASS_QUEUED_SECONDS = 5
# The Celery task that runs a pass (``jobs.tasks.schedule_pass``), sent by name.
SCHEDULE_PASS_TASK = "jobs.tasks.schedule_pass"


def schedule_soon() -> None:
    """Run a scheduling pass once the current transaction commits."""
    transaction.on_commit(request_pass)


def request_pass() -> None:
    """Queue a pass, unless one is queued that will read this change anyway.

    A burst of submissions or exits then costs a pass or two, not one each
    (each pass reads every waiting job, and passes run one at a time). Without
    a shared cache (the embedded setup) every change queues its own pass.

    Within ``core.batches.batched()`` (a batch of Slurm reports, a tracking pass) the
    passes its changes ask for become one, asked for at its end: one pass that reads
    them all, not one begun after each while the rest of the batch is still written.
    """
    defer(_queue_pass, None)


def _queue_pass(_asked: list) -> None:
    if settings.TRAINYARD_SHARED_CACHE and not cache.add(PASS_QUEUED_KEY, 1, PASS_QUEUED_SECONDS):
        return
    send_task(SCHEDULE_PASS_TASK)


def pass_begins() -> None:
    """Called by a pass before it reads: changes from now on need a pass of their own."""
    cache.delete(PASS_QUEUED_KEY)
