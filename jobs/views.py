from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .models import Job, Project
from .selectors import jobs_user_may_operate, projects_for_user

JOBS_PER_PAGE = 25
FILTERS = ("state", "project", "user", "node")


def job_list(request: HttpRequest) -> HttpResponse:
    """The user's and their projects' jobs; every job for staff, who may also filter by
    user and node."""
    staff = request.user.is_staff
    jobs = jobs_user_may_operate(user=request.user).select_related("project", "gpu_model", "owner")
    chosen = {name: request.GET.get(name, "").strip() for name in FILTERS}
    if chosen["state"] in Job.State.values:
        jobs = jobs.filter(state=chosen["state"])
    else:
        chosen["state"] = ""
    projects = Project.objects.all() if staff else projects_for_user(user=request.user)
    projects = list(projects.order_by("name"))
    if chosen["project"] in {p.name for p in projects}:
        jobs = jobs.filter(project__name=chosen["project"])
    else:
        chosen["project"] = ""
    if staff and chosen["user"]:
        jobs = jobs.filter(owner__username=chosen["user"])
    if staff and chosen["node"]:
        jobs = jobs.filter(replica_set__node__name=chosen["node"]).distinct()
    page = Paginator(jobs, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "jobs/job_list.html",
        {
            "page": page,
            "states": Job.State.choices,
            "current_state": chosen["state"],
            "projects": projects,
            "current_project": chosen["project"],
            "current_user": chosen["user"] if staff else "",
            "current_node": chosen["node"] if staff else "",
            "staff": staff,
            "filter_query": urlencode({k: v for k, v in chosen.items() if v}),
        },
    )
