"""Finished runs refine the estimate; one wild run cannot swing it."""

import math
import random
from datetime import timedelta

import pytest

from jobs.estimates.estimate import Basis, Estimator
from jobs.estimates.history import (
    OLD_RUN_BOUND,
    PRIOR_RUNS,
    SINGLE_RUN_BOUND,
    seeded_correction,
    unseeded_correction,
)
from tests.estimates_support import finished_run, seed_models_and_templates


def factor(log_ratios: list[float]) -> float:
    return math.exp(seeded_correction(log_ratios).log_factor)


def test_the_promised_bounds():
    assert SINGLE_RUN_BOUND < 0.085
    assert OLD_RUN_BOUND < 0.18


def test_history_weighs_more_as_it_grows():
    slower = math.log(1.3)
    factors = [factor([slower] * n) for n in (0, 1, 3, 10, 40)]
    assert factors[0] == 1.0
    assert factors == sorted(factors)
    # The plain mean of n runs and PRIOR_RUNS prior runs while inside the clip.
    assert factors[2] == pytest.approx(math.exp(3 * slower / (3 + PRIOR_RUNS)))
    assert factors[-1] > 1.25


@pytest.mark.parametrize("wild", [1e-3, 0.1, 10.0, 1e3])
def test_first_wild_run_moves_the_seed_estimate_at_most_the_bound(wild):
    moved = factor([math.log(wild)])
    assert abs(moved - 1) <= SINGLE_RUN_BOUND + 1e-12
    assert abs(moved - 1) > 0.5 * SINGLE_RUN_BOUND


@pytest.mark.parametrize("wild", [1e-3, 0.2, 5.0, 1e3])
def test_wild_newest_run_after_steady_history_moves_it_at_most_the_bound(wild):
    steady = [math.log(1.2) + d for d in (0.02, -0.03, 0.01, 0.0, -0.01, 0.03, 0.02, -0.02)]
    before, after = factor(steady), factor([*steady, math.log(wild)])
    assert abs(after / before - 1) <= SINGLE_RUN_BOUND
    assert abs(after / before - 1) < 0.05


def test_one_wild_run_anywhere_in_any_history_stays_within_the_bounds():
    rng = random.Random(8)
    for _trial in range(2000):
        history = [
            rng.gauss(rng.choice([0.0, 0.4, -0.7]), rng.choice([0.02, 0.3]))
            for _ in range(rng.randint(0, 25))
        ]
        wild = rng.choice([-20.0, 20.0, rng.gauss(0, 4)])
        at = rng.randint(0, len(history))
        base = factor(history)
        assert (
            abs(math.log(factor([*history, wild]) / base)) <= math.log1p(SINGLE_RUN_BOUND) + 1e-12
        )
        with_old = factor(history[:at] + [wild] + history[at:])
        assert abs(math.log(with_old / base)) <= math.log1p(OLD_RUN_BOUND) + 1e-12


def test_unseeded_template_follows_its_runs_robustly():
    assert unseeded_correction([]) is None
    runs = [math.log(1000), math.log(1100), math.log(900), math.log(1050), math.log(1e6)]
    correction = unseeded_correction(runs)
    assert 950 < math.exp(correction.log_factor) < 1400


@pytest.mark.django_db
def test_finished_runs_update_the_template_estimate():
    models, templates = seed_models_and_templates()
    resnet, v100 = templates["ResNet50"], models["V100"]
    for hours in range(1, 11):
        # Runs on 2 × V100 that took 1.5× the seed's 326 s.
        finished_run(
            template=resnet,
            gpu_model=v100,
            training_seconds=489,
            replicas=2,
            finished_ago=timedelta(hours=hours),
        )
    estimate = Estimator().template(template=resnet, dataset_samples=6000, gpu_model=v100, cards=1)
    assert estimate.basis == Basis.SEED_AND_HISTORY
    assert estimate.runs == 10
    # The seed's 400 s on one V100 moves most of the way towards 1.5× as well.
    assert 1.3 * 400 < estimate.training_seconds < 1.5 * 400


@pytest.mark.django_db
def test_a_wild_finished_run_moves_the_estimate_less_than_the_bound():
    models, templates = seed_models_and_templates()
    resnet, p4 = templates["ResNet50"], models["P4"]
    for hours in range(2, 8):
        finished_run(
            template=resnet,
            gpu_model=p4,
            training_seconds=1400,
            finished_ago=timedelta(hours=hours),
        )

    def expected() -> float:
        return (
            Estimator()
            .template(template=resnet, dataset_samples=6000, gpu_model=p4, cards=1)
            .training_seconds
        )

    before = expected()
    finished_run(template=resnet, gpu_model=p4, training_seconds=40_000)
    assert abs(expected() / before - 1) <= SINGLE_RUN_BOUND


@pytest.mark.django_db
def test_nasnet_estimate_starts_with_its_first_run(django_assert_max_num_queries):
    models, templates = seed_models_and_templates()
    nasnet, v100 = templates["NASNet"], models["V100"]
    finished_run(template=nasnet, gpu_model=v100, training_seconds=1800, samples=6000)
    with django_assert_max_num_queries(8):
        estimator = Estimator()
        same = estimator.template(template=nasnet, dataset_samples=6000, gpu_model=v100, cards=1)
        bigger = estimator.template(template=nasnet, dataset_samples=6000, gpu_model=v100, cards=4)
    assert same.training_seconds == pytest.approx(1800)
    assert same.basis == Basis.HISTORY
    assert bigger.training_seconds < same.training_seconds
    assert same.high_seconds / same.low_seconds > 1.9


@pytest.mark.django_db
def test_augmentation_time_comes_from_the_templates_runs():
    models, templates = seed_models_and_templates()
    ssd, v100 = templates["SSD-MobileNetV1"], models["V100"]
    estimator = Estimator()
    before = estimator.template(
        template=ssd, dataset_samples=400, gpu_model=v100, cards=1, with_augmentation=True
    )
    assert before.augmentation_unknown and before.seconds == before.training_seconds
    for seconds in (100, 120, 5000):
        finished_run(
            template=ssd,
            gpu_model=v100,
            samples=400,
            training_seconds=1140,
            augmentation_seconds=seconds,
        )
    after = Estimator().template(
        template=ssd, dataset_samples=400, gpu_model=v100, cards=1, with_augmentation=True
    )
    assert after.augmentation_seconds == 120
    assert after.seconds == pytest.approx(after.training_seconds + 120)


@pytest.mark.django_db
def test_job_without_template_is_estimated_from_its_owners_same_command(owner, outsider):
    models, _templates = seed_models_and_templates()
    v100, p4 = models["V100"], models["P4"]
    for seconds in (600, 660, 630):
        finished_run(template=None, gpu_model=p4, training_seconds=seconds, owner=owner)
    finished_run(template=None, gpu_model=p4, training_seconds=5, owner=outsider)
    finished_run(
        template=None, gpu_model=p4, training_seconds=5, owner=owner, command="python other.py"
    )
    estimator = Estimator()
    same_model = estimator.own_runs(
        owner_id=owner.pk, command="python train.py", gpu_model=p4, cards=1
    )
    assert same_model.training_seconds == 630
    assert same_model.basis == Basis.OWN_RUNS
    faster = estimator.own_runs(
        owner_id=owner.pk, command="python train.py", gpu_model=v100, cards=1
    )
    assert faster.training_seconds == pytest.approx(630 / 2.3)
    assert (
        estimator.own_runs(owner_id=owner.pk, command="python new.py", gpu_model=p4, cards=1)
        is None
    )
