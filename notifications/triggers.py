"""After-commit triggers that the jobs and billing apps call: each queues a notification task.

``robust``: the change that triggered it has committed; a broker that cannot
take the task must not fail the caller (the job's state machine, the accrual).
"""

from __future__ import annotations

from functools import partial

from django.db import transaction

from .rules import FREE_HOURS_PERCENTS, JOB_STATE_KINDS


def job_state_changed(*, event_id: int, from_state: str, to_state: str) -> None:
    """Called with the ``JobEvent`` of a state change, inside its transaction."""
    if from_state != to_state and to_state in JOB_STATE_KINDS:
        transaction.on_commit(partial(enqueue_job_event, event_id), robust=True)


def free_grant_crossed(*, grant_id: int, percent: int) -> None:
    """Called when an accrual takes a free grant past ``percent`` of its hours."""
    if percent in FREE_HOURS_PERCENTS:
        transaction.on_commit(partial(enqueue_free_hours, grant_id, percent), robust=True)


def enqueue_job_event(event_id: int) -> None:
    from .tasks import notify_job_event

    notify_job_event.delay(event_id)


def enqueue_free_hours(grant_id: int, percent: int) -> None:
    from .tasks import notify_free_hours

    notify_free_hours.delay(grant_id, percent)
