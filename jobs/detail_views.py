"""A job's own page, and what its owner (or a project member) may do there."""

from __future__ import annotations

from dataclasses import replace

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from resources.describe import describe_request
from resources.request import ResourceRequest

from .environment import (
    ReplicaPlacement,
    environment_input_for_job,
    job_environment,
    shown_environment,
)
from .estimates.job_times import job_times
from .execution.replica.prepare import replica_placement
from .forms import parse_ports
from .models import Job, ReplicaAttempt
from .selectors import job_connect_points, jobs_user_may_operate
from .services.ports import job_ports_update
from .services.stop import job_stop


def visible_job(request: HttpRequest, pk: int) -> Job:
    """The job if the user may see it; 404 otherwise, so ids of others' jobs leak nothing."""
    jobs = jobs_user_may_operate(user=request.user).select_related(
        "project", "owner", "gpu_model", "spec", "code_version", "image", "template"
    )
    return get_object_or_404(jobs, pk=pk)


@require_GET
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = visible_job(request, pk)
    return render(request, "jobs/job_detail.html", detail_context(job))


def detail_context(job: Job, **extra) -> dict:
    ports = [p.port for p in job.ports.all()]
    return {
        "job": job,
        "resources": describe_request(ResourceRequest.from_job(job)),
        "datasets": [jd.dataset for jd in job.jobdataset_set.select_related("dataset")],
        "pretrained_models": [
            jp.pretrained_model
            for jp in job.jobpretrainedmodel_set.select_related("pretrained_model")
        ],
        "ports": ports,
        # Host ports are held while the job is placed; each open port is published there.
        "published": job_connect_points(job),
        "ports_text": extra.pop("ports_text", ", ".join(map(str, ports))),
        "environment": page_environment(job),
        "events": job_events(job),
        "times": job_times(job=job),
        # A node whose agent runs plain processes (TRAINYARD_UNSAFE_PLAIN_PROCESSES) said so.
        "unisolated": job.replica_set.filter(node__sandboxed=False).exists(),
        **extra,
    }


def page_environment(job: Job) -> dict[str, str]:
    """The variables as the page shows them: with what replica 0 was given once it started."""
    return shown_environment(job_environment(environment_input_for_job(job), _placement(job)))


def _placement(job: Job) -> ReplicaPlacement | None:
    """What replica 0's latest attempt was given at start (ports, deadline), if it started."""
    attempt = (
        ReplicaAttempt.objects.filter(replica__job=job, replica__index=0)
        .select_related("replica__job", "node")
        .order_by("-number")
        .first()
    )
    if attempt is None:
        return None
    deadline = int(attempt.deadline.timestamp()) if attempt.deadline else None
    return replace(replica_placement(attempt), deadline_epoch=deadline)


def job_events(job: Job) -> list:
    labels = dict(Job.State.choices)
    events = list(job.events.order_by("created_at", "pk"))
    for event in events:
        event.from_label = labels.get(event.from_state, event.from_state)
        event.to_label = labels.get(event.to_state, event.to_state)
    return events


@require_http_methods(["GET", "POST"])
def job_stop_view(request: HttpRequest, pk: int) -> HttpResponse:
    """GET asks (a page of its own: no script needed under the strict CSP); POST stops."""
    job = visible_job(request, pk)
    if job.is_finished:
        messages.info(request, _("Job #%(id)s had already finished.") % {"id": job.pk})
    elif request.method == "GET":
        return render(request, "jobs/job_stop_confirm.html", {"job": job})
    else:
        job_stop(job=job, actor=request.user)
        messages.success(request, _("Stop requested for job #%(id)s.") % {"id": job.pk})
    return redirect("jobs:detail", pk=job.pk)


@require_POST
def job_ports_view(request: HttpRequest, pk: int) -> HttpResponse:
    job = visible_job(request, pk)
    text = request.POST.get("ports", "")
    try:
        job_ports_update(job=job, ports=parse_ports(text), actor=request.user)
    except ValidationError as error:
        context = detail_context(job, ports_text=text, port_errors=error.message_dict["ports"])
        return render(request, "jobs/job_detail.html", context, status=422)
    messages.success(request, _("Ports of job #%(id)s updated.") % {"id": job.pk})
    return redirect("jobs:detail", pk=job.pk)
