"""The Queue page: every waiting job the reader may see, per model, in the scheduler's order.

Its forms post a move (the job's owner) or a priority (staff) and come back to the
page at that job; what the service refuses is said there (a 403 for what the reader
may never do).
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from .models import Job
from .selectors import jobs_user_may_operate
from .services.queue import job_move, job_set_priority, queue_for


@require_GET
def queue_page(request: HttpRequest) -> HttpResponse:
    context = {
        "queues": queue_for(user=request.user),
        "priorities": Job.Priority.choices,
        "staff": request.user.is_staff,
    }
    return render(request, "jobs/queue.html", context)


@require_POST
def queue_move(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(jobs_user_may_operate(user=request.user), pk=pk)
    direction = request.POST.get("direction", "")
    return _then_back(
        request, pk, lambda: job_move(user=request.user, job=job, direction=direction)
    )


@require_POST
def queue_priority(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(jobs_user_may_operate(user=request.user), pk=pk)
    raw = request.POST.get("priority", "")
    priority = int(raw) if raw.lstrip("-").isdigit() and len(raw) < 6 else raw
    return _then_back(
        request, pk, lambda: job_set_priority(user=request.user, job=job, priority=priority)
    )


def _then_back(request: HttpRequest, pk: int, change: Callable[[], object]) -> HttpResponse:
    try:
        change()
    except ValidationError as refused:
        for message in refused.messages:
            messages.error(request, message)
    return redirect(f"{reverse('jobs:queue')}#queued-{pk}")
