"""How long a submitted job will likely run: what the scheduler's start forecast assumes.

The estimator's answer where it has one (the template's prior and history, or
the owner's earlier runs of the same command). Otherwise the max run time
scaled by the share of their max run time that recent jobs actually used: the
owner's own jobs once there are ``FEW_RUNS`` of them, else everyone's. People
set max run times generously (the measured trace replay in
``bench/start_estimates.py`` assumes 1 to 4 times the real run), so a forecast
that let every job run to its limit would say "later" for every start.
None without an estimate or such history: the forecast then counts on the
max run time (and, without one, takes the job's end as unknown).
"""

from __future__ import annotations

import math
import statistics

from jobs.models import Job

from .estimate import Estimator

# Finished jobs looked at, newest first; an owner's share counts from FEW_RUNS on.
RECENT_RUNS = 200
OWN_RUNS = 50
FEW_RUNS = 5
# Jobs that ended on their own or at their limit (a stopped job says nothing of its length).
ENDED_STATES = (Job.State.SUCCEEDED, Job.State.FAILED, Job.State.TIMED_OUT)


def expected_seconds(job: Job, estimator: Estimator | None = None) -> int | None:
    """The seconds ``job`` (saved, with its datasets) will likely run; None: unknown."""
    estimate = (estimator or Estimator()).job(job=job)
    if estimate is not None:
        return max(1, math.ceil(estimate.seconds))
    if job.max_runtime_minutes is None:
        return None
    share = used_share(owner_id=job.owner_id)
    return None if share is None else max(1, math.ceil(job.max_runtime_minutes * 60 * share))


def used_share(*, owner_id: int) -> float | None:
    """The mean share of its max run time a recent job ran (one or two queries)."""
    ended = Job.objects.filter(
        state__in=ENDED_STATES,
        max_runtime_minutes__isnull=False,
        started_at__isnull=False,
        finished_at__isnull=False,
    ).order_by("-pk")
    for runs, limit in ((ended.filter(owner_id=owner_id), OWN_RUNS), (ended, RECENT_RUNS)):
        shares = [
            min(1.0, (finished - started).total_seconds() / (max_runtime * 60))
            for started, finished, max_runtime in runs.values_list(
                "started_at", "finished_at", "max_runtime_minutes"
            )[:limit]
        ]
        if len(shares) >= FEW_RUNS:
            return statistics.fmean(shares)
    return None
