"""What the notification tests share: reading queued triggers, moving a job along."""

from __future__ import annotations

from functools import partial

from jobs.lifecycle.transitions import job_transition
from jobs.models import Job, JobEvent
from notifications.receivers import enqueue_free_hours, enqueue_job_event

S = Job.State
# The moves a job makes to reach each state, from quota wait.
PATHS = {
    S.RUNNING: [S.STARTING, S.RUNNING],
    S.SUCCEEDED: [S.STARTING, S.RUNNING, S.SUCCEEDED],
    S.FAILED: [S.STARTING, S.RUNNING, S.FAILED],
    S.TIMED_OUT: [S.STARTING, S.RUNNING, S.TIMED_OUT],
    S.STOPPED: [S.STARTING, S.RUNNING, S.STOPPED],
}


def queued(callbacks, enqueue) -> list[int]:
    """The ids that on-commit callbacks would hand to a notification task."""
    return [cb.args[0] for cb in callbacks if isinstance(cb, partial) and cb.func is enqueue]


def queued_job_events(callbacks) -> list[int]:
    return queued(callbacks, enqueue_job_event)


def queued_grants(callbacks) -> list[tuple]:
    """(grant id, percent) of each free-hours notification the callbacks would queue."""
    return [
        cb.args for cb in callbacks if isinstance(cb, partial) and cb.func is enqueue_free_hours
    ]


def move(job: Job, *states: str, reason: str = "") -> None:
    for state in states:
        assert job_transition(job=job, to_state=state, reason=reason or f"now {state}")


def last_event(job: Job) -> JobEvent:
    return JobEvent.objects.filter(job=job).latest("pk")
