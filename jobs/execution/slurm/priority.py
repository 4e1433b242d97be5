"""Trainyard's queue order, told to Slurm: each job's ``sbatch --nice``.

Inside Slurm's queue, a job Trainyard admitted later would otherwise wait behind every
job admitted before it (Slurm's own order: its priority, else submission). The nice
value carries Trainyard's order instead: a job of normal priority waits behind high
ones, and among one priority a user with less recent use (a higher fair-share factor,
``billing/fair_share.py``) goes ahead of one with more. It is never negative (any
Slurm user may lower their own jobs' priority; only an operator may raise it), and
small beside a multifactor site's priorities: it orders Trainyard's jobs among
themselves, not against anyone else's.
"""

from __future__ import annotations

from django.utils import timezone

from billing.fair_share import fair_share_factors
from jobs.models import Job

# Steps of nice between a user with no recent use (factor 1) and one with all of it (0).
FAIR_SHARE_SPAN = 1000
# Added for a job below high priority: it waits behind any high one.
BELOW_HIGH = FAIR_SHARE_SPAN + 1


def slurm_nices(jobs: list[Job]) -> dict[int, int]:
    """Job id → its nice (5 queries, for all of them together)."""
    factors = fair_share_factors(user_ids={job.owner_id for job in jobs}, now=timezone.now())
    return {job.pk: nice(job.priority, factors.get(job.owner_id, 1.0)) for job in jobs}


def nice(priority: int, fair_share: float) -> int:
    """The nice of a job of ``priority`` whose owner's fair-share factor is ``fair_share``:
    lower goes first."""
    below_high = BELOW_HIGH if priority < Job.Priority.HIGH else 0
    return below_high + round((1.0 - fair_share) * FAIR_SHARE_SPAN)
