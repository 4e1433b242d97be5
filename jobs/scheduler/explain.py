"""What a pass tells the jobs it leaves waiting: state, reason, position, likely start.

A resource wait without a reason of its own (the pass found no node) is explained by
``ResourceReasons`` (which nodes lack what); positions count within (state, queue).
Likely starts replay the pass forward (``forecast.py``), each step a pass that neither
preempts nor borrows: the costliest part of a pass, so it runs once the pass has
committed, outside its lock (``run.py``), from what the pass decided in memory.
"""

from __future__ import annotations

from datetime import datetime

from jobs.models import Job

from .forecast import forecast_starts
from .lookahead import held_starts
from .reasons import ResourceReasons
from .writes import Waiting


def waiting_changes(scheduling) -> list[Waiting]:
    """The changes to write for ``scheduling``'s (the pass's) jobs that did not start."""
    started = {start.job.pk for start in scheduling.starts}
    reasons = ResourceReasons(scheduling.cluster)
    positions: dict[tuple[str, str], int] = {}
    changes = []
    for job in scheduling.jobs:
        if job.pk in started:
            continue
        if job.pk not in scheduling.outcomes:  # a pass that stopped at its most starts
            break  # left as they are: the next pass is theirs
        state, reason = scheduling.outcomes[job.pk]
        if state == Job.State.RESOURCE_WAIT and not reason:
            reason = reasons.reason(scheduling.shapes[job.pk], job.requested_model)
        position = positions[state, job.queue] = positions.get((state, job.queue), 0) + 1
        changes.append(Waiting(job, state, reason, position))
    return changes


def waiting_estimates(scheduling, *, step) -> dict[int, datetime | None]:
    """Each job ``scheduling`` (the pass) left waiting → when it likely starts, to the
    second (None: unknown); ``step``: what a pass at a later moment would start."""
    started = {start.job.pk for start in scheduling.starts}
    # Behind the look-ahead, a job waits for Slurm to start the jobs inside its queue,
    # which hold nothing in Trainyard's view yet: a replay of the pass would start it at
    # once. Its own replay starts those at Slurm's estimates (``lookahead_forecast.py``).
    behind = held_starts(scheduling)
    not_replayed_here = started | behind.keys()
    estimates = (
        forecast_starts(
            now=scheduling.now,
            cluster=scheduling.cluster,
            quotas=scheduling.quotas,
            jobs=[job for job in scheduling.jobs if job.pk not in not_replayed_here],
            releases=scheduling.releases(),
            step=step,
        )
        | behind
    )
    left = [job.pk for job in scheduling.jobs if job.pk not in started]
    return {pk: _to_second(estimates.get(pk)) for pk in left}


def _to_second(moment: datetime | None) -> datetime | None:
    return None if moment is None else moment.replace(microsecond=0)
