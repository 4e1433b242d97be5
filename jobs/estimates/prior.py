"""The prior: what the seed points alone say a run will take.

Two layers. The fitted curve (``fitting.py``) gives the shape across data size,
GPU speed and card count. Measured points then correct it locally: the log
ratio measured / curve of each measured point of the same template and GPU
model, weighted by inverse squared distance in (log samples, log cards), with a
pull back to the curve of weight ``1 / ANCHOR_REACH²``. At a measured point the
weight is infinite, so with no history the estimate there is the measured
time; between the 1-, 2- and 6-node rows it interpolates what the table says
about that GPU model that the shared curve cannot (e.g. P40 barely gaining
from 6 nodes on image classification).

A GPU model with no points borrows the fitted model nearest in relative speed,
scaled by the speed ratio (so a V100-32G, as fast as a V100, gets V100's
times). A template with no points (NASNet) gets the mean shape of its task
type; that shape has no trustworthy scale, so it is only used together with
history (see ``history.py``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from .fitting import Curve, FitPoint, fit_curve

# Rough ranges shape the curve at half the weight of a measured run.
ROUGH_WEIGHT = 0.5
# In log units: a measured point stops mattering ~2.7× away in samples or cards.
ANCHOR_REACH = 1.0
# Spread of the prior in log units: 77 % of the seed's leave-one-out errors are
# inside it (tests/test_estimates_prior.py keeps this true).
PRIOR_LOG_SPREAD = 0.2


@dataclass(frozen=True)
class PriorPoint:
    template: Hashable
    gpu_model: Hashable
    samples: int
    cards: int
    seconds: float
    measured: bool = True


@dataclass(frozen=True)
class Prior:
    curve: Curve | None
    anchors: dict[tuple[Hashable, Hashable], list[tuple[int, int, float]]]
    task_types: dict[Hashable, str]
    speeds: dict[Hashable, float]
    seeded_templates: frozenset = field(default_factory=frozenset)

    def is_seeded(self, template: Hashable) -> bool:
        return template in self.seeded_templates

    def seconds(self, template: Hashable, gpu_model: Hashable, samples: int, cards: int):
        """The prior time in seconds, or None when nothing is known of that GPU model."""
        if self.curve is None:
            return None
        fitted, speed_ratio = self._fitted_model(gpu_model)
        if fitted is None:
            return None
        shape = self._shape(template)
        if shape is None:
            return None
        fixed, per_sample = shape
        parallel = per_sample * samples / cards**self.curve.alpha
        seconds = self.curve.gpu_factor[fitted] * (fixed + parallel) * speed_ratio
        return seconds * math.exp(self._anchor_correction(template, fitted, samples, cards))

    def _fitted_model(self, gpu_model: Hashable) -> tuple[Hashable | None, float]:
        if gpu_model in self.curve.gpu_factor:
            return gpu_model, 1.0
        speed = self.speeds.get(gpu_model)
        known = [g for g in self.curve.gpu_factor if g in self.speeds]
        if speed is None or not known:
            return None, 1.0
        nearest = min(known, key=lambda g: (abs(math.log(self.speeds[g] / speed)), str(g)))
        return nearest, self.speeds[nearest] / speed

    def _shape(self, template: Hashable) -> tuple[float, float] | None:
        if template in self.curve.fixed:
            return self.curve.fixed[template], self.curve.per_sample[template]
        task_type = self.task_types.get(template)
        same = [t for t in self.curve.fixed if self.task_types.get(t) == task_type]
        kin = same or list(self.curve.fixed)
        if not kin:
            return None
        return (
            _geometric_mean(self.curve.fixed[t] for t in kin),
            _geometric_mean(self.curve.per_sample[t] for t in kin),
        )

    def _anchor_correction(self, template, gpu_model, samples: int, cards: int) -> float:
        total = 1 / ANCHOR_REACH**2
        weighted = 0.0
        for anchor_samples, anchor_cards, log_ratio in self.anchors.get((template, gpu_model), []):
            distance2 = (
                math.log(samples / anchor_samples) ** 2 + math.log(cards / anchor_cards) ** 2
            )
            if distance2 == 0:
                return log_ratio
            weighted += log_ratio / distance2
            total += 1 / distance2
        return weighted / total


def _geometric_mean(values: Iterable[float]) -> float:
    logs = [math.log(v) for v in values]
    return math.exp(sum(logs) / len(logs))


def build_prior(
    points: Iterable[PriorPoint],
    *,
    task_types: dict[Hashable, str],
    speeds: dict[Hashable, float],
) -> Prior:
    """Fit the curve to every point, and keep measured points as anchors."""
    points = [p for p in points if p.samples > 0 and p.cards > 0 and p.seconds > 0]
    if not points:
        return Prior(None, {}, task_types, speeds)
    fit_points = [
        FitPoint(
            p.template,
            p.gpu_model,
            p.samples,
            p.cards,
            p.seconds,
            1.0 if p.measured else ROUGH_WEIGHT,
        )
        for p in points
    ]
    curve = fit_curve(fit_points)
    anchors: dict[tuple[Hashable, Hashable], list[tuple[int, int, float]]] = {}
    for p in points:
        if p.measured:
            log_ratio = math.log(
                p.seconds / curve.seconds(p.template, p.gpu_model, p.samples, p.cards)
            )
            anchors.setdefault((p.template, p.gpu_model), []).append(
                (p.samples, p.cards, log_ratio)
            )
    return Prior(curve, anchors, task_types, speeds, frozenset(curve.fixed))


def leave_one_out(
    points: list[PriorPoint], *, task_types: dict[Hashable, str], speeds: dict[Hashable, float]
) -> list[tuple[PriorPoint, float]]:
    """Predict each measured point from all the other points: (point, predicted seconds)."""
    predictions = []
    for index, point in enumerate(points):
        if not point.measured:
            continue
        others = points[:index] + points[index + 1 :]
        prior = build_prior(others, task_types=task_types, speeds=speeds)
        predicted = prior.seconds(point.template, point.gpu_model, point.samples, point.cards)
        predictions.append((point, predicted))
    return predictions
