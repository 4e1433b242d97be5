"""Expected durations with a range: for a template choice, and for a job.

An ``Estimator`` loads the prior once and each template's history once, so a
form panel that compares several card counts costs the same few queries.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from jobs.models import EstimatePoint, Job, WorkloadTemplate
from resources.models import GpuModel, ResourceKind

from .history import (
    Correction,
    Run,
    commands_runs,
    dataset_samples_by_job,
    seeded_correction,
    template_runs,
    unseeded_correction,
)
from .prior import PRIOR_LOG_SPREAD, Prior, PriorPoint, build_prior


class Basis:
    SEED = "seed"
    SEED_AND_HISTORY = "seed_and_history"
    HISTORY = "history"
    OWN_RUNS = "own_runs"


@dataclass(frozen=True)
class Estimate:
    """Expected seconds of a whole run (augmentation search + training) and a range."""

    training_seconds: float
    low_seconds: float
    high_seconds: float
    augmentation_seconds: float | None
    runs: int
    basis: str
    # True when the job has an augmentation search that history cannot time yet.
    augmentation_unknown: bool = False

    @property
    def seconds(self) -> float:
        return self.training_seconds + (self.augmentation_seconds or 0.0)


_prior_cache: dict[str, tuple[tuple, Prior]] = {}


def load_prior() -> Prior:
    """The prior from the EstimatePoint rows; refitted only when a point or speed changes."""
    rows = tuple(
        EstimatePoint.objects.order_by("pk").values_list(
            "template_id", "gpu_model_id", "dataset_samples", "nodes", "seconds", "kind"
        )
    )
    speeds = tuple(GpuModel.objects.order_by("pk").values_list("pk", "relative_speed"))
    task_types = tuple(WorkloadTemplate.objects.order_by("pk").values_list("pk", "task_type"))
    key = (rows, speeds, task_types)
    cached = _prior_cache.get("prior")
    if cached and cached[0] == key:
        return cached[1]
    points = [
        PriorPoint(template, gpu, samples, nodes, seconds, kind == EstimatePoint.Kind.MEASURED)
        for template, gpu, samples, nodes, seconds, kind in rows
    ]
    prior = build_prior(points, task_types=dict(task_types), speeds=dict(speeds))
    _prior_cache["prior"] = (key, prior)
    return prior


class Estimator:
    def __init__(self) -> None:
        self.prior = load_prior()
        self._runs: dict[int, list[Run]] = {}
        self._corrections: dict[int, Correction | None] = {}
        self._forbidden_ids: dict[int, set[int]] = {}
        self._command_runs: dict[tuple[int, str], list[Run]] = {}

    def template(
        self,
        *,
        template: WorkloadTemplate,
        dataset_samples: int,
        gpu_model: GpuModel,
        cards: int,
        with_augmentation: bool = False,
    ) -> Estimate | None:
        """None when the template may not use the model, the data size is unknown,
        or nothing (seed or history) is known of this template yet."""
        if dataset_samples <= 0 or cards <= 0:
            return None
        members = _members(gpu_model)
        if not members or any(m.pk in self._forbidden(template) for m in members):
            return None
        correction = self._correction(template)
        if correction is None:
            return None
        expected = []
        for member in members:
            prior_seconds = self.prior.seconds(template.pk, member.pk, dataset_samples, cards)
            if prior_seconds is None:
                return None
            expected.append(prior_seconds * math.exp(correction.log_factor))
        # A model standing for several may land on any of them: mean, widest range.
        spread = math.exp(correction.log_spread)
        runs = self._template_runs(template.pk)
        augmentation = _median_augmentation(runs) if with_augmentation else None
        return Estimate(
            training_seconds=statistics.fmean(expected),
            low_seconds=min(expected) / spread,
            high_seconds=max(expected) * spread,
            augmentation_seconds=augmentation,
            runs=correction.runs,
            basis=_basis(self.prior.is_seeded(template.pk), correction.runs),
            augmentation_unknown=with_augmentation and augmentation is None,
        )

    def jobs(self, *, jobs: Sequence[Job]) -> dict[int, Estimate | None]:
        """``job`` for many jobs, with their data sizes read at once."""
        samples = dataset_samples_by_job([job.pk for job in jobs])
        self._load_command_runs(
            {(j.owner_id, j.command) for j in jobs if j.template_id is None and j.gpu_model_id}
        )
        return {j.pk: self.job(job=j, dataset_samples=samples.get(j.pk, 0)) for j in jobs}

    def job(self, *, job: Job, dataset_samples: int | None = None) -> Estimate | None:
        """The estimate for a submitted job: its template's, else its own earlier runs'."""
        if job.resource_kind != ResourceKind.GPU or job.gpu_model is None:
            return None
        cards = job.replicas * job.gpu_count
        if job.template_id is not None:
            if dataset_samples is None:
                dataset_samples = dataset_samples_by_job([job.pk]).get(job.pk, 0)
            return self.template(
                template=job.template,
                dataset_samples=dataset_samples,
                gpu_model=job.gpu_model,
                cards=cards,
                with_augmentation=bool(job.augmentation_command),
            )
        return self.own_runs(
            owner_id=job.owner_id, command=job.command, gpu_model=job.gpu_model, cards=cards
        )

    def own_runs(
        self, *, owner_id: int, command: str, gpu_model: GpuModel, cards: int
    ) -> Estimate | None:
        """From the same person's earlier runs of the same command on as many cards;
        a run on another model is scaled by relative speed. None without such runs."""
        speeds = self.prior.speeds
        target_speed = statistics.fmean(speeds.get(m.pk, 1.0) for m in _members(gpu_model))
        self._load_command_runs({(owner_id, command)})
        scaled = [
            run.training_seconds * speeds.get(run.gpu_model_id, target_speed) / target_speed
            for run in self._command_runs[owner_id, command]
            if run.cards == cards
        ]
        if not scaled:
            return None
        spread = math.exp(PRIOR_LOG_SPREAD)
        return Estimate(
            training_seconds=statistics.median(scaled),
            low_seconds=min(scaled) / spread,
            high_seconds=max(scaled) * spread,
            augmentation_seconds=None,
            runs=len(scaled),
            basis=Basis.OWN_RUNS,
        )

    def _load_command_runs(self, keys: set[tuple[int, str]]) -> None:
        self._command_runs.update(commands_runs(keys=keys - set(self._command_runs)))

    def _forbidden(self, template: WorkloadTemplate) -> set[int]:
        if template.pk not in self._forbidden_ids:
            self._forbidden_ids[template.pk] = {g.pk for g in template.forbidden_gpu_models.all()}
        return self._forbidden_ids[template.pk]

    def _template_runs(self, template_id: int) -> list[Run]:
        if template_id not in self._runs:
            self._runs[template_id] = template_runs(template_id=template_id)
        return self._runs[template_id]

    def _correction(self, template: WorkloadTemplate) -> Correction | None:
        if template.pk not in self._corrections:
            log_ratios = []
            for run in self._template_runs(template.pk):
                if min(run.samples, run.cards, run.training_seconds) <= 0:
                    continue
                expected = self.prior.seconds(template.pk, run.gpu_model_id, run.samples, run.cards)
                if expected:
                    log_ratios.append(math.log(run.training_seconds / expected))
            if self.prior.is_seeded(template.pk):
                correction = seeded_correction(log_ratios)
            else:
                correction = unseeded_correction(log_ratios)
            self._corrections[template.pk] = correction
        return self._corrections[template.pk]


def _members(gpu_model: GpuModel) -> list[GpuModel]:
    if gpu_model.is_aggregated:
        return list(gpu_model.members.all())
    return [gpu_model]


def _median_augmentation(runs: list[Run]) -> float | None:
    times = [r.augmentation_seconds for r in runs if r.augmentation_seconds is not None]
    return statistics.median(times) if times else None


def _basis(seeded: bool, runs: int) -> str:
    if not seeded:
        return Basis.HISTORY
    return Basis.SEED_AND_HISTORY if runs else Basis.SEED
