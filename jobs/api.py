from django.http import HttpRequest
from ninja import Field, Router, Schema

from .execution.runtime import DEFAULT_TAIL_LINES, job_log_tail
from .selectors import projects_for_user

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
