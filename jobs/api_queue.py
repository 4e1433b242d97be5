"""The queue over HTTP: ``GET /queue``, a user's reorders, staff's priorities."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema
from ninja.errors import HttpError

from .selectors import jobs_user_may_operate
from .services.job_export import PRIORITY_NAMES
from .services.queue import QueueEntry, job_move, job_set_priority, queue_for

router = Router(tags=["queue"])
PRIORITY_VALUES = {name: value for value, name in PRIORITY_NAMES.items()}


class QueuedJobOut(Schema):
    id: int
    name: str
    owner: str
    project: str
    state: str
    state_reason: str = Field(description="Why it waits, in the request's language")
    state_reason_code: str
    position: int = Field(description="1-based, among every waiting job of its model")
    estimated_start: datetime | None
    fair_share_factor: float
    priority: str
    preemptible: bool
    submitted_at: datetime
    can_move_up: bool = Field(description="The reader owns it and may move it up")
    can_move_down: bool


class ModelQueueOut(Schema):
    model: str | None = Field(description="The requested GPU model; null for CPU jobs")
    waiting: int = Field(description="Every waiting job of the model, the reader's or not")
    jobs: list[QueuedJobOut]


class QueueOut(Schema):
    queues: list[ModelQueueOut]


class MoveIn(Schema):
    direction: Literal["up", "down"]


class PriorityIn(Schema):
    priority: Literal["normal", "high"]


def queued_job_out(entry: QueueEntry) -> QueuedJobOut:
    job = entry.job
    return QueuedJobOut(
        id=job.pk,
        name=job.name,
        owner=job.owner.get_username(),
        project=job.project.name,
        state=job.state,
        state_reason=job.reason_text,
        state_reason_code=job.state_reason_code,
        position=entry.position,
        estimated_start=job.estimated_start,
        fair_share_factor=round(entry.fair_share, 4),
        priority=PRIORITY_NAMES.get(job.priority, str(job.priority)),
        preemptible=job.preemptible,
        submitted_at=job.submitted_at,
        can_move_up=entry.earlier is not None,
        can_move_down=entry.later is not None,
    )


@router.get("/queue", response=QueueOut)
def get_queue(request: HttpRequest):
    """Every waiting job you may see, per model, in the order the scheduler takes them."""
    return QueueOut(
        queues=[
            ModelQueueOut(
                model=queue.model or None,
                waiting=queue.waiting,
                jobs=[queued_job_out(entry) for entry in queue.entries],
            )
            for queue in queue_for(user=request.user)
        ]
    )


@router.post("/jobs/{job_id}/move", response=QueueOut)
def move_job(request: HttpRequest, job_id: int, payload: MoveIn):
    """Swap one of your waiting jobs with your next one up or down its queue."""
    return _changed(request, job_id, job_move, direction=payload.direction)


@router.post("/jobs/{job_id}/priority", response=QueueOut)
def set_priority(request: HttpRequest, job_id: int, payload: PriorityIn):
    """Staff: change a waiting job's priority."""
    return _changed(request, job_id, job_set_priority, priority=PRIORITY_VALUES[payload.priority])


def _changed(request: HttpRequest, job_id: int, change, **what) -> QueueOut:
    """Apply a queue service's ``change`` to a job the reader may see; 403 when refused."""
    job = get_object_or_404(jobs_user_may_operate(user=request.user), pk=job_id)
    try:
        change(user=request.user, job=job, **what)
    except PermissionDenied as refused:
        raise HttpError(403, str(refused)) from refused
    return get_queue(request)
