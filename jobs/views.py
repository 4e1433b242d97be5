from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .models import Job
from .selectors import jobs_for_user

JOBS_PER_PAGE = 25


def job_list(request: HttpRequest) -> HttpResponse:
    jobs = jobs_for_user(user=request.user).select_related("project", "gpu_model", "owner")
    state = request.GET.get("state", "")
    if state in Job.State.values:
        jobs = jobs.filter(state=state)
    page = Paginator(jobs, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "jobs/job_list.html",
        {"page": page, "states": Job.State.choices, "current_state": state},
    )
