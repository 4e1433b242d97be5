from datetime import datetime

from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from ninja import Field, Router, Schema

from .execution.runtime import DEFAULT_TAIL_LINES, job_log_tail
from .selectors import jobs_user_may_operate, projects_for_user
from .usage_metrics import MAX_MINUTES, job_usage

router = Router(tags=["jobs"])


class ProjectOut(Schema):
    name: str
    description: str
    datasets: list[str]
    pretrained_models: list[str]
    code_versions: list[str]
    images: list[str]
    default_image: str | None


@router.get("/projects", response=list[ProjectOut])
def list_projects(request: HttpRequest):
    projects = projects_for_user(user=request.user).prefetch_related(
        "datasets", "pretrained_models", "code_versions", "images"
    )
    return [
        ProjectOut(
            name=p.name,
            description=p.description,
            datasets=[d.name for d in p.datasets.all()],
            pretrained_models=[m.name for m in p.pretrained_models.all()],
            code_versions=[c.name for c in p.code_versions.all()],
            images=[i.name for i in p.images.all()],
            default_image=next((i.name for i in p.images.all() if i.is_default), None),
        )
        for p in projects
    ]


class LogOut(Schema):
    job: int
    replica: int
    attempt: int
    node: str
    state: str
    size_bytes: int
    lines: list[str]
    next_offset: int | None = Field(None, description="With offset: where the next read starts")


@router.get("/jobs/{job_id}/logs", response=LogOut)
def job_logs(
    request: HttpRequest,
    job_id: int,
    replica: int = 0,
    attempt: int | None = None,
    tail: int = DEFAULT_TAIL_LINES,
    offset: int | None = None,
):
    """A replica's log (its latest attempt, or ``attempt``): the last ``tail`` lines, or
    with ``offset`` the whole lines from that byte on; follow with ``next_offset``."""
    return job_log_tail(
        user=request.user,
        job_id=job_id,
        replica=replica,
        number=attempt,
        tail=tail,
        offset=offset,
    )


class CardPointOut(Schema):
    index: int = Field(description="The card's index on its node (NVML's)")
    util: int = Field(description="GPU utilisation, %")
    memory_mib: int
    power_w: float
    temp_c: int


class UsagePointOut(Schema):
    at: datetime
    cpu_percent: float | None = Field(description="% of one core since the previous point")
    memory_mib: int
    read_mib_s: float | None
    write_mib_s: float | None
    gpus: list[CardPointOut]


class AttemptUsageOut(Schema):
    replica: int
    attempt: int
    node: str
    points: list[UsagePointOut]


@router.get("/jobs/{job_id}/metrics", response=list[AttemptUsageOut])
def job_metrics(request: HttpRequest, job_id: int, minutes: int = 60):
    """What the job's replicas used in the last ``minutes`` (at most a day), as their
    nodes' agents sampled it: CPU, memory, I/O, and each card's utilisation, memory,
    power and temperature (NVML)."""
    if not 1 <= minutes <= MAX_MINUTES:
        message = _("minutes must be between 1 and %(max)s.") % {"max": MAX_MINUTES}
        raise ValidationError({"minutes": [message]})
    job = get_object_or_404(jobs_user_may_operate(user=request.user), pk=job_id)
    return job_usage(job, minutes=minutes)
