from django.http import HttpRequest
from ninja import Router, Schema

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
