"""The platform's own finished runs, and how they correct the prior.

Each run is compared with what the prior says for its own data size, GPU model
and card count: ``log(actual / prior)``. A template's runs then move its
estimate by one factor, learned in finishing order:

    estimate_0 = 0                       (the seed, worth PRIOR_RUNS runs)
    estimate_k = estimate_{k-1} + clip(run_k - estimate_{k-1}, ±CLIP) / (k + PRIOR_RUNS)

Without the clip this is the plain mean of the runs and the prior's
PRIOR_RUNS pseudo-runs, so history weighs k / (k + PRIOR_RUNS): more as it
grows. The clip is why one wild run cannot swing it: the newest run, however
far off, moves the estimate by at most ``CLIP / (k + PRIOR_RUNS)``, i.e. by at
most ``SINGLE_RUN_BOUND`` (8.4 %) even as the very first run. A wild run deep in
the history changes today's estimate by at most twice that
(``OLD_RUN_BOUND``, 17.6 %): each later step has slope 0 … 1 in the estimate so
it never widens the gap, and the shifted step counts add at most
``CLIP · Σ 1/(m(m+1)) ≤ CLIP / (k + PRIOR_RUNS)``.

A template without seed points has no prior scale; its factor is a robust mean
of its runs (clipped around their median) and exists from the first run on.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from hashlib import md5

from django.db.models import F, Q, Sum
from django.db.models.functions import MD5
from django.db.models.lookups import In

from jobs.models import Job, JobDataset, ReplicaAttempt

from .prior import PRIOR_LOG_SPREAD

PRIOR_RUNS = 4
CLIP = math.log(1.5)
SINGLE_RUN_BOUND = math.exp(CLIP / (1 + PRIOR_RUNS)) - 1
OLD_RUN_BOUND = math.exp(2 * CLIP / (1 + PRIOR_RUNS)) - 1
# Below this many runs an unseeded template's range is doubled.
FEW_RUNS = 3
HISTORY_LIMIT = 100
COMMAND_HISTORY_LIMIT = 20
MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Run:
    """One finished job: where it ran and how long each phase took."""

    job_id: int
    finished_at: datetime
    gpu_model_id: int | None
    cards: int
    samples: int
    training_seconds: float
    augmentation_seconds: float | None
    # Set for runs read by command (``commands_runs``): whose, and which command.
    key: tuple[int, str] | None = None


@dataclass(frozen=True)
class Correction:
    log_factor: float
    log_spread: float
    runs: int


def _clip(value: float) -> float:
    return max(-CLIP, min(CLIP, value))


def _spread(residuals: Sequence[float], centre: float) -> float:
    return MAD_TO_SIGMA * statistics.median(abs(r - centre) for r in residuals)


def seeded_correction(log_ratios: Sequence[float]) -> Correction:
    """The factor for a template with a prior; ``log_ratios`` oldest first."""
    estimate = 0.0
    for k, log_ratio in enumerate(log_ratios, start=1):
        estimate += _clip(log_ratio - estimate) / (k + PRIOR_RUNS)
    n = len(log_ratios)
    spread = PRIOR_LOG_SPREAD
    if n >= FEW_RUNS:
        history_spread = _spread(log_ratios, estimate)
        spread = math.sqrt(
            (PRIOR_RUNS * PRIOR_LOG_SPREAD**2 + n * history_spread**2) / (PRIOR_RUNS + n)
        )
    return Correction(estimate, spread, n)


def unseeded_correction(log_ratios: Sequence[float]) -> Correction | None:
    """The factor for a template without seed points; None before its first run."""
    if not log_ratios:
        return None
    centre = statistics.median(log_ratios)
    estimate = centre + statistics.fmean(_clip(r - centre) for r in log_ratios)
    if len(log_ratios) < FEW_RUNS:
        return Correction(estimate, 2 * PRIOR_LOG_SPREAD, len(log_ratios))
    spread = max(PRIOR_LOG_SPREAD, _spread(log_ratios, estimate))
    return Correction(estimate, spread, len(log_ratios))


def dataset_samples_by_job(job_ids: Sequence[int]) -> dict[int, int]:
    """Samples in each job's datasets together (one query); absent: no datasets."""
    return dict(
        JobDataset.objects.filter(job_id__in=job_ids)
        .values("job_id")
        .annotate(total=Sum("dataset__size_samples"))
        .values_list("job_id", "total")
    )


def _runs(jobs_filter: Q, limit: int, *, keyed: bool = False) -> list[Run]:
    """The latest ``limit`` succeeded jobs matching the filter, oldest first (3 queries)."""
    fields = ["pk", "finished_at", "replicas", "gpu_count", "augmentation_command"]
    jobs = list(
        Job.objects.filter(jobs_filter, state=Job.State.SUCCEEDED, finished_at__isnull=False)
        .order_by("-finished_at", "-pk")
        .values(*fields, *(["owner_id", "command"] if keyed else []))[:limit]
    )
    if not jobs:
        return []
    ids = [job["pk"] for job in jobs]
    samples = dataset_samples_by_job(ids)
    attempts = ReplicaAttempt.objects.filter(
        replica__job_id__in=ids,
        number=F("replica__job__attempt"),
        state=ReplicaAttempt.State.SUCCEEDED,
        started_at__isnull=False,
        ended_at__isnull=False,
    ).values_list(
        "replica__job_id", "node__gpu_model_id", "started_at", "training_started_at", "ended_at"
    )
    phases: dict[int, tuple[int | None, float, float]] = {}
    for job_id, gpu_model_id, started, training_started, ended in attempts:
        training_started = training_started or started
        training = (ended - training_started).total_seconds()
        augmentation = (training_started - started).total_seconds()
        _model, old_training, old_augmentation = phases.get(job_id, (None, 0.0, 0.0))
        phases[job_id] = (
            gpu_model_id,
            max(old_training, training),
            max(old_augmentation, augmentation),
        )
    runs = []
    for job in reversed(jobs):
        if job["pk"] not in phases:
            continue
        gpu_model_id, training, augmentation = phases[job["pk"]]
        runs.append(
            Run(
                job_id=job["pk"],
                finished_at=job["finished_at"],
                gpu_model_id=gpu_model_id,
                cards=job["replicas"] * job["gpu_count"],
                samples=samples.get(job["pk"]) or 0,
                training_seconds=training,
                augmentation_seconds=augmentation if job["augmentation_command"] else None,
                key=(job["owner_id"], job["command"]) if keyed else None,
            )
        )
    return runs


def template_runs(*, template_id: int, limit: int = HISTORY_LIMIT) -> list[Run]:
    return _runs(Q(template_id=template_id), limit)


def commands_runs(
    *, keys: set[tuple[int, str]], limit: int = COMMAND_HISTORY_LIMIT
) -> dict[tuple[int, str], list[Run]]:
    """Earlier runs without a template, per (owner, command), the latest ``limit`` of each
    (3 queries for any number of keys)."""
    if not keys:
        return {}
    owners, commands = {owner for owner, _c in keys}, {command for _o, command in keys}
    query = Q(template__isnull=True, owner_id__in=owners, command__in=commands)
    # As the index on (owner, md5(command)) holds it (migration 0019): a command may be
    # longer than a btree entry.
    query &= Q(In(MD5("command"), [md5(c.encode()).hexdigest() for c in commands]))
    by_key: dict[tuple[int, str], list[Run]] = {key: [] for key in keys}
    for run in _runs(query, limit * len(keys), keyed=True):
        if run.key in by_key:
            by_key[run.key].append(run)
    return {key: runs[-limit:] for key, runs in by_key.items()}
