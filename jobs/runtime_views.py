"""The job page's runtime panel (htmx-polled while the job runs), log, output and kept
checkpoint downloads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.http import FileResponse, Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from .detail_views import job_events, page_environment, state_card_context, visible_job
from .estimates.formatting import duration_text
from .estimates.job_times import job_times
from .execution.files import (
    open_output_file,
    replica_checkpoint_dir,
    replica_output_dir,
    storage_name,
)
from .execution.runtime import (
    DEFAULT_TAIL_LINES,
    PAGE_LINE_CHOICES,
    attempt_log,
    attempt_log_file,
    attempt_log_search,
    job_attempts,
    job_outputs,
    pick_attempt,
)
from .models import Job
from .usage_metrics import usage_panel

# The longest text the log search takes (what is longer is cut).
MAX_SEARCH_CHARS = 200


def runtime_context(job: Job, query: QueryDict) -> dict:
    attempts = job_attempts(job)
    replica, number = _int(query.get("replica")), _int(query.get("attempt"))
    shown = pick_attempt(attempts, replica=replica or 0, number=number)
    lines = _int(query.get("lines"))
    lines = lines if lines in PAGE_LINE_CHOICES else DEFAULT_TAIL_LINES
    needle = query.get("log_q", "").strip()[:MAX_SEARCH_CHARS]
    # The state the page shows: a poll that finds another one refreshes the page's times too.
    params: dict = {"state": job.state}
    if shown:
        params.update(replica=shown.replica.index, attempt=shown.number)
    # Polls ask for the log as the reader chose it: as many lines, the same search.
    if lines != DEFAULT_TAIL_LINES:
        params["lines"] = lines
    if needle:
        params["log_q"] = needle
    search = attempt_log_search(shown, needle, lines=lines) if shown and needle else None
    if search is not None:
        log_text = "\n".join(search.lines)
    else:
        log_text = attempt_log(shown, lines=lines) if shown else ""
    return {
        "job": job,
        "attempts": attempts,
        "shown": shown,
        "log_text": log_text,
        "tail_lines": lines,
        "line_choices": PAGE_LINE_CHOICES,
        "log_q": needle,
        "search": search,
        "outputs": job_outputs(job, attempts),
        # Polling stops with the job: a finished job's panel carries no trigger.
        "live": not job.is_finished,
        "refresh_url": f"{reverse('jobs:runtime', args=[job.pk])}?{urlencode(params)}",
        "progress": _run_time_progress(job, shown),
    }


def _run_time_progress(job: Job, shown) -> dict | None:
    """Elapsed training time against the max run time, for a running job that has one."""
    if job.state != Job.State.RUNNING or not job.max_runtime_minutes or shown is None:
        return None
    # The max-run-time clock starts with the training phase (DESIGN: after augmentation).
    started = shown.training_started_at or shown.started_at
    if started is None:
        return None
    limit = job.max_runtime_minutes * 60
    elapsed = min(max((timezone.now() - started).total_seconds(), 0), limit)
    return {
        "elapsed": round(elapsed),
        "limit": limit,
        "elapsed_text": duration_text(elapsed),
        "limit_text": duration_text(limit),
    }


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


@require_GET
def job_runtime_panel(request: HttpRequest, pk: int) -> HttpResponse:
    job = visible_job(request, pk)
    context = {**runtime_context(job, request.GET), "oob": True, **state_card_context(job)}
    if request.GET.get("state", job.state) != job.state:
        context["times"] = job_times(job=job)
        context["events"] = job_events(job)
        context["environment"] = page_environment(job)
    return render(request, "jobs/_runtime_panel.html", context)


@require_GET
def job_usage_panel(request: HttpRequest, pk: int) -> HttpResponse:
    """The usage card, which refreshes itself while the job is active."""
    job = visible_job(request, pk)
    return render(request, "jobs/_usage.html", {"job": job, "usage": usage_panel(job)})


@require_GET
def job_log_download(request: HttpRequest, pk: int, attempt_id: int) -> FileResponse:
    job = visible_job(request, pk)
    attempt = next((a for a in job_attempts(job) if a.pk == attempt_id), None)
    if attempt is None:
        raise Http404
    try:
        handle = attempt_log_file(attempt).open("rb")
    except FileNotFoundError as missing:
        raise Http404 from missing
    name = f"job-{job.pk}-replica-{attempt.replica.index}-attempt-{attempt.number}.log"
    return FileResponse(
        handle, as_attachment=True, filename=name, content_type="text/plain; charset=utf-8"
    )


@require_GET
def job_output_download(
    request: HttpRequest, pk: int, replica: int, storage: str, path: str
) -> FileResponse:
    return _replica_file(
        visible_job(request, pk), replica, storage, path, folder=replica_output_dir
    )


@require_GET
def job_checkpoint_download(
    request: HttpRequest, pk: int, replica: int, storage: str, path: str
) -> FileResponse:
    """A file of a replica's kept checkpoint; a job that does not keep it has none to give."""
    job = visible_job(request, pk)
    if not job.keep_checkpoint:
        raise Http404
    return _replica_file(job, replica, storage, path, folder=replica_checkpoint_dir)


def _replica_file(
    job: Job, replica: int, storage: str, path: str, *, folder: Callable[[str, int, int], Path]
) -> FileResponse:
    """The regular file ``path`` in the replica's ``folder`` where it ran (``storage``: a
    local node's name, or Slurm's shared folder), opened without following a link
    (``open_output_file``); 404 for anything else."""
    ran_there = any(
        a.replica.index == replica and storage_name(a.node) == storage for a in job_attempts(job)
    )
    handle = open_output_file(folder(storage, job.pk, replica), path) if ran_there else None
    if handle is None:
        raise Http404
    return FileResponse(handle, as_attachment=True, filename=path.rsplit("/", 1)[-1])
