"""Fit the time curve to the seed points: pure Python, a few milliseconds.

The curve (Amdahl's law with data size, on a GPU of a given speed)::

    seconds = gpu_factor[g] × (fixed[t] + per_sample[t] × samples / cards ** alpha)

``fixed`` is the part that neither more data nor more cards change (start-up,
evaluation, saving); the rest grows with the data and is split over the cards.
It explains both shapes in seed 000: small data sets barely speed up with more
nodes, large ones nearly halve per doubling. ``gpu_factor`` is 1 for the
reference model (the one with most points); ``alpha`` is shared.

Least squares on log seconds (relative errors, as the seed's times span
100 s – 66 min), Levenberg–Marquardt with a weak pull towards a neutral start so
that a template measured at one size and one node count still gets a curve.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

START_ALPHA = 0.9
START_FIXED_SHARE = 0.3
# How hard each parameter is pulled towards its start (in log units): weak
# enough to leave well-measured parameters alone.
RIDGE = 1e-3
ALPHA_RIDGE = 1e-2
MAX_ITERATIONS = 200


@dataclass(frozen=True)
class FitPoint:
    template: Hashable
    gpu_model: Hashable
    samples: float
    cards: float
    seconds: float
    weight: float = 1.0


@dataclass(frozen=True)
class Curve:
    fixed: dict[Hashable, float]
    per_sample: dict[Hashable, float]
    gpu_factor: dict[Hashable, float]
    alpha: float

    def seconds(self, template: Hashable, gpu_model: Hashable, samples: float, cards: float):
        parallel = self.per_sample[template] * samples / cards**self.alpha
        return self.gpu_factor[gpu_model] * (self.fixed[template] + parallel)


class _Layout:
    """Where each template's and GPU model's parameters sit in the vector."""

    def __init__(self, points: Sequence[FitPoint]) -> None:
        self.templates = sorted({p.template for p in points}, key=str)
        counts: dict[Hashable, int] = {}
        for p in points:
            counts[p.gpu_model] = counts.get(p.gpu_model, 0) + 1
        models = sorted(counts, key=lambda g: (-counts[g], str(g)))
        self.reference, self.other_models = models[0], models[1:]
        t = len(self.templates)
        self.fixed = {name: i for i, name in enumerate(self.templates)}
        self.per_sample = {name: t + i for i, name in enumerate(self.templates)}
        self.gpu = {name: 2 * t + i for i, name in enumerate(self.other_models)}
        self.alpha = 2 * t + len(self.other_models)
        self.size = self.alpha + 1

    def start(self, points: Sequence[FitPoint]) -> list[float]:
        theta = [0.0] * self.size
        for template in self.templates:
            own = [p for p in points if p.template == template]
            typical_seconds = _median([p.seconds for p in own])
            typical_samples = _median([p.samples for p in own])
            theta[self.fixed[template]] = math.log(START_FIXED_SHARE * typical_seconds)
            theta[self.per_sample[template]] = math.log(
                (1 - START_FIXED_SHARE) * typical_seconds / typical_samples
            )
        theta[self.alpha] = START_ALPHA
        return theta

    def curve(self, theta: Sequence[float]) -> Curve:
        return Curve(
            fixed={t: math.exp(theta[i]) for t, i in self.fixed.items()},
            per_sample={t: math.exp(theta[i]) for t, i in self.per_sample.items()},
            gpu_factor={self.reference: 1.0} | {g: math.exp(theta[i]) for g, i in self.gpu.items()},
            alpha=theta[self.alpha],
        )


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def _residuals_and_jacobian(layout: _Layout, theta, points, start):
    """Weighted log residuals with their derivatives, then the ridge rows."""
    rows: list[tuple[float, dict[int, float]]] = []
    for p in points:
        fixed = math.exp(theta[layout.fixed[p.template]])
        parallel = math.exp(theta[layout.per_sample[p.template]]) * p.samples
        parallel /= p.cards ** theta[layout.alpha]
        total = fixed + parallel
        log_factor = theta[layout.gpu[p.gpu_model]] if p.gpu_model in layout.gpu else 0.0
        root = math.sqrt(p.weight)
        residual = root * (log_factor + math.log(total) - math.log(p.seconds))
        derivative = {
            layout.fixed[p.template]: root * fixed / total,
            layout.per_sample[p.template]: root * parallel / total,
            layout.alpha: -root * parallel * math.log(p.cards) / total,
        }
        if p.gpu_model in layout.gpu:
            derivative[layout.gpu[p.gpu_model]] = root
        rows.append((residual, derivative))
    for i in range(layout.size):
        ridge = math.sqrt(ALPHA_RIDGE if i == layout.alpha else RIDGE)
        rows.append((ridge * (theta[i] - start[i]), {i: ridge}))
    return rows


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (the systems are ~20 × 20)."""
    n = len(vector)
    a = [row[:] + [vector[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            factor = a[r][col] / a[col][col]
            if factor:
                for c in range(col, n + 1):
                    a[r][c] -= factor * a[col][c]
    solution = [0.0] * n
    for r in range(n - 1, -1, -1):
        tail = sum(a[r][c] * solution[c] for c in range(r + 1, n))
        solution[r] = (a[r][n] - tail) / a[r][r]
    return solution


def _normal_equations(rows, size: int) -> tuple[list[list[float]], list[float], float]:
    jtj = [[0.0] * size for _ in range(size)]
    jtr = [0.0] * size
    cost = 0.0
    for residual, derivative in rows:
        cost += residual * residual
        for i, di in derivative.items():
            jtr[i] += di * residual
            for j, dj in derivative.items():
                jtj[i][j] += di * dj
    return jtj, jtr, cost


def fit_curve(points: Sequence[FitPoint]) -> Curve:
    """The least-squares curve through the points (at least one point)."""
    layout = _Layout(points)
    start = layout.start(points)
    theta = start[:]
    damping = 1e-3
    jtj, jtr, cost = _normal_equations(
        _residuals_and_jacobian(layout, theta, points, start), layout.size
    )
    for _iteration in range(MAX_ITERATIONS):
        damped = [
            [v + (damping * (v or 1.0) if i == j else 0.0) for j, v in enumerate(row)]
            for i, row in enumerate(jtj)
        ]
        step = _solve(damped, [-v for v in jtr])
        trial = [t + s for t, s in zip(theta, step, strict=True)]
        rows = _residuals_and_jacobian(layout, trial, points, start)
        trial_jtj, trial_jtr, trial_cost = _normal_equations(rows, layout.size)
        if trial_cost < cost:
            converged = cost - trial_cost < 1e-12 * max(cost, 1.0)
            theta, jtj, jtr, cost = trial, trial_jtj, trial_jtr, trial_cost
            damping = max(damping / 3, 1e-9)
            if converged:
                break
        else:
            damping *= 4
            if damping > 1e8:
                break
    return layout.curve(theta)
