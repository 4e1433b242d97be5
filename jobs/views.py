from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .models import Job
from .selectors import jobs_for_user, projects_for_user

JOBS_PER_PAGE = 25


def job_list(request: HttpRequest) -> HttpResponse:
    jobs = jobs_for_user(user=request.user).select_related("project", "gpu_model", "owner")
    state = request.GET.get("state", "")
    if state in Job.State.values:
        jobs = jobs.filter(state=state)
    projects = list(projects_for_user(user=request.user).order_by("name"))
    project = request.GET.get("project", "")
    if project in {p.name for p in projects}:
        jobs = jobs.filter(project__name=project)
    page = Paginator(jobs, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    filters = urlencode({k: v for k, v in {"state": state, "project": project}.items() if v})
    return render(
        request,
        "jobs/job_list.html",
        {
            "page": page,
            "states": Job.State.choices,
            "current_state": state,
            "projects": projects,
            "current_project": project,
            "filter_query": filters,
        },
    )
