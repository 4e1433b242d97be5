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
from resources.models import SiteSettings
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
from .models import Job
from .models.job import MAX_PORT, MAX_PORTS_PER_JOB, MIN_PORT
from .selectors import (
    first_replica_latest_attempt,
    job_connect_points,
    job_datasets,
    job_events_in_order,
    job_fair_share,
    job_pretrained_models,
    job_ran_unisolated,
    jobs_for_page,
)
from .services.ports import job_ports_update
from .services.stop import job_stop
from .usage_metrics import usage_panel


def visible_job(request: HttpRequest, pk: int) -> Job:
    """The job if the user may see it; 404 otherwise, so ids of others' jobs leak nothing."""
    return get_object_or_404(jobs_for_page(user=request.user), pk=pk)


@require_GET
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = visible_job(request, pk)
    return render(request, "jobs/job_detail.html", detail_context(job))


def detail_context(job: Job, **extra) -> dict:
    ports = [p.port for p in job.ports.all()]
    return {
        "job": job,
        "resources": describe_request(ResourceRequest.from_job(job)),
        "datasets": job_datasets(job),
        "pretrained_models": job_pretrained_models(job),
        "ports": ports,
        # Host ports are held while the job is placed; each open port is published there.
        "published": job_connect_points(job),
        "ports_text": extra.pop("ports_text", ", ".join(map(str, ports))),
        "port_limits": {"max": MAX_PORTS_PER_JOB, "low": str(MIN_PORT), "high": str(MAX_PORT)},
        "environment": page_environment(job),
        "events": job_events(job),
        "times": job_times(job=job),
        "unisolated": job_ran_unisolated(job),
        "usage": usage_panel(job),
        **state_card_context(job),
        **extra,
    }


def state_card_context(job: Job) -> dict:
    """What the state card shows beside the job's own fields (the page and its polls)."""
    return {
        "fair_share": job_fair_share(job),
        # A borrowing job may be preempted: its owner reads how long it has to checkpoint.
        "preempt_grace_seconds": SiteSettings.load().preempt_grace_seconds
        if job.borrowed
        else None,
    }


def page_environment(job: Job) -> dict[str, str]:
    """The variables as the page shows them: with what replica 0 was given once it started."""
    return shown_environment(job_environment(environment_input_for_job(job), _placement(job)))


def _placement(job: Job) -> ReplicaPlacement | None:
    """What replica 0's latest attempt was given at start (ports, deadline), if it started."""
    attempt = first_replica_latest_attempt(job)
    if attempt is None or attempt.node_id is None:
        return None  # not started, or inside Slurm, which has yet to give it anything
    deadline = int(attempt.deadline.timestamp()) if attempt.deadline else None
    return replace(replica_placement(attempt), deadline_epoch=deadline)


def job_events(job: Job) -> list:
    labels = dict(Job.State.choices)
    events = job_events_in_order(job)
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
