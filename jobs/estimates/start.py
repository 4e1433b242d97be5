"""Likely start of a waiting job: the scheduler's own replay, with likely ends.

The scheduler's ``estimated_start`` replays the queue as if every running job
used its whole max run time: an upper bound (for the head of the queue). Here
the same replay (``estimate_starts``, same placement) runs with the ends the
estimator expects instead: running jobs end at their start plus their
expected duration (now, if they already overran it), and the jobs ahead in
the queue hold their nodes for their expected duration. Jobs the estimator
knows nothing of keep their max run time; without one, their end is unknown
and so is every start that waits for them, as in the scheduler.

A job waiting for quota has no likely start here: when it is admitted hangs on
its owner's other jobs, which its page already names.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from django.utils import timezone

from jobs.models import Job
from jobs.scheduler.backfill import Queued, estimate_starts
from jobs.scheduler.passes import ESTIMATE_DEPTH, load_releases
from jobs.scheduler.placement import Shape
from jobs.scheduler.queue import load_waiting, waiting_rows
from jobs.scheduler.state import Cluster
from resources.catalog import ModelCatalog
from resources.models import Allocation

from .estimate import Estimate, Estimator

SECONDS_PER_MINUTE = 60


def likely_start(*, job: Job, now: datetime | None = None) -> datetime | None:
    """When the job will probably start; None when it is not waiting for resources,
    or when it waits on something whose end is unknown."""
    if job.state != Job.State.RESOURCE_WAIT:
        return None
    now = now or timezone.now()
    catalog = ModelCatalog.load()
    cluster = Cluster.load(catalog)
    waiting = load_waiting(waiting_rows(), catalog)
    target = next((w for w in waiting if w.pk == job.pk), None)
    if target is None:
        return None
    ahead = [w for w in waiting if w.queue == target.queue and w.state == job.state]
    ahead = ahead[: ahead.index(target) + 1][-ESTIMATE_DEPTH:]
    estimator = Estimator()
    minutes = _likely_minutes(estimator, [w.pk for w in ahead])
    queue = [
        Queued(w.pk, Shape.of(w.request, cluster.models_of(w.requested_model)), minutes[w.pk])
        for w in ahead
    ]
    models = cluster.models_of(target.requested_model)
    ends = _likely_ends(estimator, models, now)
    releases = load_releases(cluster, now, ends_by_job=ends)
    return estimate_starts(cluster=cluster, queue=queue, releases=releases, now=now).get(job.pk)


def _likely_minutes(estimator: Estimator, job_ids: list[int]) -> dict[int, int | None]:
    """How long each queued job will likely hold its nodes; else its max run time."""
    jobs = list(Job.objects.filter(pk__in=job_ids).select_related("template", "gpu_model"))
    estimates = estimator.jobs(jobs=jobs)
    # ``Queued`` holds whole minutes; rounding up keeps the replay from starting early.
    return {
        j.pk: _minutes(estimates[j.pk]) if estimates[j.pk] else j.max_runtime_minutes for j in jobs
    }


def _minutes(estimate: Estimate) -> int:
    return max(1, math.ceil(estimate.seconds / SECONDS_PER_MINUTE))


def _likely_ends(estimator: Estimator, models, now: datetime) -> dict[int, datetime]:
    """Likely ends of the active jobs holding nodes of ``models`` (None: any node)."""
    allocations = Allocation.objects.filter(replica__job__state__in=Job.ACTIVE_STATES)
    if models is not None:
        allocations = allocations.filter(node__gpu_model__name__in=models)
    job_ids = set(allocations.values_list("replica__job_id", flat=True))
    jobs = list(Job.objects.filter(pk__in=job_ids).select_related("template", "gpu_model"))
    ends = {}
    estimates = estimator.jobs(jobs=jobs)
    for job in jobs:
        estimate = estimates[job.pk]
        if estimate is None:
            continue
        started = job.started_at or now
        ends[job.pk] = max(now, started + timedelta(seconds=estimate.seconds))
    return ends
