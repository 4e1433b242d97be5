"""API: submit, list, read, stop jobs and edit their ports (``/api/v1/jobs``).

The same services as the pages: ``job_submit`` validates, ``job_stop`` stops,
``job_ports_update`` edits ports. A job the user may not see is a 404.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from ninja import Field, Query, Router, Schema, Status
from ninja.errors import HttpError
from ninja.pagination import paginate
from pydantic import WithJsonSchema

from core.api_pagination import Pagination
from resources.schemas import ReplicaResourcesOut, replica_resources_out

from .api_resources import FeasibilityIn
from .models import Job, JobEvent
from .models.job import MAX_COMMAND_CHARS, MAX_PORT, MAX_PORTS_PER_JOB, MAX_RETRIES, MIN_PORT
from .selectors import (
    job_connect_points,
    job_fair_share,
    jobs_for_user,
    jobs_user_may_operate,
    with_fair_shares,
)
from .services.job_export import PRIORITY_NAMES, job_submit_body
from .services.ports import job_ports_update
from .services.stop import job_stop
from .services.submit import job_submit

router = Router(tags=["jobs"])
NULLABLE_BOOLEAN = {"anyOf": [{"type": "boolean"}, {"type": "null"}]}


class JobIn(FeasibilityIn):
    """A new job; names of projects, models, specs, datasets... Omitted fields: form defaults."""

    project: str | None = None
    name: str | None = None
    command: str | None = Field(
        None, description=f"≤ {MAX_COMMAND_CHARS:,} characters, run line by line from /"
    )
    template: str | None = Field(
        None, description="A workload template's name; fills what is omitted (command, …)"
    )
    augmentation_command: str | None = Field(
        None, description="Runs before the command in one replica; billed, outside max run time"
    )
    datasets: list[str] | None = Field(None, description="Default: all of the project's")
    pretrained_models: list[str] | None = Field(None, description="Default: all of the project's")
    code_version: str | None = Field(None, description="Default: the newest; null: none")
    image: str | None = Field(None, description="Default: the project's default; null: none")
    ports: list[int] | None = Field(
        None, description=f"≤ {MAX_PORTS_PER_JOB}, each {MIN_PORT}–{MAX_PORT}, unique"
    )
    max_runtime_minutes: int | None = Field(None, description="null: no limit")
    max_retries: int | None = Field(None, description=f"0–{MAX_RETRIES}, default 0")
    priority: str | None = Field(None, description="normal (default) or high (staff only)")
    # Checked by the submit service alone, as the form and job files are: a bad value is
    # refused naming the field in the reader's language (the schema's would be English).
    keep_checkpoint: Annotated[Any, WithJsonSchema(NULLABLE_BOOLEAN)] = Field(
        None,
        description="true: once the job has ended its checkpoint (TRAINYARD_CHECKPOINT) stays "
        "and downloads beside its outputs, for as long as they stay. Default false: removed",
    )


class JobPatchIn(Schema):
    ports: list[int] | None = None


class JobOut(Schema):
    id: int
    name: str
    project: str
    owner: str
    state: str
    # In the request's language (Accept-Language; English without one); scripts match
    # on the code, which names a message of core/reasons.py, and its parameters.
    state_reason: str
    state_reason_code: str
    state_reason_params: dict
    queue_position: int | None
    estimated_start: datetime | None
    fair_share_factor: float | None = Field(
        description="A waiting job's owner's fair-share factor (1: no recent use; within a "
        "priority, higher goes first); null once it no longer waits"
    )
    task_mode: str
    replicas: int
    config_mode: str
    spec: str | None
    resources: ReplicaResourcesOut
    command: str
    template: str | None
    augmentation_command: str
    datasets: list[str]
    pretrained_models: list[str]
    code_version: str | None
    image: str | None
    image_digest: str = Field(
        description="The image's manifest digest the job runs in; empty: the node's own "
        "system, or an image still being added (the job waits for it)"
    )
    ports: list[int]
    max_runtime_minutes: int | None
    max_retries: int
    priority: str
    preemptible: bool
    keep_checkpoint: bool
    borrowed: bool = Field(
        description="Set by the scheduler: a preemptible job running beyond its owner's quota "
        "on idle cards, which a job within its quota may preempt"
    )
    attempt: int = Field(description="The job's current attempt (1 from its first start; 0 before)")
    submitted_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    stop_requested_at: datetime | None

    @staticmethod
    def resolve_state_reason(job: Job) -> str:
        return job.reason_text

    @staticmethod
    def resolve_project(job: Job) -> str:
        return job.project.name

    @staticmethod
    def resolve_owner(job: Job) -> str:
        return job.owner.get_username()

    @staticmethod
    def resolve_spec(job: Job) -> str | None:
        return job.spec.name if job.spec_id else None

    @staticmethod
    def resolve_resources(job: Job) -> dict:
        return replica_resources_out(job, kind=job.resource_kind)

    @staticmethod
    def resolve_template(job: Job) -> str | None:
        return job.template.name if job.template_id else None

    @staticmethod
    def resolve_datasets(job: Job) -> list[str]:
        return [row.dataset.name for row in job.jobdataset_set.all()]

    @staticmethod
    def resolve_pretrained_models(job: Job) -> list[str]:
        return [row.pretrained_model.name for row in job.jobpretrainedmodel_set.all()]

    @staticmethod
    def resolve_code_version(job: Job) -> str | None:
        return job.code_version.name if job.code_version_id else None

    @staticmethod
    def resolve_image(job: Job) -> str | None:
        return job.image.name if job.image_id else None

    @staticmethod
    def resolve_ports(job: Job) -> list[int]:
        return [p.port for p in job.ports.all()]

    @staticmethod
    def resolve_priority(job: Job) -> str:
        return PRIORITY_NAMES.get(job.priority, str(job.priority))

    @staticmethod
    def resolve_fair_share_factor(job: Job) -> float | None:
        # A list page has it already (``_JobPage``); one job alone asks for it.
        factor = job.fair_share if hasattr(job, "fair_share") else job_fair_share(job)
        return None if factor is None else round(factor, 3)


class JobEventOut(Schema):
    created_at: datetime
    from_state: str
    to_state: str
    reason: str  # in the request's language, as ``state_reason``
    reason_code: str
    reason_params: dict

    @staticmethod
    def resolve_reason(event: JobEvent) -> str:
        return event.text


class ConnectOut(Schema):
    """Where others reach an open port while the job is placed: ``host``:``host_port``."""

    port: int
    replica: int
    node: str
    host: str
    host_port: int
    url: str | None = Field(
        None,
        description="Replica 0's port in a browser, through the authenticated proxy "
        "(only people who may see the job get in); null for other replicas.",
    )


class JobDetailOut(JobOut):
    events: list[JobEventOut]
    # Empty until the job is placed, and again once it has released its host ports.
    connect: list[ConnectOut]

    @staticmethod
    def resolve_connect(job: Job) -> list[dict]:
        return job_connect_points(job)

    @staticmethod
    def resolve_events(job: Job) -> list:
        return list(job.events.all())


def _jobs(request: HttpRequest) -> QuerySet[Job]:
    """The jobs one may open and stop by id: staff, every job."""
    return _with_related(jobs_user_may_operate(user=request.user))


def _with_related(jobs: QuerySet[Job]) -> QuerySet[Job]:
    return jobs.select_related(
        "project", "owner", "gpu_model", "spec", "code_version", "image", "template"
    ).prefetch_related(
        "ports", "jobdataset_set__dataset", "jobpretrainedmodel_set__pretrained_model"
    )


def _job(request: HttpRequest, job_id: int) -> Job:
    return get_object_or_404(_jobs(request), pk=job_id)


@router.post("/jobs", response={201: JobOut})
def submit_job(request: HttpRequest, payload: JobIn):
    """Submit a job; 422 ``{"errors": {field: [message]}}`` names every problem."""
    # The job as written, with its related rows (``job_submit``): nothing to read back.
    return Status(201, job_submit(user=request.user, data=payload.model_dump(exclude_unset=True)))


class _JobPage(Pagination):
    """The page's jobs with their owners' fair-share factors, in one go (not per job)."""

    def paginate_queryset(self, queryset, pagination, request, **params):
        page = super().paginate_queryset(queryset, pagination, request, **params)
        page["items"] = with_fair_shares(list(page["items"]))
        return page


@router.get("/jobs", response=list[JobOut])
@paginate(_JobPage)
def list_jobs(
    request: HttpRequest,
    state: str = "",
    project: str = "",
    every: bool = Query(False, alias="all"),
):
    """Your jobs and your projects' jobs, newest first; ``all=1``: every job (staff only)."""
    if every and not request.user.is_staff:
        raise HttpError(403, _("all: only staff may list every job."))
    scope = jobs_user_may_operate if every else jobs_for_user
    jobs = _with_related(scope(user=request.user))
    if state:
        if state not in Job.State.values:
            choices = ", ".join(Job.State.values)
            raise ValidationError(
                {"state": [_("State must be one of %(choices)s") % {"choices": choices}]}
            )
        jobs = jobs.filter(state=state)
    if project:
        jobs = jobs.filter(project__name=project)
    return jobs


@router.get("/jobs/{job_id}", response=JobDetailOut)
def get_job(request: HttpRequest, job_id: int):
    return _job(request, job_id)


@router.post("/jobs/{job_id}/stop", response=JobOut)
def stop_job(request: HttpRequest, job_id: int):
    """Stop a job: a waiting one at once, a running one after its grace period."""
    job = _job(request, job_id)
    if not job.is_finished:
        job_stop(job=job, actor=request.user)
    return _job(request, job_id)


@router.patch("/jobs/{job_id}", response=JobOut)
def update_job(request: HttpRequest, job_id: int, payload: JobPatchIn):
    """Change a job's open ports (the only field that may change after submit)."""
    job = _job(request, job_id)
    if payload.ports is not None:
        job_ports_update(job=job, ports=payload.ports, actor=request.user)
    return _job(request, job_id)


@router.get("/jobs/{job_id}/export", response=dict)
def export_job(request: HttpRequest, job_id: int):
    """The ``POST /api/v1/jobs`` body that submits this job again, every field explicit."""
    return job_submit_body(_job(request, job_id))
