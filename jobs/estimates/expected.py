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
    """The share of their max run times recent jobs ran, all together (one or two queries).

    Time run over time allowed, not the mean of each job's share: a queue waits for
    the sum of the jobs ahead, and when max run times are a random 1–4 × the run, the
    mean share (0.46) overstates that sum by 15 % where the sums' share (0.40) does not.
    """
    ended = Job.objects.filter(
        state__in=ENDED_STATES,
        max_runtime_minutes__isnull=False,
        started_at__isnull=False,
        finished_at__isnull=False,
    ).order_by("-pk")
    for runs, limit in ((ended.filter(owner_id=owner_id), OWN_RUNS), (ended, RECENT_RUNS)):
        rows = runs.values_list("started_at", "finished_at", "max_runtime_minutes")[:limit]
        allowed = [max_runtime * 60 for _started, _finished, max_runtime in rows]
        ran = [
            min(limit_seconds, (finished - started).total_seconds())
            for (started, finished, _max), limit_seconds in zip(rows, allowed, strict=True)
        ]
        if len(rows) >= FEW_RUNS:
            return sum(ran) / sum(allowed)
    return None
