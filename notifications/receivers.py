"""Receivers of the jobs and billing signals: each queues a notification task on commit.

Connected in ``NotificationsConfig.ready()``. ``robust``: the change that
triggered it has committed; a broker that cannot take the task must not fail
the sender (the job's state machine, the accrual). Nothing is queued when the
sender's transaction rolls back.
"""

from __future__ import annotations

from functools import partial

from django.db import transaction
from django.dispatch import receiver

from billing.signals import free_grant_crossed
from core.batches import defer
from jobs.signals import job_cards_idle, job_state_changed

from .rules import FREE_HOURS_PERCENTS, JOB_STATE_KINDS
from .tasks import notify_free_hours, notify_idle_cards, notify_job_event, notify_job_events


@receiver(job_state_changed, dispatch_uid="notifications.job_state_changed")
def on_job_state_changed(*, event_id: int, from_state: str, to_state: str, **_) -> None:
    """A state change's ``JobEvent``, inside its transaction."""
    if from_state != to_state and to_state in JOB_STATE_KINDS:
        transaction.on_commit(partial(enqueue_job_event, event_id), robust=True)


@receiver(free_grant_crossed, dispatch_uid="notifications.free_grant_crossed")
def on_free_grant_crossed(*, grant_id: int, percent: int, **_) -> None:
    """An accrual took a free grant past ``percent`` of its hours."""
    if percent in FREE_HOURS_PERCENTS:
        transaction.on_commit(partial(enqueue_free_hours, grant_id, percent), robust=True)


@receiver(job_cards_idle, dispatch_uid="notifications.job_cards_idle")
def on_job_cards_idle(*, job_id: int, percent: float, minutes: int, **_) -> None:
    """A running job's cards averaged ``percent`` GPU use over the site's idle window."""
    transaction.on_commit(partial(enqueue_idle_cards, job_id, percent, minutes), robust=True)


def enqueue_idle_cards(job_id: int, percent: float, minutes: int) -> None:
    notify_idle_cards.delay(job_id, percent, minutes)


def enqueue_job_event(event_id: int) -> None:
    """Within a batch of reports (``core.batches``), its events go to the worker together."""
    defer(_enqueue_job_events, event_id)


def _enqueue_job_events(event_ids: list[int]) -> None:
    if len(event_ids) == 1:
        notify_job_event.delay(event_ids[0])
    else:
        notify_job_events.delay(event_ids)


def enqueue_free_hours(grant_id: int, percent: int) -> None:
    notify_free_hours.delay(grant_id, percent)
