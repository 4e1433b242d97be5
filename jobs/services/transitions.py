"""The job state machine: every state change goes through ``job_transition``."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from jobs.models import Job, JobEvent

S = Job.State
ALLOWED: dict[str, set[str]] = {
    S.QUOTA_WAIT: {S.QUOTA_WAIT, S.RESOURCE_WAIT, S.STARTING, S.STOPPED},
    S.RESOURCE_WAIT: {S.QUOTA_WAIT, S.RESOURCE_WAIT, S.STARTING, S.STOPPED},
    # Back to resource wait: a node was lost and the job needs a new placement to retry.
    S.STARTING: {
        S.RUNNING,
        S.STARTING,
        S.RESOURCE_WAIT,
        S.SUCCEEDED,
        S.FAILED,
        S.STOPPED,
        S.TIMED_OUT,
    },
    S.RUNNING: {
        S.STARTING,
        S.RUNNING,
        S.RESOURCE_WAIT,
        S.SUCCEEDED,
        S.FAILED,
        S.STOPPED,
        S.TIMED_OUT,
    },
    S.SUCCEEDED: set(),
    S.FAILED: set(),
    S.STOPPED: set(),
    S.TIMED_OUT: set(),
}


class TransitionRefused(Exception):
    """The job was not in a state from which this transition is allowed."""


def job_transition(
    *,
    job: Job,
    to_state: str,
    reason: str,
    data: dict | None = None,
    **fields,
) -> bool:
    """Move ``job`` to ``to_state`` and record why; return False if it already moved on.

    The update is conditional on the state we read (``UPDATE ... WHERE state = …``)
    so two workers racing on the same job cannot both apply a transition.
    A transition to the same state only updates the reason and the given fields,
    and writes an event only when the reason changed.
    """
    from_state = job.state
    if to_state not in ALLOWED[from_state]:
        raise TransitionRefused(f"job {job.pk}: {from_state} → {to_state} is not allowed")
    now = timezone.now()
    if to_state == S.RUNNING and job.started_at is None:
        fields.setdefault("started_at", now)
    if to_state in Job.FINAL_STATES:
        fields.setdefault("finished_at", now)
        fields.setdefault("queue_position", None)
        fields.setdefault("estimated_start", None)
    updates = {"state": to_state, "state_reason": reason, **fields}
    with transaction.atomic():
        changed = Job.objects.filter(pk=job.pk, state=from_state).update(**updates)
        if not changed:
            return False
        same_state = from_state == to_state
        if not same_state or job.state_reason != reason:
            JobEvent.objects.create(
                job=job, from_state=from_state, to_state=to_state, reason=reason, data=data or {}
            )
    for name, value in updates.items():
        setattr(job, name, value)
    return True
