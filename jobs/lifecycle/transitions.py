"""The job state machine: every state change goes through ``job_transition``.

Inside a caller's transaction, a transition (and the lifecycle's other writes: a
release, an attempt's start and end) joins it without a savepoint: a savepoint costs
two round trips, and a report of a Slurm job's start and end makes several
transitions in one transaction (``slurm/replica_reports.py``). So a failure inside one
fails the caller's whole transaction, as every caller lets it: none catches it to go
on in that transaction. Outside one, each still runs in a transaction of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone, translation

from core.bulk import insert_rows, update_from_values
from core.reasons import Reason
from jobs.models import Job, JobEvent
from jobs.signals import job_state_changed

from .event_log import log_job_event

S = Job.State
ALLOWED: dict[str, set[str]] = {
    # Failed while waiting: the image it waits for could not be added (jobs/images/add.py).
    S.QUOTA_WAIT: {S.QUOTA_WAIT, S.RESOURCE_WAIT, S.STARTING, S.STOPPED, S.FAILED},
    S.RESOURCE_WAIT: {S.QUOTA_WAIT, S.RESOURCE_WAIT, S.STARTING, S.STOPPED, S.FAILED},
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
    reason: Reason | str,
    data: dict | None = None,
    **fields,
) -> bool:
    """Move ``job`` to ``to_state`` and record why; return False if it already moved on.

    The update is conditional on the state we read (``UPDATE ... WHERE state = …``)
    so two workers racing on the same job cannot both apply a transition.
    A transition to the same state only updates the reason and the given fields,
    and writes an event only when the reason changed. The reason is stored as its
    code and parameters (plain text is kept verbatim: tests, old callers).
    """
    reason = Reason.of(reason)
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
    updates = {"state": to_state, **Job.reason_fields(reason), **fields}
    with transaction.atomic(savepoint=False):  # no savepoint: see the module's docstring
        changed = Job.objects.filter(pk=job.pk, state=from_state).update(**updates)
        if not changed:
            return False
        same_state = from_state == to_state
        if not same_state or job.state_reason != reason.english:
            event = JobEvent.build(
                job=job, from_state=from_state, to_state=to_state, reason=reason, data=data or {}
            )
            event.save()
            job_state_changed.send(
                sender=JobEvent, event_id=event.pk, from_state=from_state, to_state=to_state
            )
    for name, value in updates.items():
        setattr(job, name, value)
    return True


@dataclass(frozen=True)
class Transition:
    """One job's move for ``job_transition_many``; ``from_state`` is the state we read."""

    job_id: int
    from_state: str
    to_state: str
    reason: Reason
    old_reason: str = ""  # the job's stored (English) reason
    data: dict = field(default_factory=dict)
    fields: dict = field(default_factory=dict)


def job_transition_many(*, transitions: Sequence[Transition]) -> set[int]:
    """``job_transition`` for many jobs in a few statements; return the ids that moved.

    The same rules: allowed moves only, an update conditional on the state we
    read (a job that moved on meanwhile is skipped), and an event for each
    change of state, or of reason within a state. All transitions of one call
    must set the same ``fields`` (the scheduler's pass does). Only moves into a
    waiting state or ``starting``: the others set timestamps and notify the owner,
    use ``job_transition``.
    """
    if not transitions:
        return set()
    for t in transitions:
        if t.to_state not in (*Job.WAITING_STATES, S.STARTING):
            raise ValueError(f"job_transition_many does not move jobs to {t.to_state}")
        if t.to_state not in ALLOWED[t.from_state]:
            raise TransitionRefused(f"job {t.job_id}: {t.from_state} → {t.to_state} is not allowed")
    names = sorted(transitions[0].fields)
    if any(sorted(t.fields) != names for t in transitions):
        raise ValueError("every transition of one call must set the same fields")
    with translation.override("en"):  # once for them all: a pass moves thousands
        columns = {id(t): _reason_columns(t.reason) for t in transitions}
    rows = [
        (t.job_id, t.from_state, t.to_state, *columns[id(t)]) + tuple(t.fields[n] for n in names)
        for t in transitions
    ]
    with transaction.atomic(savepoint=False):  # no savepoint: see the module's docstring
        moved = set(
            update_from_values(
                Job,
                rows=rows,
                match_fields=["state"],
                set_fields=["state", *REASON_FIELDS, *names],
                returning=True,
            )
        )
        now = timezone.now()
        with_event = [
            t
            for t in transitions
            if t.job_id in moved
            and (t.from_state != t.to_state or t.old_reason != t.reason.english)
        ]
        insert_rows(
            JobEvent,
            fields=[
                "job",
                "created_at",
                "from_state",
                "to_state",
                "reason",
                "reason_code",
                "reason_params",
                "data",
            ],
            rows=[
                (t.job_id, now, t.from_state, t.to_state, *columns[id(t)], t.data)
                for t in with_event
            ],
        )
    for t in with_event:  # bulk inserts send no post_save
        log_job_event(t.job_id, t.from_state, t.to_state, t.reason.english)
    return moved


REASON_FIELDS = ("state_reason", "state_reason_code", "state_reason_params")


def _reason_columns(reason: Reason) -> tuple:
    """A reason's English text, code and parameters, in the order of ``REASON_FIELDS``."""
    return (reason.english, reason.code, reason.json_params)
