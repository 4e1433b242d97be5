"""The prior from seed 000's tables: exact at measured points, honest in between."""

import math
import statistics
from dataclasses import replace

import pytest

from jobs.estimates.estimate import Basis, Estimator
from jobs.estimates.prior import PRIOR_LOG_SPREAD, PriorPoint, build_prior, leave_one_out
from jobs.estimates.seed_tables import MEASURED, TEMPLATES, seed_points
from jobs.models import EstimatePoint
from tests.estimates_support import SPEEDS, seed_models_and_templates
from tests.factories import GpuModelFactory

TASK_TYPES = {t.name: t.task_type for t in TEMPLATES}


def table_points() -> list[PriorPoint]:
    return [
        PriorPoint(p.template, p.gpu_model, p.samples, p.nodes, p.seconds, p.kind == "measured")
        for p in seed_points()
    ]


def loo_relative_errors() -> list[float]:
    predictions = leave_one_out(table_points(), task_types=TASK_TYPES, speeds=SPEEDS)
    return [abs(predicted - p.seconds) / p.seconds for p, predicted in predictions]


def test_seed_tables_hold_every_measured_time_of_seed_000():
    measured = [p for p in seed_points() if p.kind == "measured"]
    assert len(measured) == 4 * 3 * 3
    assert {p.template for p in measured} == set(MEASURED)
    resnet_p4_6 = next(
        p for p in measured if (p.template, p.gpu_model, p.nodes) == ("ResNet50", "P4", 6)
    )
    assert resnet_p4_6.seconds == 302
    assert all("000_acc14283f7dab290" in p.source for p in seed_points())


def test_leave_one_out_median_and_worst_error_stay_where_measured():
    errors = loo_relative_errors()
    assert len(errors) == 36
    # Measured when written: median 9.5 %, worst 81.5 % (MobileNet on 6 × P4).
    assert statistics.median(errors) < 0.12
    assert max(errors) < 0.9


def test_prior_range_covers_most_leave_one_out_errors():
    predictions = leave_one_out(table_points(), task_types=TASK_TYPES, speeds=SPEEDS)
    inside = [abs(math.log(pred / p.seconds)) <= PRIOR_LOG_SPREAD for p, pred in predictions]
    assert sum(inside) / len(inside) >= 0.7


def test_measured_anchors_beat_the_curve_alone_in_leave_one_out():
    points = table_points()
    curve_only_errors = []
    for index, point in enumerate(points):
        if not point.measured:
            continue
        others = [replace(p, measured=False) for p in points[:index] + points[index + 1 :]]
        prior = build_prior(others, task_types=TASK_TYPES, speeds=SPEEDS)
        predicted = prior.seconds(point.template, point.gpu_model, point.samples, point.cards)
        curve_only_errors.append(abs(predicted - point.seconds) / point.seconds)
    assert statistics.median(loo_relative_errors()) < statistics.median(curve_only_errors)


def test_time_grows_with_data_and_falls_with_gpu_speed():
    prior = build_prior(table_points(), task_types=TASK_TYPES, speeds=SPEEDS)
    sizes = [prior.seconds("ResNet50", "V100", n, 2) for n in (500, 5000, 12_500, 50_000)]
    assert sizes == sorted(sizes)
    assert sizes[-1] > 3 * sizes[1]
    for nodes in (3, 4, 5):
        v100 = prior.seconds("Faster R-CNN ResNet50-FPN", "V100", 400, nodes)
        p4 = prior.seconds("Faster R-CNN ResNet50-FPN", "P4", 400, nodes)
        assert v100 < p4


def test_small_data_barely_gains_from_more_nodes_large_data_does():
    prior = build_prior(table_points(), task_types=TASK_TYPES, speeds=SPEEDS)
    small = prior.seconds("ResNet50", "V100", 500, 1) / prior.seconds("ResNet50", "V100", 500, 4)
    large = prior.seconds("ResNet50", "V100", 50_000, 1) / prior.seconds(
        "ResNet50", "V100", 50_000, 4
    )
    assert small < 1.3
    assert large > 2.5


@pytest.mark.django_db
def test_with_no_history_estimate_is_the_measured_time_at_every_measured_point():
    models, templates = seed_models_and_templates()
    estimator = Estimator()
    for template, (samples, by_gpu) in MEASURED.items():
        for gpu_name, times in by_gpu.items():
            for nodes, seconds in zip((1, 2, 6), times, strict=True):
                estimate = estimator.template(
                    template=templates[template],
                    dataset_samples=samples,
                    gpu_model=models[gpu_name],
                    cards=nodes,
                )
                assert estimate.training_seconds == pytest.approx(seconds, rel=1e-9)
                assert estimate.low_seconds < seconds < estimate.high_seconds
                assert (estimate.basis, estimate.runs) == (Basis.SEED, 0)


@pytest.mark.django_db
def test_aggregated_model_spans_its_members_and_unmeasured_member_borrows_by_speed():
    models, templates = seed_models_and_templates()
    v100_32g = GpuModelFactory(name="V100-32G", card_memory_gib=32, relative_speed=2.3)
    star = GpuModelFactory(name="*V100-any", relative_speed=2.3)
    star.members.set([models["V100"], v100_32g, models["P40"]])
    estimator = Estimator()
    resnet = templates["ResNet50"]
    big = estimator.template(template=resnet, dataset_samples=6000, gpu_model=v100_32g, cards=2)
    assert big.training_seconds == pytest.approx(326)
    either = estimator.template(template=resnet, dataset_samples=6000, gpu_model=star, cards=2)
    assert either.training_seconds == pytest.approx((326 + 326 + 562) / 3)
    assert either.low_seconds < 326 and either.high_seconds > 562


@pytest.mark.django_db
def test_nasnet_has_no_estimate_before_history_and_none_on_p4(django_assert_max_num_queries):
    models, templates = seed_models_and_templates()
    nasnet = templates["NASNet"]
    with django_assert_max_num_queries(8):
        estimator = Estimator()
        assert (
            estimator.template(
                template=nasnet, dataset_samples=6000, gpu_model=models["V100"], cards=1
            )
            is None
        )
    assert (
        estimator.template(template=nasnet, dataset_samples=6000, gpu_model=models["P4"], cards=1)
        is None
    )


@pytest.mark.django_db
def test_unknown_dataset_size_gives_no_estimate():
    models, templates = seed_models_and_templates()
    estimate = Estimator().template(
        template=templates["ResNet50"], dataset_samples=0, gpu_model=models["V100"], cards=1
    )
    assert estimate is None


@pytest.mark.django_db
def test_prior_is_refitted_when_an_admin_edits_a_point():
    models, templates = seed_models_and_templates()
    resnet = templates["ResNet50"]
    before = Estimator().template(
        template=resnet, dataset_samples=6000, gpu_model=models["V100"], cards=1
    )
    EstimatePoint.objects.filter(
        template=resnet, gpu_model=models["V100"], nodes=1, dataset_samples=6000
    ).update(seconds=800)
    after = Estimator().template(
        template=resnet, dataset_samples=6000, gpu_model=models["V100"], cards=1
    )
    assert before.training_seconds == pytest.approx(400)
    assert after.training_seconds == pytest.approx(800)
